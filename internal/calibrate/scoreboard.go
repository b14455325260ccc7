package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Score is one experiment of the scoreboard: its replay with its GPU's
// built-in profile, or why there is none.
type Score struct {
	Experiment
	Prediction *Prediction // nil when not simulated
	// Why says why it was not simulated: the table's reason, or the
	// replay's refusal.
	Why string
}

// BLIS is what BLIS publishes of its errors over the campaign's held-out
// experiments (reference/calibration/README.md §D): median absolute error
// of mean E2E, ITL and TTFT, and of E2E per GPU. It publishes no P90.
var BLIS = struct {
	Median   Errors
	E2EByGPU map[string]float64
}{Errors{TTFT: 0.176, E2E: 0.067, TPOT: 0.071}, map[string]float64{"H100": 0.055, "A100-80GB SXM": 0.157, "L40S": 0.133}}

// Goals are issue 46's: the median absolute errors over every experiment
// of tables A and A′.
var Goals = Errors{TTFT: 0.12, E2E: 0.05, TPOT: 0.05}

// Scoreboard replays every experiment that can be, each with the built-in
// profile of the GPU it ran on; an experiment the simulator cannot run,
// or whose replay it refuses, is kept with why.
func Scoreboard(ctx context.Context, exps []Experiment) ([]Score, error) {
	out := make([]Score, len(exps))
	for i, e := range exps {
		out[i] = Score{Experiment: e, Why: e.NotSimulated}
		if e.NotSimulated != "" {
			continue
		}
		hw, err := profiles.LookupHardware(e.Run.Server.Hardware)
		if err != nil {
			return nil, err
		}
		p, err := replay(ctx, &out[i].Run, hw.Calib)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out[i].Why = "the replay failed: " + err.Error()
			continue
		}
		out[i].Prediction = &p
	}
	return out, nil
}

// ScoreSummary is the scoreboard's absolute errors over the simulated
// experiments: their median and P90 per metric, and the median E2E per GPU.
type ScoreSummary struct {
	Simulated, Total int
	Median, P90      Errors
	E2EByGPU         map[string]float64
}

// SummarizeScores is the scoreboard's summary.
func SummarizeScores(s []Score) ScoreSummary {
	sum := ScoreSummary{Total: len(s), E2EByGPU: map[string]float64{}}
	var t, e, o []float64
	byGPU := map[string][]float64{}
	for _, sc := range s {
		if sc.Prediction == nil {
			continue
		}
		sum.Simulated++
		er := sc.Prediction.Errors()
		t, e, o = append(t, math.Abs(er.TTFT)), append(e, math.Abs(er.E2E)), append(o, math.Abs(er.TPOT))
		byGPU[sc.GPU] = append(byGPU[sc.GPU], math.Abs(er.E2E))
	}
	sum.Median = Errors{TTFT: median(t), E2E: median(e), TPOT: median(o)}
	sum.P90 = Errors{TTFT: pctOrNaN(t, 90), E2E: pctOrNaN(e, 90), TPOT: pctOrNaN(o, 90)}
	for g, v := range byGPU {
		sum.E2EByGPU[g] = median(v)
	}
	return sum
}

func pctOrNaN(x []float64, p float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return pct(x, p)
}

// WriteScoreboard writes the scoreboard as Markdown: every experiment,
// measured against predicted, then the median and P90 absolute errors
// beside BLIS's published medians, and the median E2E error per GPU.
func WriteScoreboard(w io.Writer, s []Score) {
	fmt.Fprintln(w, "| table | exp | model | GPU | TP | workload | TTFT ms measured | predicted | error | E2E ms measured | predicted | error | TPOT ms measured | predicted | error |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sc := range s {
		r, m := &sc.Run, sc.Run.Measured
		lead := fmt.Sprintf("| %s | %d | %s | %s | %d | %s |", sc.Table, sc.ID, sc.Model, sc.GPU, r.Server.TensorParallel, workloadText(sc.Workload, r))
		if sc.Prediction == nil {
			fmt.Fprintf(w, "%s %.1f | – | – | %.0f | – | – | %.2f | – | – |\n", lead, m.TTFT, m.E2E, m.TPOT)
			continue
		}
		q, e := sc.Prediction.Predicted, sc.Prediction.Errors()
		fmt.Fprintf(w, "%s %.1f | %.1f | %s | %.0f | %.0f | %s | %.2f | %.2f | %s |\n", lead,
			m.TTFT, q.TTFT, pctText(e.TTFT), m.E2E, q.E2E, pctText(e.E2E), m.TPOT, q.TPOT, pctText(e.TPOT))
	}
	sum := SummarizeScores(s)
	fmt.Fprintf(w, "\n%d of the %d experiments simulated.", sum.Simulated, sum.Total)
	var not []string
	for _, sc := range s {
		if sc.Prediction == nil {
			not = append(not, fmt.Sprintf("- exp %d (%s, %s): not simulated: %s", sc.ID, sc.Model, sc.GPU, sc.Why))
		}
	}
	if len(not) > 0 {
		fmt.Fprintf(w, " Not simulated, and why:\n\n%s\n", strings.Join(not, "\n"))
	} else {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\n| absolute error | TTFT | E2E | TPOT (ITL) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	fmt.Fprintf(w, "| glassbox, median over the %d simulated | %s | %s | %s |\n", sum.Simulated, absText(sum.Median.TTFT), absText(sum.Median.E2E), absText(sum.Median.TPOT))
	fmt.Fprintf(w, "| glassbox, P90 over the %d simulated | %s | %s | %s |\n", sum.Simulated, absText(sum.P90.TTFT), absText(sum.P90.E2E), absText(sum.P90.TPOT))
	fmt.Fprintf(w, "| goal (issue 46), median over all %d | ≤ %s | ≤ %s | ≤ %s |\n", sum.Total, absText(Goals.TTFT), absText(Goals.E2E), absText(Goals.TPOT))
	fmt.Fprintf(w, "| BLIS, published median (36 held-out experiments) | %s | %s | %s |\n", absText(BLIS.Median.TTFT), absText(BLIS.Median.E2E), absText(BLIS.Median.TPOT))
	fmt.Fprintln(w, "\n| median absolute E2E error | glassbox | BLIS (published) |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, g := range []string{"H100", "A100-80GB SXM", "L40S"} {
		v, ok := sum.E2EByGPU[g]
		text := "none simulated"
		if ok {
			text = absText(v)
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", g, text, absText(BLIS.E2EByGPU[g]))
	}
}

// workloadText is a run's workload as the scoreboard names it: the
// campaign's preset and the flags that differ from the campaign's.
func workloadText(preset string, r *Run) string {
	parts := []string{preset}
	d := vllmDefaults(r.Server.Hardware)
	if v := r.Server.MaxNumBatchedTokens; v != d.MaxNumBatchedTokens {
		parts = append(parts, fmt.Sprintf("`--max-num-batched-tokens %d`", v))
	}
	if v := r.Server.GPUMemoryUtilization; v != d.GPUMemoryUtilization {
		parts = append(parts, fmt.Sprintf("`--gpu-memory-utilization %g`", v))
	}
	if r.Server.KVOffloadGiB > 0 {
		parts = append(parts, "CPU KV offload")
	}
	return strings.Join(parts, ", ")
}

// Split is a set of replays for WriteSplit: what they are and whether a
// profile was fitted on them.
type Split struct {
	Name  string
	Preds []Prediction
}

// WriteSplit writes the median absolute errors of each set of replays,
// the fitted beside the held out.
func WriteSplit(w io.Writer, splits []Split) {
	fmt.Fprintln(w, "| runs | how many | median abs TTFT error | E2E | TPOT |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, s := range splits {
		m := Summarize(s.Preds).MedianAbs
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", s.Name, len(s.Preds), absText(m.TTFT), absText(m.E2E), absText(m.TPOT))
	}
}

// Predictions are the scoreboard's replays on the GPU named (all for "").
func Predictions(s []Score, gpu string) []Prediction {
	var out []Prediction
	for _, sc := range s {
		if sc.Prediction != nil && (gpu == "" || sc.GPU == gpu) {
			out = append(out, *sc.Prediction)
		}
	}
	return out
}

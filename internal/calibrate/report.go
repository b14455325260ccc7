package calibrate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Errors are one replay's relative errors (predicted/measured − 1).
type Errors struct{ TTFT, E2E, TPOT float64 }

// Errors of p; a metric not measured is NaN.
func (p *Prediction) Errors() Errors {
	rel := func(pred, meas float64) float64 {
		if meas <= 0 {
			return math.NaN()
		}
		return pred/meas - 1
	}
	m, q := p.Run.Measured, p.Predicted
	return Errors{TTFT: rel(q.TTFT, m.TTFT), E2E: rel(q.E2E, m.E2E), TPOT: rel(q.TPOT, m.TPOT)}
}

// Summary is the mean and median absolute error per metric over replays.
type Summary struct {
	MeanAbs, MedianAbs Errors
}

// Summarize the replays' errors.
func Summarize(preds []Prediction) Summary {
	var t, e, o []float64
	for i := range preds {
		er := preds[i].Errors()
		for _, c := range []struct {
			v   float64
			dst *[]float64
		}{{er.TTFT, &t}, {er.E2E, &e}, {er.TPOT, &o}} {
			if !math.IsNaN(c.v) {
				*c.dst = append(*c.dst, math.Abs(c.v))
			}
		}
	}
	return Summary{MeanAbs: Errors{mean(t), mean(e), mean(o)}, MedianAbs: Errors{median(t), median(e), median(o)}}
}

// median is x's, NaN for none.
func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	x = slices.Clone(x)
	slices.Sort(x)
	if len(x)%2 == 1 {
		return x[len(x)/2]
	}
	return (x[len(x)/2-1] + x[len(x)/2]) / 2
}

// WriteTable writes a Markdown table of the replays: per run the measured
// and predicted mean TTFT, E2E and TPOT, and the error.
func WriteTable(w io.Writer, preds []Prediction) {
	fmt.Fprintln(w, "| run | TTFT ms measured | predicted | error | E2E ms measured | predicted | error | TPOT ms measured | predicted | error | p99 E2E measured | predicted |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i := range preds {
		p := &preds[i]
		m, q, e := p.Run.Measured, p.Predicted, p.Errors()
		p99 := "–" // not measured
		if m.E2EP99 > 0 {
			p99 = fmt.Sprintf("%.0f", m.E2EP99)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %s | %.0f | %.0f | %s | %.2f | %.2f | %s | %s | %.0f |\n", p.Run.Name,
			m.TTFT, q.TTFT, pctText(e.TTFT), m.E2E, q.E2E, pctText(e.E2E), m.TPOT, q.TPOT, pctText(e.TPOT), p99, q.E2EP99)
	}
	s := Summarize(preds)
	fmt.Fprintf(w, "| **mean abs error** | | | %s | | | %s | | | %s | | |\n", absText(s.MeanAbs.TTFT), absText(s.MeanAbs.E2E), absText(s.MeanAbs.TPOT))
	fmt.Fprintf(w, "| **median abs error** | | | %s | | | %s | | | %s | | |\n", absText(s.MedianAbs.TTFT), absText(s.MedianAbs.E2E), absText(s.MedianAbs.TPOT))
}

func pctText(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

func absText(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// WriteSpeed writes how fast each replay ran.
func WriteSpeed(w io.Writer, preds []Prediction) {
	var virt, wall time.Duration
	reqs := 0
	for _, p := range preds {
		virt += p.Virtual
		wall += p.Wall
		reqs += p.Requests
	}
	fmt.Fprintf(w, "%d runs, %d requests, %s of virtual time in %s (%.0f× real time, %.0f requests per second)\n",
		len(preds), reqs, virt.Round(time.Second), wall.Round(time.Millisecond), virt.Seconds()/max(wall.Seconds(), 1e-9), float64(reqs)/max(wall.Seconds(), 1e-9))
}

// WriteTerms writes the fitted terms beside their starting values.
func WriteTerms(w io.Writer, before, after profiles.Calibration) {
	a, b := vector(before), vector(after)
	for k, name := range Terms {
		unit, scale := "", 1.0
		if strings.HasSuffix(name, "overhead") || strings.HasSuffix(name, "latency") || name == "frontend_arrival" || name == "frontend_per_token" || name == "frontend_stream" {
			unit, scale = " µs", 1e6
		}
		fmt.Fprintf(w, "  %-20s %10.4g → %10.4g%s\n", name, a[k]*scale, b[k]*scale, unit)
	}
}

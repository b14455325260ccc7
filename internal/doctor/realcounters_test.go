package doctor

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// measuredEngineActivity is what the measured H200 read: its
// GR_ENGINE_ACTIVE for each share of the time it had work, steady loads
// and loads with host gaps between the steps.
func measuredEngineActivity(t *testing.T) (busy, gr []float64) {
	t.Helper()
	var gaps struct {
		Loads []struct {
			Busy float64            `json:"busy_share"`
			GPM  map[string]float64 `json:"gpm"`
		} `json:"loads"`
	}
	var fused struct {
		GPM []struct {
			Load string             `json:"load"`
			Busy float64            `json:"busy_share_expected"`
			GPM  map[string]float64 `json:"gpm"`
		} `json:"gpm"`
	}
	for f, v := range map[string]any{"h200-gaps.json": &gaps, "h200-fused.json": &fused} {
		b, err := os.ReadFile(reftest.Path(t, "reference", "calibration", "h200", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range gaps.Loads {
		busy, gr = append(busy, l.Busy), append(gr, l.GPM["graphics"]/100)
	}
	for _, l := range fused.GPM {
		if l.Load != "idle" {
			busy, gr = append(busy, l.Busy), append(gr, l.GPM["graphics"]/100)
		}
	}
	return busy, gr
}

// TestRealCountersAnswerAsGlassboxSeries: a target whose GPU is watched
// through DCGM series that read what the measured H200 read (engine
// activity 0.88–0.96 when it always has work, lower with host gaps) gets
// the answers and findings a glassbox target gets from its own busy
// counter for the same share of busy time.
func TestRealCountersAnswerAsGlassboxSeries(t *testing.T) {
	busy, gr := measuredEngineActivity(t)
	if len(busy) < 20 {
		t.Fatalf("%d measured loads", len(busy))
	}
	shapes := map[string]func(l *load){
		"compute-bound": func(l *load) {
			l.waiting, l.running, l.steps, l.prompt, l.gen, l.success = constant(5), constant(20), 20, 150000, 100, 100
		},
		"kv-bound":     func(l *load) { l.kv, l.waiting, l.running = constant(0.95), constant(6), constant(8) },
		"under-loaded": func(*load) {},
	}
	// The engine steps while requests run: with requests running all the
	// time the rest of each step is the host's; an under-loaded target's
	// requests run for the busy share of the time.
	steady := map[string]bool{"compute-bound": true, "kv-bound": true}
	th := DefaultThresholds()
	for name, shape := range shapes {
		for i := range busy {
			// The counter scatters by ±5 % around its relation to the busy
			// share (the same load read 0.84–0.98 of it): within that of a
			// threshold, which side it falls is the counter's noise.
			if math.Abs(busy[i]-th.BusyHigh) < 0.05 || math.Abs(busy[i]-th.BusyLow) < 0.05 {
				continue
			}
			g, d := healthy(), healthy()
			shape(&g)
			shape(&d)
			// vLLM's steps × their latency say what the busy share says.
			for _, l := range []*load{&g, &d} {
				l.busy, l.itl = busy[i], constantI(busy[i]/l.steps)
				if steady[name] {
					l.host = 1 - busy[i]
				} else {
					b := busy[i]
					l.running = func(j int) float64 { return 2 * float64(btoi(float64(j%20) < 20*b)) }
				}
			}
			d.vllm, d.dcgm, d.gpuName = true, gr[i], "NVIDIA H200"
			rg, rd := Diagnose(g.window(), nil), Diagnose(d.window(), nil)
			if rg.Questions == nil || rd.Questions == nil {
				t.Fatalf("%s: no answers", name)
			}
			if a, b := rg.Questions.Compute.Answer, rd.Questions.Compute.Answer; a != b {
				t.Errorf("%s, busy %.3f, GR_ENGINE_ACTIVE %.3f: compute saturated? %q by glassbox's counter, %q by DCGM (%s)",
					name, busy[i], gr[i], a, b, rd.Questions.Compute.Summary)
			}
			for _, f := range []string{"compute-bound", "kv-capacity-bound", "compute-and-kv-bound", "under-loaded"} {
				if a, b := slices.Contains(rg.Names(), f), slices.Contains(rd.Names(), f); a != b {
					t.Errorf("%s, busy %.3f, GR_ENGINE_ACTIVE %.3f: %s by glassbox's counter %v, by DCGM %v", name, busy[i], gr[i], f, a, b)
				}
			}
		}
	}
}

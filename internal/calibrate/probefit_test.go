package calibrate

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// h200Probe is the measured H200: the reference's files
// (reference/calibration/h200) and glassbox's own probe of an H200
// (testdata/h200-probe-2026-12-04.json: scripts/gpu-probe.py --sections
// steps,gpm,gaps --steps held-out,check,extra, which re-measured the
// reference's held-out step compositions and loads on another board).
func h200Probe(t *testing.T) *Probe {
	t.Helper()
	var paths []string
	for _, f := range []string{"h200-fused.json", "h200-eager.json", "h200-gaps.json", "h200-extras.json"} {
		paths = append(paths, reftest.Path(t, "reference", "calibration", "h200", f))
	}
	paths = append(paths, filepath.Join("testdata", "h200-probe-2026-12-04.json"))
	p, err := ReadProbe(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// h200Fit is FitProbe on h200Probe, fitted once for every test that
// reads it.
var h200Fit = sync.OnceValues(func() (*ProbeFit, error) {
	var paths []string
	for _, f := range []string{"h200-fused.json", "h200-eager.json", "h200-gaps.json", "h200-extras.json"} {
		paths = append(paths, filepath.Join("..", "..", "..", "shared", "reference", "calibration", "h200", f))
	}
	p, err := ReadProbe(append(paths, filepath.Join("testdata", "h200-probe-2026-12-04.json"))...)
	if err != nil {
		return nil, err
	}
	hw, err := profiles.LookupHardware("h200")
	if err != nil {
		return nil, err
	}
	return FitProbe(p, hw)
})

func fitH200(t *testing.T) *ProbeFit {
	t.Helper()
	h200Probe(t) // skips, or fails under CI, without ../shared
	f, err := h200Fit()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func h200(t *testing.T) profiles.Hardware {
	t.Helper()
	hw, err := profiles.LookupHardware("h200")
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// TestH200ProfileMatchesMeasurements holds the built-in H200 profile to
// the measured H200: every fused step, and the counters of every steady
// load, as the simulated GPU prices and reads them.
func TestH200ProfileMatchesMeasurements(t *testing.T) {
	p := h200Probe(t)
	hw := h200(t)
	m, err := profiles.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	cm := costmodel.Model{HW: hw, Model: m, TP: 1}
	var sum float64
	n := 0
	for _, s := range p.Steps {
		if !s.Fused {
			continue
		}
		got := cm.Step(probeStepBatch(s.B, s.Ctx, s.N, s.Pos)).Duration.Seconds() * 1e3
		e := got/s.MS - 1
		t.Logf("B=%4d ctx=%5d N=%4d@%d: measured %7.2f ms, simulated %7.2f (%+.1f%%)", s.B, s.Ctx, s.N, s.Pos, s.MS, got, 100*e)
		if math.Abs(e) > 0.08 {
			t.Errorf("B=%d ctx=%d N=%d@%d: simulated %.2f ms, measured %.2f (%+.1f%%; want within 8%%)", s.B, s.Ctx, s.N, s.Pos, got, s.MS, 100*e)
		}
		sum += math.Abs(e)
		n++
	}
	if n < 39 {
		t.Fatalf("%d fused steps, want the reference's 18 and the probe's 21", n)
	}
	if mean := sum / float64(n); mean > 0.03 {
		t.Errorf("mean |error| %.1f%% over %d steps, want under 3%%", 100*mean, n)
	}
	// Each load's composition ran with two attention kernels; the
	// simulator's step is the faster one's, so its counters are held to
	// that run's.
	faster := map[[3]int]ProbeLoad{}
	for _, l := range p.Loads {
		k := [3]int{l.B, l.Ctx, l.N}
		if f, ok := faster[k]; l.Fused && (!ok || l.StepMS < f.StepMS) {
			faster[k] = l
		}
	}
	checked := 0
	for _, l := range p.Loads {
		if !l.Fused || faster[[3]int{l.B, l.Ctx, l.N}].Kernel != l.Kernel {
			continue
		}
		r := costmodel.Steady(&hw, l.Busy, cm.Step(probeStepBatch(l.B, l.Ctx, l.N, 0)).Activity)
		lc := LoadCheck{ProbeLoad: l, Predicted: r}
		t.Log(lc.String())
		for _, c := range []struct {
			name           string
			got, want, tol float64
			relative       bool
		}{
			{"GR_ENGINE_ACTIVE", r.EngineActive, l.Graphics, 0.05, false},
			{"SM_ACTIVE", r.SMActive, l.SMActive, 0.08, false},
			{"SM_OCCUPANCY", r.SMOccupancy, l.SMOccupancy, 0.04, false},
			{"PIPE_TENSOR_ACTIVE", r.TensorActive, l.Tensor, 0.06, false},
			// The attention kernels' DRAM traffic differs (cuDNN's read 0.1–0.2
			// more than FA2's at wide batches); the simulator has one.
			{"DRAM_ACTIVE", r.DRAMActive, l.DRAM, 0.12, false},
			{"power", r.Watts, l.Watts, 0.1, true},
			{"SM clock", r.SMClockMHz, l.SMClockMHz, 0.1, true},
		} {
			if l.Gaps && (c.name == "power" || c.name == "SM clock") {
				continue // power read between steps falls faster than the busy share (FitProbe leaves these out)
			}
			d := c.got - c.want
			if c.relative {
				d = c.got/c.want - 1
			}
			if math.Abs(d) > c.tol {
				t.Errorf("%s %s: simulated %.3f, measured %.3f", l.Label, c.name, c.got, c.want)
			}
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("checked %d loads, want the reference's 5 fused compositions", checked)
	}
}

// TestFitH200Probe fits the measured H200 as a user's probe would be
// fitted, and gets the built-in profile's numbers back.
func TestFitH200Probe(t *testing.T) {
	hw := h200(t)
	f := fitH200(t)
	want, got := hw.Calib, f.Hardware.Calib
	same(t, "", reflect.ValueOf(want), reflect.ValueOf(got))
	if f.Burst == nil || f.BurstFP8 == nil {
		t.Fatalf("no GEMM fits: %+v %+v", f.Burst, f.BurstFP8)
	}
	// The bursts ran faster than the steps sustain: that is the point.
	if !(f.Burst.Efficiency > want.GEMMEfficiency*1.1) {
		t.Errorf("burst efficiency %.3f is not above the sustained %.3f", f.Burst.Efficiency, want.GEMMEfficiency)
	}
	if f.Burst.MeanAbsErr > 0.08 || f.BurstFP8.MeanAbsErr > 0.08 {
		t.Errorf("GEMMs alone: mean |error| %.1f%% (bf16), %.1f%% (fp8)", 100*f.Burst.MeanAbsErr, 100*f.BurstFP8.MeanAbsErr)
	}
}

// same compares two profiles' numbers field by field, within 1 %.
func same(t *testing.T, path string, want, got reflect.Value) {
	t.Helper()
	switch want.Kind() {
	case reflect.Pointer:
		if want.IsNil() != got.IsNil() {
			t.Errorf("%s: %v, fitted %v", path, want, got)
		} else if !want.IsNil() {
			same(t, path, want.Elem(), got.Elem())
		}
	case reflect.Struct:
		for i := range want.NumField() {
			same(t, path+"."+want.Type().Field(i).Name, want.Field(i), got.Field(i))
		}
	case reflect.Float64, reflect.Int64:
		w, g := toFloat(want), toFloat(got)
		if math.Abs(g-w) > 0.01*math.Abs(w)+1e-12 {
			t.Errorf("%s: built in %v, fitted %v", strings.TrimPrefix(path, "."), w, g)
		}
	}
}

func toFloat(v reflect.Value) float64 {
	if v.Kind() == reflect.Int64 {
		return float64(v.Int())
	}
	return v.Float()
}

func TestReadProbeRefusesNonsense(t *testing.T) {
	for _, bad := range []string{
		`{`,
		`{"gemm":[{"gemm":"qkv","M":0,"N":1,"K":1,"ms":1}]}`,
		`{"steps":[{"model":"llama-3.1-8b","decode_seqs":0,"prefill_tokens":0,"median_ms":1}]}`,
		`{"steps":[{"model":"llama-3.1-8b","decode_seqs":1,"ctx":9,"median_ms":-1}]}`,
		`{"gpm":[{"load":"warp drive","step_ms":1,"gpm":{"graphics":50}}]}`,
		`{"gpm":[{"load":"decode B=1 ctx=8","step_ms":1,"busy_share":1.5,"gpm":{"graphics":50}}]}`,
	} {
		if _, err := ParseProbe([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
	if _, err := FitProbe(&Probe{}, profiles.Hardware{}); err == nil {
		t.Error("an empty probe fitted")
	}
}

func FuzzParseProbe(f *testing.F) {
	f.Add([]byte(`{"meta":{"probe":"x"},"steps":[{"model":"llama-3.1-8b","fused":true,"decode_seqs":1,"ctx":512,"median_ms":5}],` +
		`"gpm":[{"load":"decode B=1 ctx=512","B":1,"ctx":512,"step_ms":5,"busy_share":1,"gpm":{"graphics":93},"nvml":{"power_w":400}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProbe(b)
		if err != nil {
			return
		}
		for _, s := range p.Steps {
			if s.B+s.N <= 0 || !(s.MS > 0) {
				t.Fatalf("accepted %+v", s)
			}
		}
		for _, l := range p.Loads {
			if !(l.Busy > 0 && l.Busy <= 1) {
				t.Fatalf("accepted %+v", l)
			}
		}
	})
}

var updateDocs = flag.Bool("update", false, "rewrite docs/simulator.md's H200 tables from the fit")

// TestSimulatorDocsH200Tables: docs/simulator.md's tables of the measured
// H200 against the fitted profile are the fit's.
func TestSimulatorDocsH200Tables(t *testing.T) {
	f := fitH200(t)
	const path = "../../docs/simulator.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(<!-- h200:tables -->\n).*?(<!-- /h200:tables -->)`)
	if !re.Match(doc) {
		t.Fatalf("%s has no <!-- h200:tables --> section", path)
	}
	got := re.ReplaceAllLiteralString(string(doc), "<!-- h200:tables -->\n"+ProbeMarkdown(f)+"<!-- /h200:tables -->")
	if *updateDocs {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != string(doc) {
		t.Errorf("%s's H200 tables are stale: go test ./internal/calibrate -run TestSimulatorDocsH200Tables -update", path)
	}
}

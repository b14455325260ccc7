package calibrate

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func readExperiments(t *testing.T) []Experiment {
	t.Helper()
	f, err := os.Open(reftest.Path(t, "reference", "calibration", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exps, err := ReadExperiments(f)
	if err != nil {
		t.Fatal(err)
	}
	return exps
}

// TestReadExperiments: every row of tables A and A′, with the GPU, the
// flags, the stages' means and why a row cannot be simulated.
func TestReadExperiments(t *testing.T) {
	exps := readExperiments(t)
	if len(exps) != 17 {
		t.Fatalf("%d experiments, want 10 of table A and 7 of A′", len(exps))
	}
	by := map[int]*Experiment{}
	for i := range exps {
		by[exps[i].ID] = &exps[i]
	}
	for _, c := range []struct {
		id              int
		table, hw       string
		tp, mbt         int
		offload         bool
		ttft, e2e       float64
		stages          []StageMetrics
		notSimulatedHas string
	}{
		{16, "A", "h100", 1, 2048, false, 28.5, 2168, []StageMetrics{{25.2, 1893}, {29.9, 2278}}, ""},
		{46, "A", "h100", 1, 2048, false, 50.1, 22753, nil, ""},
		{38, "A′", "a100-80g", 1, 2048, false, 44.8, 3457.3, []StageMetrics{{42.2, 3067}, {45.9, 3620}}, ""},
		{55, "A′", "l40s", 1, 2048, false, 85.4, 7467.2, []StageMetrics{{74.1, 6338}, {90.1, 7938}}, ""},
		{9, "A′", "h100", 2, 2048, true, 68.9, 5038.6, []StageMetrics{{63.9, 4796}, {71.0, 5136}}, ""},
		{62, "A′", "h100", 2, 1024, true, 21.7, 1534, []StageMetrics{{22.0, 1497}, {21.6, 1549}}, ""},
		{49, "A′", "h100", 8, 2048, false, 61.8, 4825.6, []StageMetrics{{63.9, 4478}, {61.0, 4965}}, ""},
	} {
		e := by[c.id]
		if e == nil {
			t.Errorf("no exp %d", c.id)
			continue
		}
		s, m := e.Run.Server, e.Run.Measured
		if e.Table != c.table || s.Hardware != c.hw || s.TensorParallel != c.tp || s.MaxNumBatchedTokens != c.mbt || (s.KVOffloadGiB > 0) != c.offload ||
			m.TTFT != c.ttft || m.E2E != c.e2e || !slicesEqual(m.Stages, c.stages) {
			t.Errorf("exp %d: table %s, %+v, measured %+v", c.id, e.Table, s, m)
		}
		if !strings.Contains(e.NotSimulated, c.notSimulatedHas) || (c.notSimulatedHas == "" && e.NotSimulated != "") {
			t.Errorf("exp %d: not simulated %q, want it to say %q", c.id, e.NotSimulated, c.notSimulatedHas)
		}
	}
	for _, e := range exps {
		if e.NotSimulated != "" {
			t.Errorf("exp %d is not simulated: %s", e.ID, e.NotSimulated)
		}
	}
}

func slicesEqual(a, b []StageMetrics) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadExperimentsRefuses: a row the reader cannot place is an error
// naming the experiment, not a row dropped.
func TestReadExperimentsRefuses(t *testing.T) {
	head := "## A. runs\n\n"
	for _, c := range []struct{ row, want string }{
		{"| 70 | Llama-3.1-8B | 1 | general, `--enable-expert-parallel 1` | 28.5 / 33.4 / 36.6 | 2168.0 / 2380.1 / 2438.1 | 8.66 |", "not simulated"},
		{"| 71 | Llama-3.1-8B | 1 | chat | 28.5 / 33.4 / 36.6 | 2168.0 / 2380.1 / 2438.1 | 8.66 |", `unknown workload "chat"`},
		{"| 72 | Llama-3.1-8B | TPU v5 | 1 | general | 28.5 / 33.4 / 36.6 | 2168.0 / 2380.1 / 2438.1 | 8.66 |", `no hardware profile for GPU "TPU v5"`},
		{"| 73 | Llama-3.1-8B | 1 | reasoning | 28.5 / 33.4 / 36.6 (stages 1, 2) | 2168.0 / 2380.1 / 2438.1 (stages 1, 2) | 8.66 |", "two stage means for workload reasoning"},
		{"| 74 | Llama-3.1-8B | 1 | general | 28.5 / 33.4 / 36.6 (stages 1, 2) | 2168.0 / 2380.1 / 2438.1 | 8.66 |", "stage means for one of TTFT and E2E only"},
	} {
		_, err := ReadExperiments(strings.NewReader(head + c.row + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !regexp.MustCompile(`exp 7\d`).MatchString(err.Error()) {
			t.Errorf("%s: %v, want an error naming the exp and saying %q", c.row, err, c.want)
		}
	}
	if _, err := ReadExperiments(strings.NewReader("## B. nothing\n")); err == nil {
		t.Error("no rows: accepted")
	}
	// A model the simulator has no shape for is kept, with why.
	exps, err := ReadExperiments(strings.NewReader(head + "| 75 | Falcon-180B | 8 | general | 28.5 / 33.4 / 36.6 | 2168.0 / 2380.1 / 2438.1 | 8.66 |\n"))
	if err != nil || len(exps) != 1 || !strings.Contains(exps[0].NotSimulated, `no model is named for "Falcon-180B"`) {
		t.Errorf("an unknown model: %v, %+v", err, exps)
	}
}

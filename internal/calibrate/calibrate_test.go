package calibrate

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func tableRuns(t *testing.T) []Run {
	t.Helper()
	f, err := os.Open(reftest.Path(t, "reference", "calibration", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// shorten cuts every stage of the runs to a fifth under the race detector,
// where the full replays would not fit the test timeout (the simulator is
// one goroutine: the race build checks nothing more by running them whole).
// It says so; the full-length check runs in every build without -race,
// which .ci/run also runs. It returns how far to relax the goals: the
// shortened runs' first, uncached requests weigh five times as much.
func shorten(t *testing.T, runs []Run) float64 {
	if !raceEnabled {
		return 1
	}
	t.Logf("under -race: every stage of the %d runs is cut to a fifth of its length and the goals are doubled; the full runs are checked without -race", len(runs))
	for i := range runs {
		for k := range runs[i].Load.Load.Stages {
			runs[i].Load.Load.Stages[k].Duration /= 5
		}
	}
	return 2
}

func TestReadTable(t *testing.T) {
	runs := tableRuns(t)
	if len(runs) != 10 {
		t.Fatalf("%d runs in table A, want 10", len(runs))
	}
	by := map[string]*Run{}
	for i := range runs {
		by[strings.SplitN(runs[i].Name, "-", 2)[0]] = &runs[i]
	}
	for exp, want := range map[string]struct {
		model          string
		tp, mbt        int
		gmu, ttft, e2e float64
		stages, out    int
	}{
		"exp16": {"llama-3.1-8b", 1, 2048, 0.9, 28.5, 2168.0, 2, 248},
		"exp22": {"llama-3.1-8b", 1, 1024, 0.9, 31.2, 2411.3, 2, 248},
		"exp25": {"llama-3.1-8b", 1, 2048, 0.95, 28.2, 2135.3, 2, 248},
		"exp46": {"llama-3.1-8b", 1, 2048, 0.9, 50.1, 22753, 1, 1448},
		"exp60": {"llama-3.1-70b", 4, 8192, 0.9, 53.7, 4502, 2, 248},
		"exp13": {"qwen3-14b", 1, 2048, 0.9, 50.8, 4064.1, 2, 248},
	} {
		r := by[exp]
		if r == nil {
			t.Errorf("no %s", exp)
			continue
		}
		s := r.Server
		if s.Model != want.model || s.TensorParallel != want.tp || s.MaxNumBatchedTokens != want.mbt || s.GPUMemoryUtilization != want.gmu ||
			s.MaxNumSeqs != 128 || s.MaxModelLen != 4096 || r.Measured.TTFT != want.ttft || r.Measured.E2E != want.e2e ||
			len(r.Load.Load.Stages) != want.stages || r.Load.Data.SharedPrefix.OutputLen.Value != want.out || r.Plan.Compat != inferenceperf.Legacy {
			t.Errorf("%s: %+v, measured %+v", exp, s, r.Measured)
		}
	}
}

// TestReadRuns: a directory of runs in both result formats.
func TestReadRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(run, name, body string) {
		if err := os.MkdirAll(filepath.Join(dir, run), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, run, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wl := "load: {stages: [{rate: 2, duration: 10}]}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2, num_prompts_per_group: 2, output_len: 11}}\n"
	write("a", "workload.yaml", wl)
	write("a", "server.args", "vllm serve meta-llama/Llama-3.1-8B-Instruct \\\n  --max-num-seqs=64 --tensor-parallel-size 1 --no-enable-prefix-caching\n")
	write("a", "result.json", `{"mean_ttft_ms": 30, "p99_ttft_ms": 50, "mean_e2el_ms": 900, "mean_tpot_ms": 8.7}`)
	write("b", "workload.yaml", wl)
	write("b", "server.args", "--model Qwen/Qwen2.5-7B-Instruct --max-num-batched-tokens 1024")
	write("b", "result.json", `{"successes": {"latency": {"time_to_first_token": {"mean": 0.04, "p90": 0.05, "p99": 0.06}, "request_latency": {"mean": 1.04}}}}`)
	write("b", "run.yaml", "hardware: h200\ncompat: e8e0aa99\ndrift: [1, 2]\n")
	runs, err := ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := runs[0], runs[1]
	if a.Server.Model != "llama-3.1-8b" || a.Server.MaxNumSeqs != 64 || !a.Server.NoPrefixCaching || a.Server.Hardware != "h100" || a.Measured.TPOT != 8.7 {
		t.Errorf("run a: %+v %+v", a.Server, a.Measured)
	}
	if b.Server.Model != "qwen2.5-7b" || b.Server.MaxNumBatchedTokens != 1024 || b.Server.Hardware != "h200" ||
		b.Measured.TTFT != 40 || b.Measured.E2E != 1040 || b.Measured.TPOT != 100 || b.Plan.Compat != inferenceperf.Legacy {
		t.Errorf("run b: %+v %+v %+v", b.Server, b.Measured, b.Plan)
	}
	write("c", "workload.yaml", wl)
	write("c", "server.args", "--model gpt-5")
	write("c", "result.json", `{}`)
	if _, err := ReadRuns(dir); err == nil || !strings.Contains(err.Error(), "gpt-5") {
		t.Errorf("an unknown model: %v", err)
	}
}

// shortRuns are small runs of three shapes, measured by replaying them
// with truth.
func shortRuns(t *testing.T, truth profiles.Calibration) []Run {
	t.Helper()
	var runs []Run
	for _, c := range []struct {
		name, model string
		tp          int
		p           preset
	}{
		{"8b-general", "llama-3.1-8b", 1, preset{[][2]float64{{8, 40}, {20, 40}}, 9, 5, 100, 447, 248}},
		{"8b-reasoning", "llama-3.1-8b", 1, preset{[][2]float64{{3, 60}}, 23, 1, 100, 934, 1448}},
		{"70b-tp4", "llama-3.1-70b", 4, preset{[][2]float64{{4, 40}}, 9, 5, 100, 447, 248}},
	} {
		load, err := inferenceperf.Parse(strings.NewReader(c.p.config()))
		if err != nil {
			t.Fatal(err)
		}
		srv := vllmDefaults("h100")
		srv.Model, srv.TensorParallel = c.model, c.tp
		runs = append(runs, Run{Name: c.name, Server: srv, Load: load, Plan: inferenceperf.PlanOptions{Compat: inferenceperf.Legacy}})
	}
	preds, err := Evaluate(context.Background(), runs, truth)
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		runs[i].Measured = preds[i].Predicted
	}
	return runs
}

// TestFitFindsKnownTerms: runs "measured" with known terms are fitted from
// other starting terms until the replays reproduce the measurements.
func TestFitFindsKnownTerms(t *testing.T) {
	hw, _ := profiles.LookupHardware("h100")
	truth := hw.Calib
	truth.KVReadFactor, truth.StepOverhead, truth.Frontend.Arrival, truth.Frontend.LagSteps = 1.6, 150*time.Microsecond, 30*time.Millisecond, 1
	runs := shortRuns(t, truth)
	start := hw.Calib
	fitted, before, after, err := Fit(context.Background(), runs, start, FitOptions{Iterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	sb, sa := Summarize(before), Summarize(after)
	t.Logf("mean abs error before: TTFT %.1f%%, E2E %.1f%%; after: %.1f%%, %.1f%%", 100*sb.MeanAbs.TTFT, 100*sb.MeanAbs.E2E, 100*sa.MeanAbs.TTFT, 100*sa.MeanAbs.E2E)
	if sb.MeanAbs.E2E < 0.03 || sb.MeanAbs.TTFT < 0.1 {
		t.Fatalf("the starting terms are already right (%+v): the test proves nothing", sb.MeanAbs)
	}
	if sa.MeanAbs.E2E > 0.02 || sa.MeanAbs.TTFT > 0.05 {
		var b strings.Builder
		WriteTerms(&b, start, fitted)
		t.Errorf("after the fit the replays are %.1f%% (E2E) and %.1f%% (TTFT) off what the known terms gave:\n%s", 100*sa.MeanAbs.E2E, 100*sa.MeanAbs.TTFT, b.String())
	}
}

// TestProfileReproducesTableA: the committed H100 profile replays every
// run of reference table A within the simulator's goals (mean absolute
// error at most 5 % on mean E2E and TPOT, 12 % on mean TTFT) and no run
// more than twice that off. docs/simulator.md shows the table this checks.
func TestProfileReproducesTableA(t *testing.T) {
	reftest.Long(t, "the reference runs replayed in full")
	runs := tableRuns(t)
	slack := shorten(t, runs)
	hw, _ := profiles.LookupHardware("h100")
	preds, err := Evaluate(context.Background(), runs, hw.Calib)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteTable(&b, preds)
	t.Log("\n" + b.String())
	s := Summarize(preds)
	if s.MeanAbs.E2E > 0.05*slack || s.MeanAbs.TPOT > 0.05*slack || s.MeanAbs.TTFT > 0.12*slack {
		t.Errorf("mean absolute error E2E %.1f%%, TPOT %.1f%%, TTFT %.1f%%: want at most 5%%, 5%%, 12%%",
			100*s.MeanAbs.E2E, 100*s.MeanAbs.TPOT, 100*s.MeanAbs.TTFT)
	}
	for i := range preds {
		e := preds[i].Errors()
		bound := 0.1
		if strings.HasPrefix(preds[i].Run.Name, "exp22-") {
			// Exp 22 ran exp 16's workload with --max-num-batched-tokens
			// 1024 and measured its decode 11–13 % slower than exps 16, 23
			// and 25 (the same workload at 2048 and 8192 tokens and at
			// --gpu-memory-utilization 0.95, within 2 % of each other).
			// Its steps carry about 50 tokens, which no budget of 1024
			// limits, so the simulator prices it as exp 16's: no fit brings
			// it within 10 % without moving the other three as far.
			bound = 0.15
		}
		if math.Abs(e.E2E) > bound*slack || math.Abs(e.TPOT) > bound*slack || math.Abs(e.TTFT) > 0.3*slack {
			t.Errorf("%s: E2E %+.1f%%, TPOT %+.1f%%, TTFT %+.1f%%", preds[i].Run.Name, 100*e.E2E, 100*e.TPOT, 100*e.TTFT)
		}
		if preds[i].Failed > 0 {
			t.Errorf("%s: %d requests failed", preds[i].Run.Name, preds[i].Failed)
		}
	}
}

// TestFitMovesOnlyItsTerms: a fit given terms moves those and leaves
// every other coefficient as it started; a term it does not know, or one
// its profile's form cannot take, is refused by name before any replay.
func TestFitMovesOnlyItsTerms(t *testing.T) {
	hw, _ := profiles.LookupHardware("h100")
	truth := hw.Calib
	truth.Frontend.Arrival = 3 * time.Millisecond
	runs := shortRuns(t, truth)[:1]
	fitted, _, after, err := Fit(context.Background(), runs, hw.Calib, FitOptions{Iterations: 2, Terms: []string{"frontend_arrival"}})
	if err != nil {
		t.Fatal(err)
	}
	want := hw.Calib
	want.Frontend.Arrival = fitted.Frontend.Arrival
	if d := cmp.Diff(want, fitted); d != "" {
		t.Errorf("a fit of the arrival alone moved other terms (-start +fitted):\n%s", d)
	}
	from, to, got := hw.Calib.Frontend.Arrival, truth.Frontend.Arrival, fitted.Frontend.Arrival
	if e := Summarize(after).MeanAbs.TTFT; (got-to).Abs() > (from-to).Abs()/2 || e > 0.02 {
		t.Errorf("arrival fitted from %v to %v, want most of the way to %v (mean TTFT %.1f%% off)", from, got, to, 100*e)
	}
	if _, _, _, err := Fit(context.Background(), runs, hw.Calib, FitOptions{Terms: []string{"frontend_speed"}}); err == nil || !strings.Contains(err.Error(), `unknown term "frontend_speed"`) {
		t.Errorf("an unknown term: %v", err)
	}
	h200, _ := profiles.LookupHardware("h200")
	if _, _, _, err := Fit(context.Background(), runs, h200.Calib, FitOptions{Terms: []string{"weight_load_factor"}}); err == nil || !strings.Contains(err.Error(), "weight_load_factor") {
		t.Errorf("the weight read of an overlapped GEMM form: %v", err)
	}
}

func TestProfileRoundTrip(t *testing.T) {
	hw, _ := profiles.LookupHardware("h100")
	var b strings.Builder
	if err := WriteProfile(&b, "h100", "test", hw.Calib); err != nil {
		t.Fatal(err)
	}
	name, got, err := ReadProfile(strings.NewReader(b.String()))
	if err != nil || name != "h100" {
		t.Fatalf("%q, %v", name, err)
	}
	if diff := cmp.Diff(hw.Calib, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	var noReserve []string // every term is required, the activation reserve too
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "activation_reserve_bytes:") {
			noReserve = append(noReserve, line)
		}
	}
	for _, bad := range []string{"hardware: h100\n", strings.Join(noReserve, "\n"), strings.Replace(b.String(), "kv_read_factor: 1.19", "kv_read_factor: 0.5", 1),
		strings.Replace(b.String(), "hardware: h100", "hardware: tpu", 1), b.String() + "bogus: 1\n", "[1, 2",
		strings.Replace(b.String(), "imbalance: 1.25", "imbalance: 3", 1)} {
		if _, _, err := ReadProfile(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func FuzzReadProfile(f *testing.F) {
	hw, _ := profiles.LookupHardware("h100")
	var b strings.Builder
	_ = WriteProfile(&b, "h100", "", hw.Calib)
	f.Add(b.String())
	f.Add("hardware: [")
	f.Fuzz(func(t *testing.T, s string) {
		_, c, err := ReadProfile(strings.NewReader(s))
		if err == nil && (c.GEMMEfficiency <= 0 || c.KVReadFactor < 1 || c.StepOverhead < 0) {
			t.Fatalf("accepted %+v", c)
		}
	})
}

// TestHeldOutStages replays the stage-level runs, which the H100 profile
// was not fitted to, and logs the errors docs/simulator.md reports; it
// holds the profile to bounds a little above today's errors there (that
// round ran with CPU KV offload on, and its Llama-2 models' full-size KV
// caches make their decode steps KV-bound, which table A's GQA models are
// not: see docs/simulator.md).
func TestHeldOutStages(t *testing.T) {
	reftest.Long(t, "the held-out reference stages replayed in full")
	f, err := os.Open(reftest.Path(t, "reference", "calibration", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := ReadStageTable(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 7 {
		t.Fatalf("%d stage rows, want 7", len(runs))
	}
	replayHeldOut(t, runs, 0.5)
}

// TestHeldOutTP replays the held-out runs at tensor parallelism 2
// (testdata/heldout: CodeLlama-34B on H100, the first round), which no
// profile is fitted to, and holds the H100 profile to bounds a little
// above today's errors there (docs/simulator.md shows them).
func TestHeldOutTP(t *testing.T) {
	reftest.Long(t, "the held-out TP 2 runs replayed in full")
	runs, err := ReadRuns("testdata/heldout")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d held-out runs, want 3", len(runs))
	}
	replayHeldOut(t, runs, 0.15)
}

// replayHeldOut replays held-out runs on the H100 profile, logs their
// table and holds the median absolute errors to 15 % E2E and TPOT and
// ttft TTFT (scaled by shorten's slack).
func replayHeldOut(t *testing.T, runs []Run, ttft float64) {
	t.Helper()
	slack := shorten(t, runs)
	hw, _ := profiles.LookupHardware("h100")
	preds, err := Evaluate(context.Background(), runs, hw.Calib)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteTable(&b, preds)
	t.Log("\n" + b.String())
	if s := Summarize(preds); s.MedianAbs.E2E > 0.15*slack || s.MedianAbs.TPOT > 0.15*slack || s.MedianAbs.TTFT > ttft*slack {
		t.Errorf("held-out median absolute error E2E %.1f%%, TPOT %.1f%%, TTFT %.1f%%", 100*s.MedianAbs.E2E, 100*s.MedianAbs.TPOT, 100*s.MedianAbs.TTFT)
	}
}

// TestParseServeArgs: switches vLLM takes without a value do not swallow
// the next flag or the model; flags glassbox does not read are passed over.
func TestParseServeArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Server
	}{
		{"vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager --no-enable-prefix-caching --max-num-seqs 64",
			Server{Hardware: "h100", Model: "llama-3.1-8b", TensorParallel: 1, MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 4096, GPUMemoryUtilization: 0.9, NoPrefixCaching: true}},
		{"vllm serve --trust-remote-code --model meta-llama/Llama-3.1-8B-Instruct --some-new-switch --max-model-len=8192 --seed 3",
			Server{Hardware: "h100", Model: "llama-3.1-8b", TensorParallel: 1, MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 8192, GPUMemoryUtilization: 0.9}},
	} {
		got, err := ParseServeArgs(tc.line, "h100")
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.line, d)
		}
	}
	if _, err := ParseServeArgs("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs", "h100"); err == nil || !strings.Contains(err.Error(), "needs a value") {
		t.Errorf("a value flag at the end: %v", err)
	}
	// CPU KV offload, with vLLM's native backend only.
	if s, err := ParseServeArgs("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-offloading-size 8 --kv-offloading-backend native", "h100"); err != nil || s.KVOffloadGiB != 8 {
		t.Errorf("offload: %+v, %v", s, err)
	}
	if _, err := ParseServeArgs("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-offloading-size 8 --kv-offloading-backend lmcache", "h100"); err == nil || !strings.Contains(err.Error(), "native") {
		t.Errorf("LMCache's backend: %v", err)
	}
}

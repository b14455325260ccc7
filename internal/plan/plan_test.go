package plan

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/speculative"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

func randomLoad(t *testing.T, in, out int) Load {
	samples, err := workload.LoadSamples(context.Background(), workload.DatasetConfig{Name: "random", RandomInputLen: in, RandomOutputLen: out},
		50, simulate.Tokenizer(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return func(_ context.Context, rate float64, d time.Duration) (*workload.Plan, error) {
		return workload.OpenLoop(samples, workload.NewArrivals(0, d, rate, 1, nil, rand.New(rand.NewPCG(2, 2))), 0, d), nil
	}
}

func smallGrid(t *testing.T) Config {
	return Config{
		Base: replica.Config{Sim: sim.Config{Model: "llama-3.1-8b"}, MaxModelLen: 4096, BlockSize: 16, MaxQueuedRequests: 10000,
			GPUMemoryUtilization: 0.9, MaxNumBatchedTokens: 2048},
		Hardware: []string{"h100", "a100-80g"}, TP: []int{1}, MaxNumSeqs: []int{8, 64},
		Load: randomLoad(t, 300, 100), SLOs: []SLO{{Metric: "tpot", Percentile: 90, Limit: 15 * time.Millisecond}, {Metric: "ttft", Percentile: 90, Limit: 300 * time.Millisecond}},
		Prices: map[string]float64{"h100": 2.5, "a100-80g": 1.6}, TargetRate: 40, Duration: 30 * time.Second, Precision: 0.05,
	}
}

// TestPlanSmallGrid: the planner's maximum rate meets the SLOs and a rate
// 10% above it does not, a wider batch sustains more, fleets and costs
// follow from the rates, and the table names the best configuration and
// its command lines.
func TestPlanSmallGrid(t *testing.T) {
	cfg := smallGrid(t)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	res.WriteTable(&b, &cfg)
	t.Log("\n" + b.String())
	if len(res.Rows) != 4 || res.Best < 0 {
		t.Fatalf("%d rows, best %d", len(res.Rows), res.Best)
	}
	by := map[string]*Row{}
	for i := range res.Rows {
		r := &res.Rows[i]
		by[r.Hardware+"/"+string(rune('0'+r.MaxNumSeqs/8))] = r
		if r.Err != "" || !(r.MaxRate > 0) || r.Limit == "" {
			t.Fatalf("%+v", r)
		}
		rc := cfg.Base
		rc.Sim.Hardware, rc.Sim.TensorParallel, rc.MaxNumSeqs = r.Hardware, r.TP, r.MaxNumSeqs
		if at, err := runTrial(context.Background(), &cfg, rc, r.MaxRate); err != nil || !at.meets {
			t.Errorf("%s seqs %d: its max rate %.3g misses the SLOs: %v %v", r.Hardware, r.MaxNumSeqs, r.MaxRate, err, at.missed)
		}
		if over, err := runTrial(context.Background(), &cfg, rc, 1.1*r.MaxRate); err != nil || over.meets {
			t.Errorf("%s seqs %d: 10%% above its max rate %.3g still meets the SLOs", r.Hardware, r.MaxNumSeqs, r.MaxRate)
		}
		if want := int(math.Ceil(cfg.TargetRate / r.MaxRate)); r.Replicas != want || r.GPUs != want || math.Abs(r.DollarsPerHour-float64(want)*cfg.Prices[r.Hardware]) > 1e-9 {
			t.Errorf("%s seqs %d: %d replicas, %d GPUs, $%.2f/h for %.3g req/s each", r.Hardware, r.MaxNumSeqs, r.Replicas, r.GPUs, r.DollarsPerHour, r.MaxRate)
		}
	}
	for _, hw := range []string{"h100", "a100-80g"} {
		if narrow, wide := by[hw+"/1"], by[hw+"/8"]; !(wide.MaxRate > narrow.MaxRate) {
			t.Errorf("%s: max-num-seqs 64 sustains %.3g req/s, 8 sustains %.3g", hw, wide.MaxRate, narrow.MaxRate)
		}
	}
	best := &res.Rows[res.Best]
	for i := range res.Rows {
		if r := &res.Rows[i]; r.DollarsPerHour < best.DollarsPerHour {
			t.Errorf("the best fleet costs $%.2f/h, %s seqs %d $%.2f/h", best.DollarsPerHour, r.Hardware, r.MaxNumSeqs, r.DollarsPerHour)
		}
	}
	for _, want := range []string{"Best: " + best.Hardware, "glassbox serve --sim-hardware " + best.Hardware, "vllm serve meta-llama/Llama-3.1-8B-Instruct", "$/M out tok"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestParseSLOs(t *testing.T) {
	got, err := ParseSLOs("ttft:p99<=500ms, tpot:p90<=50ms")
	if err != nil || len(got) != 2 || got[0].Limit != 500*time.Millisecond || got[1].Percentile != 90 || got[1].Metric != "tpot" {
		t.Errorf("%+v, %v", got, err)
	}
	for _, bad := range []string{"", "ttft<=5ms", "ttft:p99<=", "foo:p99<=5ms", "ttft:p0<=5ms", "ttft:p99<=-5ms", "ttft:99<=5ms"} {
		if _, err := ParseSLOs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPlanFleets: a fleet of four behind round robin sustains at least
// about four times one replica's rate (more: round robin splits a Poisson
// stream into smoother ones, which queue less), and the fewest replicas simulated at a target
// rate meet the SLOs there while one fewer does not.
func TestPlanFleets(t *testing.T) {
	reftest.Long(t, "fleets of replicas searched in virtual time")
	cfg := smallGrid(t)
	cfg.Hardware, cfg.MaxNumSeqs, cfg.TargetRate = []string{"h100"}, []int{8}, 0
	one, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fleets, cfg.Routers = []int{4}, []router.Config{{Policy: router.RoundRobin}}
	four, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r1, r4 := one.Rows[0], four.Rows[0]
	if r4.Fleet != 4 || r4.Replicas != 4 || r4.GPUs != 4 || r4.Router != router.RoundRobin {
		t.Fatalf("fleet row %+v", r4)
	}
	if ratio := r4.MaxRate / r1.MaxRate; ratio < 3.5 || ratio > 8 {
		t.Errorf("four replicas sustain %.3g req/s, one %.3g: %.2f×", r4.MaxRate, r1.MaxRate, ratio)
	}
	var b strings.Builder
	four.WriteTable(&b, &cfg)
	if !strings.Contains(b.String(), "fleet  router") || !strings.Contains(b.String(), "for 4 replicas behind round-robin") {
		t.Errorf("table:\n%s", b.String())
	}

	cfg.Fleets, cfg.FitReplicas, cfg.TargetRate = nil, true, 3*r1.MaxRate
	fit, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := fit.Rows[0]
	if !f.Fitted || f.Replicas < 2 || f.Replicas > 4 || f.Err != "" {
		t.Fatalf("fitted row %+v for %.3g req/s at %.3g each", f, cfg.TargetRate, f.MaxRate)
	}
	rc := cfg.Base
	rc.Sim.Hardware, rc.Sim.TensorParallel, rc.MaxNumSeqs = f.Hardware, f.TP, f.MaxNumSeqs
	if at, err := runFleetTrial(context.Background(), &cfg, rc, f.Replicas, f.router, cfg.TargetRate); err != nil || !at.meets {
		t.Errorf("%d replicas miss the SLOs at the target: %v %v", f.Replicas, err, at.missed)
	}
	if f.Replicas > 1 {
		if at, err := runFleetTrial(context.Background(), &cfg, rc, f.Replicas-1, f.router, cfg.TargetRate); err == nil && at.meets {
			t.Errorf("%d replicas, one fewer than fitted, meet the SLOs too", f.Replicas-1)
		}
	}
	if _, err := Run(context.Background(), Config{Base: cfg.Base, Hardware: cfg.Hardware, TP: cfg.TP, MaxNumSeqs: cfg.MaxNumSeqs, Load: cfg.Load,
		SLOs: cfg.SLOs, FitReplicas: true}); err == nil {
		t.Error("fitting replicas without a target rate was accepted")
	}
}

// TestSpeculationCrossover: one H200 replica of Llama-3.1-8B with n-gram
// drafts accepted at the synthetic rates 0.6, 0.35, 0.2, 0.1: at 2
// requests/s (a few sequences) speculation shortens the token time; at 60
// (about a thousand sequences, the verify passes compute-bound) it costs
// throughput and token time, and the sweep names that rate.
func TestSpeculationCrossover(t *testing.T) {
	reftest.Long(t, "a thousand sequences simulated with and without speculation")
	if testing.Short() {
		t.Skip("simulates a thousand sequences in virtual time (a minute under -race); skipped with -short")
	}
	cfg := Config{
		Base: replica.Config{Sim: sim.Config{Hardware: "h200", Model: "llama-3.1-8b"}, MaxModelLen: 4096, BlockSize: 16, MaxQueuedRequests: 100000,
			GPUMemoryUtilization: 0.9, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024,
			Speculative: speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 5, PromptLookupMax: 5,
				RejectionSampleMethod: speculative.RejectSynthetic, Synthetic: []float64{0.6, 0.35, 0.2, 0.1}}},
		Load: randomLoad(t, 128, 512), Duration: 40 * time.Second,
	}
	pts, err := SpeculationSweep(context.Background(), cfg, []float64{2, 60})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteSpecTable(&b, pts)
	t.Log("\n" + b.String())
	if !pts[0].Pays() || pts[1].Pays() {
		t.Errorf("speculation pays at 2 req/s: %v (want true), at 60: %v (want false): %+v", pts[0].Pays(), pts[1].Pays(), pts)
	}
	if c := Crossover(pts); c != 60 {
		t.Errorf("crossover %v, want 60", c)
	}
	if a := pts[0].Spec.Acceptance; !(a > 0.3 && a < 0.5) || !math.IsNaN(pts[0].Plain.Acceptance) {
		t.Errorf("acceptance %v with speculation, %v without", a, pts[0].Plain.Acceptance)
	}
	cfg.Base.Speculative = speculative.Config{}
	if _, err := SpeculationSweep(context.Background(), cfg, []float64{2}); err == nil || !strings.Contains(err.Error(), "--speculative-config") {
		t.Errorf("a sweep without speculation: %v", err)
	}
}

// TestDraftModelCrossover: the same replica drafting with a Llama-3.2-1B
// draft model, its drafts accepted at 0.8, 0.6, 0.45, 0.3: at 2
// requests/s speculation shortens the token time although the draft's
// four passes cost about one of the target's; at 30 the draft's passes and
// the verify pass's positions cost more than they save, sooner than with
// drafts that cost nothing (n-gram lookup at the same rates still pays
// there).
func TestDraftModelCrossover(t *testing.T) {
	reftest.Long(t, "hundreds of sequences simulated with and without a draft model")
	if testing.Short() {
		t.Skip("simulates hundreds of sequences in virtual time; skipped with -short")
	}
	rates := []float64{0.8, 0.6, 0.45, 0.3}
	cfg := Config{
		Base: replica.Config{Sim: sim.Config{Hardware: "h200", Model: "llama-3.1-8b"}, MaxModelLen: 4096, BlockSize: 16, MaxQueuedRequests: 100000,
			GPUMemoryUtilization: 0.9, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024,
			Speculative: speculative.Config{Method: speculative.MethodDraftModel, Model: "llama-3.2-1b", NumSpeculativeTokens: 4,
				RejectionSampleMethod: speculative.RejectSynthetic, Synthetic: rates}},
		Load: randomLoad(t, 128, 512), Duration: 30 * time.Second,
	}
	draft, err := SpeculationSweep(context.Background(), cfg, []float64{2, 30})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Base.Speculative = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 5, PromptLookupMax: 5,
		RejectionSampleMethod: speculative.RejectSynthetic, Synthetic: rates}
	ngram, err := SpeculationSweep(context.Background(), cfg, []float64{30})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteSpecTable(&b, draft)
	WriteSpecTable(&b, ngram)
	t.Log("\n" + b.String())
	if !draft[0].Pays() || draft[1].Pays() || Crossover(draft) != 30 {
		t.Errorf("a 1B draft pays at 2 req/s: %v (want true), at 30: %v (want false): %+v", draft[0].Pays(), draft[1].Pays(), draft)
	}
	if !ngram[0].Pays() || !(draft[1].Spec.TPOTp50 > ngram[0].Spec.TPOTp50) {
		t.Errorf("at 30 req/s, n-gram drafts at the same rates: pays %v, token time %v ms against the draft model's %v",
			ngram[0].Pays(), ngram[0].Spec.TPOTp50, draft[1].Spec.TPOTp50)
	}
	// The draft model's cost shows at low load too: the same acceptance
	// with free drafts gives a shorter token time.
	if a := draft[0].Spec.Acceptance; !(a > 0.45 && a < 0.7) {
		t.Errorf("acceptance %v at the rates %v", a, rates)
	}
}

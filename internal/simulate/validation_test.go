package simulate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

var llmdFull = flag.Bool("llmd.full", false, "TestLLMDPrefixRoutingGain runs llm-d's whole ladder of 17 stages for all four schedulers and prints docs/simulator.md's table (minutes)")

// llmdServer is the benchmark's pods: vLLM serving Qwen3-32B at TP 2 on
// H100 with --block-size 64 --max-model-len 16000 and 307,328 tokens of
// KV cache each (the report's figure; 128 KiB a token per GPU).
func llmdServer() replica.Config {
	return replica.Config{Sim: sim.Config{Hardware: "h100", Model: "qwen3-32b", TensorParallel: 2}, BlockSize: 64, UserSpecifiedBlockSize: true,
		MaxModelLen: 16000, MaxQueuedRequests: 10000, KVCacheMemoryBytes: 307328 * 131072}
}

// The benchmark's four schedulers (the report's EndpointPickerConfigs).
var llmdRouters = []struct {
	name string
	cfg  router.Config
}{
	{"precise-scheduling", router.Config{Policy: router.EndpointPicker, PreciseBlockSize: 64,
		Scorers: []router.Scorer{{Type: router.PrecisePrefixScorer, Weight: 3}, {Type: router.KVCacheScorer, Weight: 2}, {Type: router.QueueScorer, Weight: 2}}}},
	{"estimated-scheduling", router.Config{Policy: router.EndpointPicker, PrefixBlockSize: 64, PrefixLRUCapacity: 31250,
		Scorers: []router.Scorer{{Type: router.KVCacheScorer, Weight: 1}, {Type: router.QueueScorer, Weight: 1}, {Type: router.PrefixScorer, Weight: 1}}}},
	{"load-scheduling", router.Config{Policy: router.EndpointPicker, Scorers: []router.Scorer{{Type: router.QueueScorer, Weight: 1}, {Type: router.KVCacheScorer, Weight: 1}}}},
	{"random-scheduling", router.Config{Policy: router.Random}},
}

// llmdMeasured is the report's "Summary across QPS" (the mean over the 16
// stages after the warm-up: output tokens/s, TTFT p90 and mean in s) and
// its QPS = 20 stage.
var llmdMeasured = map[string][6]float64{
	"precise-scheduling":   {8730.0, 0.542, 0.298, 9184.5, 0.600, 0.363},
	"estimated-scheduling": {6944.4, 31.083, 13.316, 8082.6, 0.600, 0.329},
	"load-scheduling":      {4266.4, 94.865, 46.987, 4902.5, 77.707, 29.229},
	"random-scheduling":    {4428.7, 92.551, 45.281, 4933.1, 70.273, 25.073},
}

// llmdStages are one run's per-stage output tokens/s, TTFT p90 and mean.
func llmdStages(t *testing.T, res *Result, plan *workload.Plan) [][3]float64 {
	t.Helper()
	out, err := bench.Offline(bench.Config{PercentileMetrics: []string{"ttft"}, Percentiles: []float64{90}}, "qwen3-32b", "",
		bench.Pass{Outputs: res.Outputs}, res.Duration, plan)
	if err != nil {
		t.Fatal(err)
	}
	var st [][3]float64
	for _, s := range out.Passes[0].Stages {
		m := s.Metrics
		st = append(st, [3]float64{m.OutputThroughput, m.Dists["ttft"].Percentiles[0].Value / 1e3, m.Dists["ttft"].Mean / 1e3})
	}
	return st
}

func llmdPlan(t *testing.T, stages int) *workload.Plan {
	t.Helper()
	fh, err := os.Open("testdata/llmd-73-capacity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	c, err := inferenceperf.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	if stages > 0 {
		// The warm-up, then the QPS = 20 stage.
		c.Load.Stages = []inferenceperf.Stage{c.Load.Stages[0], c.Load.Stages[4]}
	}
	plan, err := inferenceperf.NewPlan(context.Background(), c, Tokenizer(), inferenceperf.PlanOptions{Compat: inferenceperf.Legacy})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestLLMDPrefixRoutingGain: llm-d's published comparison of schedulers on
// 8 pods of Qwen3-32B (TP 2, H100) under a shared-prefix load whose
// prefixes fill 73% of the fleet's KV cache, six times one pod's. Random
// routing scatters each group's 6,000-token prefix over the pods, which
// evict and prefill them again; the precise prefix-cache scorer, reading
// the engines' KV blocks, keeps each group where its prefix is. At the
// report's QPS = 20 stage the precise picker served 1.86× random's output
// tokens per second (9,185 against 4,933) with a 69× shorter mean TTFT
// (0.36 s against 25 s); the simulated fleet must show the same direction
// and roughly the same size: 1.4× to 2.6× the throughput, at least 10× the
// TTFT. With -llmd.full it runs the report's whole ladder for all four
// schedulers and prints the table of docs/simulator.md.
func TestLLMDPrefixRoutingGain(t *testing.T) {
	if raceEnabled {
		t.Skip("simulates 8 replicas × 1,500 long requests: minutes under -race; run without it")
	}
	if *llmdFull {
		llmdFullLadder(t)
		return
	}
	plan := llmdPlan(t, 2)
	got := map[string][3]float64{}
	for _, rt := range []int{0, 3} { // precise, random
		r := llmdRouters[rt]
		res, err := Run(context.Background(), Config{Replica: llmdServer(), Plan: plan, Replicas: 8, Router: r.cfg})
		if err != nil {
			t.Fatal(err)
		}
		st := llmdStages(t, res, plan)
		got[r.name] = st[1]
		m := llmdMeasured[r.name]
		t.Logf("%s at QPS 20: %.0f output tok/s (measured %.0f), TTFT mean %.2f s (measured %.2f), p90 %.2f s (measured %.2f); simulated in %v",
			r.name, st[1][0], m[3], st[1][2], m[5], st[1][1], m[4], res.Wall.Round(time.Millisecond))
	}
	p, r := got["precise-scheduling"], got["random-scheduling"]
	if gain := p[0] / r[0]; gain < 1.4 || gain > 2.6 {
		t.Errorf("precise routing served %.2f× random's output tokens per second; measured 1.86×", gain)
	}
	if ratio := r[2] / p[2]; ratio < 10 {
		t.Errorf("random's mean TTFT %.2f s is %.1f× precise's %.2f s; measured 69×", r[2], ratio, p[2])
	}
}

// llmdFullLadder runs the report's ladder for the four schedulers and
// prints predicted against measured.
func llmdFullLadder(t *testing.T) {
	plan := llmdPlan(t, 0)
	var b strings.Builder
	fmt.Fprintln(&b, "| scheduler | output tok/s measured | predicted | error | TTFT mean s measured | predicted | TTFT p90 s measured | predicted | QPS 20: tok/s measured | predicted | TTFT mean measured | predicted |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range llmdRouters {
		res, err := Run(context.Background(), Config{Replica: llmdServer(), Plan: plan, Replicas: 8, Router: r.cfg})
		if err != nil {
			t.Fatal(err)
		}
		st := llmdStages(t, res, plan)
		var mean [3]float64
		for _, s := range st[1:] { // the report's summary: the stages after the warm-up
			for k := range mean {
				mean[k] += s[k] / float64(len(st)-1)
			}
		}
		m := llmdMeasured[r.name]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %+.0f%% | %.3g | %.3g | %.3g | %.3g | %.0f | %.0f | %.3g | %.3g |\n", r.name, m[0], mean[0], 100*(mean[0]/m[0]-1),
			m[2], mean[2], m[1], mean[1], m[3], st[4][0], m[5], st[4][2])
		t.Logf("%s simulated in %v (%d engine steps)", r.name, res.Wall.Round(time.Second), res.Steps)
	}
	t.Log("\n" + b.String())
}

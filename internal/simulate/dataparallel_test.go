package simulate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// TestDataParallelRanksShareTheLoad: --data-parallel-size 2 runs two ranks
// behind one server, each on its own clock: a burst that saturates one
// engine is split evenly between them and served in about half the time,
// and the server's registry carries each rank's series by engine label.
func TestDataParallelRanksShareTheLoad(t *testing.T) {
	var samples []workload.Sample
	offsets := make([]time.Duration, 256)
	for i := range offsets {
		p := distinct(512, 600*i)
		samples = append(samples, workload.Sample{PromptIDs: p, PromptLen: len(p), OutputLen: 64})
	}
	plan := &workload.Plan{Prompts: samples, Stages: []workload.Stage{{Offsets: offsets}}}
	run := func(dp int) *Result {
		rc := server()
		rc.MaxNumSeqs = 32
		rc.DataParallelSize = dp
		res, err := Run(context.Background(), Config{Replica: rc, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Outputs {
			if !o.Success {
				t.Fatalf("dp %d: %+v", dp, o)
			}
		}
		return res
	}
	one, two := run(1), run(2)
	if len(two.Replicas) != 2 || two.Replicas[0].Requests != 128 || two.Replicas[1].Requests != 128 {
		t.Fatalf("ranks %+v, want two of 128 requests each", two.Replicas)
	}
	if r := float64(two.Duration) / float64(one.Duration); r < 0.45 || r > 0.6 {
		t.Errorf("two ranks took %v, one %v (%.2f×): want about half", two.Duration, one.Duration, r)
	}
	s := gatherText(t, two.Gatherer)
	for _, engine := range []string{"0", "1"} {
		if v, _ := s.Sum("vllm:request_success_total", promtext.Labels{"engine": engine}); v != 128 {
			t.Errorf("engine %s: %v requests finished in the registry, want 128", engine, v)
		}
	}
}

// TestDataParallelExpertParallel: with --enable-expert-parallel each rank
// of --data-parallel-size 2 holds half the experts of a lone rank (EP =
// TP × DP) and so more KV blocks, as the server's ranks do.
func TestDataParallelExpertParallel(t *testing.T) {
	p := distinct(64, 0)
	plan := &workload.Plan{Prompts: []workload.Sample{{PromptIDs: p, PromptLen: len(p), OutputLen: 4}},
		Stages: []workload.Stage{{Offsets: []time.Duration{0}}}}
	blocks := func(dp int) string {
		rc := server()
		rc.Sim = sim.Config{Hardware: "h100", Model: "mixtral-8x7b", TensorParallel: 2, ExpertParallel: true}
		rc.DataParallelSize = dp
		reg := prometheus.NewRegistry()
		rc.Registerer, rc.Gatherer = reg, reg
		if _, err := Run(context.Background(), Config{Replica: rc, Plan: plan}); err != nil {
			t.Fatal(err)
		}
		return gatherText(t, reg).Info("vllm:cache_config_info")["num_gpu_blocks"]
	}
	one, two := blocks(1), blocks(2)
	n1, err1 := strconv.Atoi(one)
	n2, err2 := strconv.Atoi(two)
	if err1 != nil || err2 != nil || n2 <= n1 {
		t.Errorf("num_gpu_blocks %q a rank of TP 2 × DP 2 with expert parallelism, %q a lone rank: want more", two, one)
	}
}

package metrics

import (
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// TestSpecDecodeFamilies: with speculation configured the four
// vllm:spec_decode_* counters are exported as vLLM's SpecDecodingProm
// writes them (HELP, TYPE, model_name and engine, a per-position series
// for each of the k positions from zero), they add up the steps'
// counts, and without speculation none of them exists.
func TestSpecDecodeFamilies(t *testing.T) {
	cfg := testConfig()
	cfg.NumSpeculativeTokens = 3
	m, reg := newTestMetrics(t, cfg)
	for _, ev := range []engine.StepEvent{
		{SpecDrafts: 2, SpecDraftTokens: 6, SpecAccepted: 4, SpecAcceptedPerPos: []int{2, 1, 1}},
		{SpecDrafts: 1, SpecDraftTokens: 2, SpecAccepted: 1, SpecAcceptedPerPos: []int{1, 0, 0}},
		{}, // a step without drafts
	} {
		m.ObserveStep(&ev)
	}
	text := scrape(t, reg)
	for _, want := range []string{
		"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n# TYPE vllm:spec_decode_num_drafts_total counter\n" +
			`vllm:spec_decode_num_drafts_total{engine="0",model_name="test-model"} 3.0` + "\n",
		"# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.\n# TYPE vllm:spec_decode_num_draft_tokens_total counter\n" +
			`vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="test-model"} 8.0` + "\n",
		"# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.\n# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n" +
			`vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="test-model"} 5.0` + "\n",
		"# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.\n# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n" +
			`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="test-model",position="0"} 3.0` + "\n" +
			`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="test-model",position="1"} 1.0` + "\n" +
			`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="test-model",position="2"} 1.0` + "\n",
		"# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.\n# TYPE vllm:spec_decode_num_drafts_created gauge\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the exposition lacks\n%s", want)
		}
	}
	// vLLM's logger creates them first: they come before the engine's
	// other families.
	if i, j := strings.Index(text, "vllm:spec_decode_num_drafts_total"), strings.Index(text, "vllm:estimated_flops_per_gpu_total"); i < 0 || j < 0 || i > j {
		t.Errorf("spec-decode families at %d, estimated_flops at %d: want them first", i, j)
	}

	_, plain := newTestMetrics(t, testConfig())
	if text := scrape(t, plain); strings.Contains(text, "spec_decode") {
		t.Error("spec-decode families exported without speculation")
	}
}

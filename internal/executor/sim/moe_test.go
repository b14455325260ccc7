package sim

import (
	"strings"
	"testing"
)

// TestMoEDeployments: a mixture of experts runs from its config's shape,
// with its experts placed by --enable-expert-parallel; what the simulator
// cannot price on it (adapters) or place (experts of a dense model) is
// refused by name.
func TestMoEDeployments(t *testing.T) {
	e, err := New(Config{Hardware: "h100", Model: "mixtral-8x7b", TensorParallel: 4, ExpertParallel: true})
	if err != nil {
		t.Fatal(err)
	}
	if cm := e.CostModel(); cm.EP != 4 || cm.Model.MoE == nil {
		t.Errorf("EP %d, experts %+v", cm.EP, cm.Model.MoE)
	}
	blocks, err := e.KVCacheBlocks(0.9, 0, 16)
	if err != nil {
		t.Error(err)
	}
	// Two data-parallel ranks of TP 4: the experts spread over all eight
	// GPUs (EP 8), so each holds half the experts' weights and more KV.
	dp, err := New(Config{Hardware: "h100", Model: "mixtral-8x7b", TensorParallel: 4, ExpertParallel: true, DataParallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cm := dp.CostModel(); cm.EP != 8 {
		t.Errorf("TP 4 × DP 2: EP %d, want 8", cm.EP)
	}
	if more, err := dp.KVCacheBlocks(0.9, 0, 16); err != nil || more <= blocks {
		t.Errorf("TP 4 × DP 2: %d KV blocks a rank (%v), want more than one rank's %d", more, err, blocks)
	}
	// Without expert parallelism a rank holds every expert's slice.
	tpOnly, err := New(Config{Hardware: "h100", Model: "mixtral-8x7b", TensorParallel: 4, DataParallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cm := tpOnly.CostModel(); cm.EP != 0 {
		t.Errorf("DP 2 without expert parallelism: EP %d", cm.EP)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Hardware: "h100", Model: "llama-3.1-8b", ExpertParallel: true}, "--enable-expert-parallel"},
		{Config{Hardware: "h100", Model: "mixtral-8x7b", ExpertParallel: true, DataParallel: -1}, "--data-parallel-size -1"},
		{Config{Hardware: "h100", Model: "qwen3-30b-a3b", LoRA: &LoRA{MaxLoRAs: 1, Rank: 8}}, "--enable-lora"},
		{Config{Hardware: "h100", Model: "deepseek-v2-lite", LoRA: &LoRA{MaxLoRAs: 1, Rank: 8}}, "--enable-lora"},
		{Config{Hardware: "h100", Model: "llama-4-scout-17b-16e-fp8", TensorParallel: 2, Quantization: "fp8"}, "compressed-tensors"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

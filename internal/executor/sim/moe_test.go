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
	if _, err := e.KVCacheBlocks(0.9, 0, 16); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Hardware: "h100", Model: "llama-3.1-8b", ExpertParallel: true}, "--enable-expert-parallel"},
		{Config{Hardware: "h100", Model: "qwen3-30b-a3b", LoRA: &LoRA{MaxLoRAs: 1, Rank: 8}}, "--enable-lora"},
		{Config{Hardware: "h100", Model: "deepseek-v2-lite", LoRA: &LoRA{MaxLoRAs: 1, Rank: 8}}, "--enable-lora"},
		{Config{Hardware: "h100", Model: "llama-4-scout-17b-16e-fp8", TensorParallel: 2, Quantization: "fp8"}, "compressed-tensors"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

package sim

import (
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// TestFP8 prices FP8 weights and KV as vLLM's --quantization fp8 and
// --kv-cache-dtype fp8 run them on Hopper: decode reads half the bytes,
// prefill's GEMMs run at the FP8 rate, the KV cache holds twice the
// tokens.
func TestFP8(t *testing.T) {
	bf16, err := New(Config{Hardware: "h200", Model: "llama-3.1-8b"})
	if err != nil {
		t.Fatal(err)
	}
	fp8, err := New(Config{Hardware: "h200", Model: "llama-3.1-8b", Quantization: "fp8", KVCacheDtype: "fp8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		lo, hi float64 // fp8's time over bf16's
		bf, f8 float64
	}{
		// Decode streams the weights: about half the bytes, the kernels'
		// latencies and the BF16 LM head unchanged.
		{"decode batch 1", 0.5, 0.8, bf16.StepCost(decodeBatch(1, 512)).Duration.Seconds(), fp8.StepCost(decodeBatch(1, 512)).Duration.Seconds()},
		// Prefill is arithmetic: the FP8 GEMMs measured 1.7–1.9× BF16's.
		{"prefill 8192", 0.5, 0.75, bf16.StepCost(prefillBatch(8192, 0)).Duration.Seconds(), fp8.StepCost(prefillBatch(8192, 0)).Duration.Seconds()},
	} {
		if r := c.f8 / c.bf; r < c.lo || r > c.hi {
			t.Errorf("%s: fp8 %.2f ms, bf16 %.2f ms: ratio %.2f, want %.2f–%.2f", c.name, 1e3*c.f8, 1e3*c.bf, r, c.lo, c.hi)
		}
	}
	b1, err := bf16.KVCacheBlocks(0.9, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	b8, err := fp8.KVCacheBlocks(0.9, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	// Half the KV bytes a token, and 8 GB less of weights.
	if r := float64(b8) / float64(b1); r < 2 || r > 2.2 {
		t.Errorf("KV blocks: %d with fp8, %d with bf16 (%.2f×), want a little over 2×", b8, b1, r)
	}
}

func TestDtypesRefusedByName(t *testing.T) {
	h200, err := profiles.LookupHardware("h200")
	if err != nil {
		t.Fatal(err)
	}
	noFP8 := h200.Calib
	noFP8.FP8 = nil
	// Without FP8 tensor cores (A100), Marlin widens an FP8 checkpoint.
	if _, err := New(Config{Hardware: "a100-80g", Model: "llama-4-scout-17b-16e-fp8", TensorParallel: 4}); err != nil {
		t.Errorf("Scout FP8 on A100s: %v", err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Hardware: "a100-80g", Model: "llama-3.1-8b", Quantization: "fp8"}, "--quantization fp8"},
		{Config{Hardware: "h200", Model: "llama-3.1-8b", Quantization: "awq"}, "--quantization awq"},
		{Config{Hardware: "h200", Model: "llama-3.1-8b", KVCacheDtype: "fp16"}, "--kv-cache-dtype fp16"},
		// A W8A8 checkpoint on a GPU with FP8 tensor cores and no FP8
		// terms (vLLM would run it on them), and on a calibration
		// without them.
		{Config{Hardware: "l40s", Model: "llama-4-scout-17b-16e-fp8", TensorParallel: 4}, "no FP8 GEMMs measured"},
		{Config{Hardware: "h200", Model: "deepseek-v3", TensorParallel: 8, Calib: &noFP8}, "no FP8 GEMMs measured"},
		{Config{Hardware: "h200", Model: "llama-3.1-8b", Quantization: "fp8", Calib: &noFP8}, "--quantization fp8"},
	} {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

func costModel(t *testing.T, hw, model string, tp int) *CostModel {
	t.Helper()
	h, err := LookupHardware(hw)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return &CostModel{HW: h, Model: m, TP: tp}
}

// decodeBatch is n sequences each decoding one token after ctx tokens.
func decodeBatch(n, ctx int) *engine.Batch {
	b := &engine.Batch{}
	for i := range n {
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1}, Pos: ctx, NumPrompt: ctx / 2, Sample: true})
		b.NumTokens++
	}
	return b
}

// prefillBatch is one sequence prefilling tokens prompt tokens from pos.
func prefillBatch(tokens, pos int) *engine.Batch {
	return &engine.Batch{
		Seqs:      []engine.SeqBatch{{Tokens: make([]int, tokens), Pos: pos, NumPrompt: pos + tokens, Sample: true}},
		NumTokens: tokens,
	}
}

func overhead(cm *CostModel, seqs, sampled int) time.Duration {
	c := cm.HW.Calib
	return c.StepOverhead + time.Duration(cm.Model.Layers)*c.LayerOverhead +
		time.Duration(seqs)*c.RequestOverhead + time.Duration(sampled)*c.OutputTokenOverhead
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestDecodeBatchOneIsMemoryBound(t *testing.T) {
	for _, hw := range []string{"h200", "h100", "a100-80g", "l40s"} {
		cm := costModel(t, hw, "llama-3.1-8b", 1)
		c := cm.Step(decodeBatch(1, 512))
		if !c.MemoryBound() {
			t.Errorf("%s: batch-1 decode compute %v >= memory %v", hw, c.Compute, c.Memory)
		}
		weights := cm.Model.WeightBytes() / cm.HW.MemBandwidth * cm.HW.Calib.WeightLoadFactor
		want := seconds(weights) + overhead(cm, 1, 1)
		// The KV of 512 tokens adds well under 1% to 16 GB of weights.
		if !near(c.Duration.Seconds(), want.Seconds(), 0.01) {
			t.Errorf("%s: batch-1 decode %v, want about %v (weights/bandwidth × %.1f + overheads)",
				hw, c.Duration, want, cm.HW.Calib.WeightLoadFactor)
		}
		if c.DecodeTokens != 1 || c.PrefillTokens != 0 || c.Sampled != 1 {
			t.Errorf("%s: counted %+v", hw, c)
		}
	}
}

func TestPrefillIsComputeBound(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	c := cm.Step(prefillBatch(8192, 0))
	if c.MemoryBound() {
		t.Fatalf("8k prefill memory %v >= compute %v", c.Memory, c.Compute)
	}
	// At least the dense matmuls at prefill MFU; attention adds to it.
	floor := 2 * cm.Model.matmulParams() * 8192 / (cm.HW.PeakFLOPs * cm.HW.Calib.MFUPrefill)
	if c.Compute.Seconds() < floor || c.Compute.Seconds() > 1.3*floor {
		t.Errorf("compute %v, want in [%v, 1.3×] of the matmul time", c.Compute, seconds(floor))
	}
	if c.PrefillTokens != 8192 || c.DecodeTokens != 0 {
		t.Errorf("counted prefill %d decode %d", c.PrefillTokens, c.DecodeTokens)
	}
}

func TestAttentionGrowsWithContext(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	early, late := cm.Step(prefillBatch(2048, 0)), cm.Step(prefillBatch(2048, 30000))
	if late.FLOPs <= early.FLOPs || late.ReadBytes <= early.ReadBytes || late.Duration <= early.Duration {
		t.Errorf("a chunk at position 30000 is not dearer than at 0: %+v vs %+v", late, early)
	}
	short, long := cm.Step(decodeBatch(64, 100)), cm.Step(decodeBatch(64, 16000))
	if long.Memory <= short.Memory {
		t.Errorf("decode over 16k context memory %v <= over 100 tokens %v", long.Memory, short.Memory)
	}
}

func TestDecodeBatchingIsSublinear(t *testing.T) {
	cm := costModel(t, "h100", "llama-3.1-8b", 1)
	prev := cm.Step(decodeBatch(1, 1024))
	for n := 2; n <= 512; n *= 2 {
		c := cm.Step(decodeBatch(n, 1024))
		if c.Duration <= prev.Duration || c.Duration >= 2*prev.Duration {
			t.Errorf("batch %d step %v, batch %d step %v: want more but less than double", n, c.Duration, n/2, prev.Duration)
		}
		prev = c
	}
}

func TestTensorParallel(t *testing.T) {
	for _, b := range []*engine.Batch{decodeBatch(1, 1000), decodeBatch(128, 2000), prefillBatch(4096, 0)} {
		one := costModel(t, "h200", "llama-3.1-70b", 1).Step(b)
		two := costModel(t, "h200", "llama-3.1-70b", 2).Step(b)
		if one.AllReduce != 0 || two.AllReduce <= 0 {
			t.Errorf("all-reduce tp1 %v tp2 %v", one.AllReduce, two.AllReduce)
		}
		if two.Duration >= one.Duration {
			t.Errorf("tp2 step %v not faster than tp1 %v", two.Duration, one.Duration)
		}
		if !near(two.FLOPs, one.FLOPs/2, 1e-9) {
			t.Errorf("per-GPU FLOPs tp2 %v, tp1 %v", two.FLOPs, one.FLOPs)
		}
		if two.ReadBytes >= one.ReadBytes || two.WriteBytes >= one.WriteBytes {
			t.Errorf("per-GPU bytes did not shrink: tp1 %v/%v tp2 %v/%v", one.ReadBytes, one.WriteBytes, two.ReadBytes, two.WriteBytes)
		}
	}
	// The all-reduce grows with the tokens in the step and with a slower link.
	small := costModel(t, "h100", "llama-3.1-70b", 2).Step(decodeBatch(1, 100))
	big := costModel(t, "h100", "llama-3.1-70b", 2).Step(prefillBatch(8192, 0))
	pcie := costModel(t, "l40s", "llama-3.1-70b", 2).Step(prefillBatch(8192, 0))
	if !(small.AllReduce < big.AllReduce && big.AllReduce < pcie.AllReduce) {
		t.Errorf("all-reduce: decode %v, nvlink prefill %v, pcie prefill %v", small.AllReduce, big.AllReduce, pcie.AllReduce)
	}
}

func TestReplicatedKVHeads(t *testing.T) {
	m, err := LookupModel("llama-3.1-70b") // 8 KV heads
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tp, heads int }{{1, 8}, {2, 4}, {8, 1}, {16, 1}} {
		if got := m.KVHeadsPerGPU(tc.tp); got != tc.heads {
			t.Errorf("tp %d: %d KV heads per GPU, want %d", tc.tp, got, tc.heads)
		}
	}
}

func TestWorkEstimates(t *testing.T) {
	cm := costModel(t, "h200", "llama-3.1-8b", 1)
	kv := float64(cm.Model.KVBytesPerToken(1))
	c := cm.Step(decodeBatch(8, 999))
	// Attention over 1,000 tokens adds about 3% to the dense matmuls.
	if want := 8 * 2 * cm.Model.Params; !near(c.FLOPs, want, 0.05) {
		t.Errorf("decode FLOPs %.3g, want about 2·params per token = %.3g", c.FLOPs, want)
	}
	if want := cm.Model.WeightBytes() + 8*1000*kv; !near(c.ReadBytes, want, 1e-9) {
		t.Errorf("read bytes %.6g, want weights + context KV = %.6g", c.ReadBytes, want)
	}
	if want := 8 * kv; c.WriteBytes != want {
		t.Errorf("write bytes %v, want %v", c.WriteBytes, want)
	}
	if got := cm.Step(&engine.Batch{}); got != (Cost{}) {
		t.Errorf("empty batch costs %+v", got)
	}
}

func TestMixedStepBlendsMFU(t *testing.T) {
	cm := costModel(t, "h100", "llama-3.1-8b", 1)
	p, d := prefillBatch(1024, 0), decodeBatch(64, 500)
	mixed := &engine.Batch{Seqs: append(append([]engine.SeqBatch{}, p.Seqs...), d.Seqs...)}
	cp, cd, cmix := cm.Step(p), cm.Step(d), cm.Step(mixed)
	if diff := cmix.Compute - (cp.Compute + cd.Compute); diff < -time.Microsecond || diff > time.Microsecond {
		t.Errorf("mixed compute %v, want prefill %v + decode %v", cmix.Compute, cp.Compute, cd.Compute)
	}
	if cmix.PrefillTokens != 1024 || cmix.DecodeTokens != 64 {
		t.Errorf("counted prefill %d decode %d", cmix.PrefillTokens, cmix.DecodeTokens)
	}
}

func TestKVCacheBytes(t *testing.T) {
	h200, _ := LookupHardware("h200")
	a100, _ := LookupHardware("a100-80g")
	m8, _ := LookupModel("llama-3.1-8b")
	m70, _ := LookupModel("llama-3.1-70b")
	q05, _ := LookupModel("qwen2.5-0.5b")

	got, err := KVCacheBytes(h200, m8, 1, 0.92, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.92*141e9 - 16.06e9 - h200.Calib.ActivationReserveBytes
	if !near(float64(got), want, 0.001) {
		t.Errorf("8b on h200 at 0.92: %d bytes, want about %.4g", got, want)
	}
	if blocks := KVBlocks(got, m8, 1, 16); blocks != int(got/(16*131072)) || blocks < 50000 {
		t.Errorf("8b on h200: %d blocks of 16 tokens", blocks)
	}

	for _, tc := range []struct {
		name    string
		hw      Hardware
		m       Model
		tp      int
		util    float64
		errWant string
	}{
		{"70b on one a100", a100, m70, 1, 0.9, "--gpu-memory-utilization"},
		{"70b on two a100", a100, m70, 2, 0.9, "--tensor-parallel-size"},
		{"util above 1", h200, m8, 1, 1.5, "--gpu-memory-utilization"},
		{"util zero", h200, m8, 1, 0, "--gpu-memory-utilization"},
		{"util NaN", h200, m8, 1, math.NaN(), "--gpu-memory-utilization"},
		{"heads not divisible", h200, q05, 4, 0.9, "--tensor-parallel-size"},
	} {
		if _, err := KVCacheBytes(tc.hw, tc.m, tc.tp, tc.util, 0); err == nil || !strings.Contains(err.Error(), tc.errWant) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.errWant)
		}
	}
	if got, err := KVCacheBytes(a100, m70, 4, 0.9, 0); err != nil || got <= 0 {
		t.Errorf("70b on four a100: %d, %v", got, err)
	}
	if got, err := KVCacheBytes(a100, m70, 1, 0.9, 5<<30); err != nil || got != 5<<30 {
		t.Errorf("override: %d, %v", got, err)
	}
	if _, err := KVCacheBytes(a100, m70, 1, 0.9, -1); err == nil {
		t.Error("negative override accepted")
	}
}

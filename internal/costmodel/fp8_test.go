package costmodel

import "testing"

// TestAdditiveFP8ReadFactor: on the H100's additive GEMMs, whose read
// factor carries each GEMM's latency, an FP8 model's batch-1 decode reads
// its one-byte weights at that factor too: FP8 halves the bytes, not the
// latency too (the factor of 1 borrowed from the H200's overlapped form,
// which prices latency apart, made it 2.4× faster than bf16).
func TestAdditiveFP8ReadFactor(t *testing.T) {
	bf16 := costModel(t, "h100", "llama-3.1-8b", 1)
	fp8 := costModel(t, "h100", "llama-3.1-8b", 1)
	fp8.Model.FP8 = true
	b, f := bf16.Step(decodeBatch(1, 512)), fp8.Step(decodeBatch(1, 512))
	if !f.MemoryBound() {
		t.Fatal("batch-1 FP8 decode is not bound by its weight read")
	}
	m := &fp8.Model
	bytes := m.MatmulParams() + m.HeadParams()*m.BytesPerParam
	if want := seconds(bytes * fp8.HW.Calib.WeightLoadFactor / fp8.HW.MemBandwidth); !near(f.GEMM.Seconds(), want.Seconds(), 1e-6) {
		t.Errorf("FP8 GEMMs %v, want the read at the H100's factor: %v", f.GEMM, want)
	}
	if r := b.GEMM.Seconds() / f.GEMM.Seconds(); r > 2 {
		t.Errorf("FP8 decode GEMMs %.2f× faster than bf16's, more than the halved bytes give", r)
	}
}

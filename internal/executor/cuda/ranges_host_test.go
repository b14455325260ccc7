package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// The kernels' ranges on the host simulation: fp16 activations that
// SiLU·up overflows, and the bf16 KV cache of bf16 models.

// dtCode is the host jobs' number for a type.
func dtCode(dt cuda.DType) int { return dtypeCode(dt) }

// halves decodes 16-bit values of type dt.
func halves(dt cuda.DType, h []uint16) []float32 { return fromHalf(dt, h) }

// TestSiLUMulF16KeepsOutliersOnHost: SiLU·up of 120,000 and -100,000 (a
// model's outlier channels) is inf in fp16; the fp16 kernel divides such
// a row by the least power of two that brings it within range and hands
// the divisor to the rmsnorm after the down projection, which multiplies
// it back: the residual stream gets the finite, exact-to-rounding sum the
// float32 arithmetic gives, where it got inf (then NaN from the norm).
// Rows within range are stored as before, unscaled.
func TestSiLUMulF16KeepsOutliersOnHost(t *testing.T) {
	const n, F, H = 3, 1000, 64
	r := rand.New(rand.NewPCG(31, 32))
	gu := randoms(r, n*2*F, 2)
	at := func(row, i int) (*float32, *float32) { return &gu[row*2*F+i], &gu[row*2*F+F+i] }
	g, u := at(1, 5)
	*g, *u = 300, 400 // 120,000
	g, u = at(1, 900)
	*g, *u = 50, -2000 // -100,000
	g, u = at(2, 17)
	*g, *u = 1e4, 29.5 // 295,000: four halvings
	var in simIn
	in.ints(dtCode(cuda.F16), n, F).f32s(gu)
	out := runSim(t, "silu", &in)
	act, scale := halves(cuda.F16, out.u16s(n*F)), out.f32s(n)
	want := make([]float64, n*F) // SiLU·up in float64
	for row := range n {
		for i := range F {
			g, u := float64(gu[row*2*F+i]), float64(gu[row*2*F+F+i])
			want[row*F+i] = g / (1 + math.Exp(-g)) * u
		}
	}
	for row, s := range []float32{1, 2, 8} {
		if scale[row] != s {
			t.Errorf("row %d: divisor %v, want %v", row, scale[row], s)
		}
	}
	for i, a := range act {
		got := float64(a) * float64(scale[i/F])
		if math.IsInf(float64(a), 0) || math.IsNaN(float64(a)) {
			t.Fatalf("row %d, channel %d: %v in fp16 (SiLU·up %v)", i/F, i%F, a, want[i])
		}
		if math.Abs(got-want[i]) > 1.0/1024*math.Abs(want[i])+1e-6*float64(scale[i/F]) {
			t.Errorf("row %d, channel %d: %v × %v, want %v", i/F, i%F, a, scale[i/F], want[i])
		}
	}
	// The down projection (a GEMM: float32 sums of the fp16 values), then
	// the rmsnorm that adds it to the residual stream times the divisor.
	w := randoms(r, H*F, 0.02)
	o := make([]float32, n*H)
	wantSum, mag := make([]float64, n*H), make([]float64, n*H) // and Σ|terms|: fp16's rounding scales with it
	for row := range n {
		for h := range H {
			var acc, ref float64
			for i := range F {
				acc += float64(act[row*F+i]) * float64(w[h*F+i])
				ref += want[row*F+i] * float64(w[h*F+i])
				mag[row*H+h] += math.Abs(want[row*F+i] * float64(w[h*F+i]))
			}
			o[row*H+h], wantSum[row*H+h] = float32(acc), ref
		}
	}
	x := randoms(r, n*H, 1)
	var nin simIn
	nin.ints(dtCode(cuda.F16), n, H, 0, 1).f32s([]float32{1e-6}).f32s(x).f32s(o).f32s(scale).f32s(filled(H, 1))
	nout := runSim(t, "rmsnorm", &nin)
	normed, stream := halves(cuda.F16, nout.u16s(n*H)), nout.f32s(n*H)
	for i, v := range stream {
		ref := float64(x[i]) + wantSum[i]
		if math.Abs(float64(v)-ref) > mag[i]/2048+1e-5*math.Abs(ref) {
			t.Errorf("residual %d: %v, want %v", i, v, ref)
		}
		if math.IsInf(float64(normed[i]), 0) || math.IsNaN(float64(normed[i])) {
			t.Errorf("normed %d: %v", i, normed[i])
		}
	}
}

// TestOtherTypesUnscaledOnHost: bf16 and f32 activations keep float's
// range: their silu_mul writes SiLU·up as it is (no divisor).
func TestOtherTypesUnscaledOnHost(t *testing.T) {
	const n, F = 2, 300
	r := rand.New(rand.NewPCG(33, 34))
	gu := randoms(r, n*2*F, 2)
	gu[7], gu[F+7] = 300, 400
	for _, dt := range []cuda.DType{cuda.F32, cuda.BF16} {
		var in simIn
		in.ints(dtCode(dt), n, F).f32s(gu)
		out := runSim(t, "silu", &in)
		var act []float32
		if dt == cuda.F32 {
			act = out.f32s(n * F)
		} else {
			act = halves(dt, out.u16s(n*F))
		}
		if s := out.f32s(n); s[0] != 1 || s[1] != 1 {
			t.Errorf("%s: divisors %v", dt, s)
		}
		if got := float64(act[7]); math.Abs(got-120000) > 120000*roundingOf(dt) {
			t.Errorf("%s: SiLU·up of 300 and 400 is %v", dt, got)
		}
	}
}

// TestQKVRopeCacheTypeOnHost: the QKV epilogue writes K and V into the
// cache in the model's cache type at the tokens' slots: bf16 for a bf16
// model (it was fp16 whatever the model), fp16 for the others.
func TestQKVRopeCacheTypeOnHost(t *testing.T) {
	c := model.Config{Arch: "llama", Heads: 4, KVHeads: 2, HeadDim: 64, RopeDims: 64, RopeBase: 10000, RopeMode: model.RopeNormal, NormEps: 1e-5}
	c.Layers, c.Hidden = 1, c.Heads*c.HeadDim
	const B, blocks, maxPos = 16, 8, 100
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	stride := qd + 2*kvd
	pos := []int32{0, 15, 16, 99}
	slots := []int32{5*B + 0, 5*B + 15, 2*B + 0, 7*B + 3}
	r := rand.New(rand.NewPCG(35, 36))
	qkv := randoms(r, len(pos)*stride, 3)
	run := model.NewRunner(&model.Weights{Config: c}, 1, B, 1)
	defer run.Close()
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		kv := kvType(dt)
		var in simIn
		in.ints(dtCode(dt), len(pos), c.Heads, c.KVHeads, c.HeadDim, c.RopeDims, 0, B, blocks, maxPos)
		in.f32s(qkv).f32s(c.RopeTable(maxPos)).i32s(pos).i32s(slots)
		out := runSim(t, "qkv_rope", &in)
		out.f32s(len(pos) * stride)
		cache := blocks * c.KVHeads * B * c.HeadDim
		kc, vc := out.u16s(cache), out.u16s(cache)
		var worst float64
		for i, p := range pos {
			k := append([]float32(nil), qkv[i*stride+qd:i*stride+qd+kvd]...)
			v := qkv[i*stride+qd+kvd : (i+1)*stride]
			run.Rope(k, int(p))
			s := int(slots[i])
			for h := range c.KVHeads {
				base := ((s/B*c.KVHeads+h)*B + s%B) * c.HeadDim
				for j := range c.HeadDim {
					gotK, gotV := halves(kv, kc[base+j:base+j+1])[0], halves(kv, vc[base+j:base+j+1])[0]
					if wv := roundTo(kv, v[h*c.HeadDim+j]); gotV != wv {
						t.Fatalf("%s: v of token %d, head %d, dim %d in the %s cache: %v, want %v", dt, i, h, j, kv, gotV, wv)
					}
					worst = max(worst, math.Abs(float64(gotK-k[h*c.HeadDim+j]))/max(math.Abs(float64(k[h*c.HeadDim+j])), 1))
				}
			}
		}
		if worst > 2*roundingOf(kv) {
			t.Errorf("%s: k in the %s cache off by %.3g of its value", dt, kv, worst)
		}
	}
	if b := tensor.BF16ToF32(tensor.F32ToBF16(1e6)); math.Abs(float64(b)-1e6) > 1e6/256 || !math.IsInf(float64(tensor.F16ToF32(tensor.F32ToF16(1e6))), 1) {
		t.Errorf("bf16 holds 1e6 as %v, fp16 should not hold it", b)
	}
}

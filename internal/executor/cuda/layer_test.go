package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// The layer kernels against the CPU executor's code (internal/model,
// internal/tensor) on random inputs of real models' shapes.

var dtypes = []cuda.DType{cuda.F32, cuda.F16, cuda.BF16}

func TestKernelEmbed(t *testing.T) {
	d := openTestDevice(t)
	r := rand.New(rand.NewPCG(1, 2))
	const vocab, H = 1000, 896
	table := randoms(r, vocab*H, 0.1)
	tokens := []int32{0, 999, 17, 17, 512}
	for _, dt := range dtypes {
		tp := d.put(t, dt, table)
		x, ptok := d.testAlloc(t, int64(4*len(tokens)*H)), putInts(t, d, tokens)
		d.run(t, func() error { return d.embed(dt, tp, ptok, x, len(tokens), H) })
		got := d.get(t, cuda.F32, x, len(tokens)*H)
		want := make([]float32, 0, len(got))
		for _, tok := range tokens {
			for _, v := range table[int(tok)*H : int(tok+1)*H] {
				want = append(want, roundTo(dt, v))
			}
		}
		checkClose(t, "embed "+dt.String(), got, want, 0) // a lookup: exact
	}
}

func TestKernelRMSNormResidual(t *testing.T) {
	d := openTestDevice(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, H := range []int{896, 4096} { // Qwen2.5-0.5B, Llama-3.1-8B
		const n = 6
		x, delta, w := randoms(r, n*H, 1), randoms(r, n*H, 0.5), randoms(r, H, 0.2)
		rows := []int32{5, 0, 3} // the sampled rows of a step
		for _, dt := range dtypes {
			// Every row with the residual added back; then the chosen rows
			// from the updated stream, without writing back.
			px, pd := d.put(t, cuda.F32, x), d.put(t, cuda.F32, delta)
			pw := d.put(t, cuda.F32, w)
			out := d.testAlloc(t, int64(n*H*dt.Size()))
			outRows, prows := d.testAlloc(t, int64(len(rows)*H*dt.Size())), putInts(t, d, rows)
			d.run(t, func() error {
				if err := d.rmsnorm(dt, px, pd, 0, 0, pw, out, n, H, 1e-6, true); err != nil {
					return err
				}
				return d.rmsnorm(dt, px, pd, 0, prows, pw, outRows, len(rows), H, 1e-6, false)
			})
			sum := make([]float32, n*H)
			want := make([]float32, n*H)
			for i := range sum {
				sum[i] = x[i] + delta[i]
			}
			for i := range n {
				model.RMSNorm(want[i*H:(i+1)*H], sum[i*H:(i+1)*H], w, 1e-6)
			}
			for i := range want {
				want[i] = roundTo(dt, want[i])
			}
			// One ulp of the output type: the kernel's sum of squares is
			// added in another order.
			bound := map[cuda.DType]float64{cuda.F32: 1e-6, cuda.F16: 1e-3, cuda.BF16: 8e-3}[dt]
			checkClose(t, "rmsnorm+residual "+dt.String(), d.get(t, dt, out, n*H), want, bound)
			checkClose(t, "residual written back", d.get(t, cuda.F32, px, n*H), sum, 0)
			var wantRows []float32
			for _, row := range rows {
				back := make([]float32, H)
				for i := range H {
					back[i] = sum[int(row)*H+i] + delta[int(row)*H+i] // delta added again, not written
				}
				o := make([]float32, H)
				model.RMSNorm(o, back, w, 1e-6)
				for _, v := range o {
					wantRows = append(wantRows, roundTo(dt, v))
				}
			}
			checkClose(t, "rmsnorm of chosen rows "+dt.String(), d.get(t, dt, outRows, len(rows)*H), wantRows, bound)
		}
	}
}

func TestKernelSiLUMul(t *testing.T) {
	d := openTestDevice(t)
	r := rand.New(rand.NewPCG(5, 6))
	const n, F = 3, 4864
	gu := randoms(r, n*2*F, 2)
	for _, dt := range dtypes {
		out, pgu, scale := d.testAlloc(t, int64(n*F*dt.Size())), d.put(t, cuda.F32, gu), d.testAlloc(t, 4*n)
		d.run(t, func() error { return d.siluMul(dt, pgu, out, scale, n, F) })
		var want []float32
		for i := range n {
			g := append([]float32(nil), gu[i*2*F:i*2*F+F]...)
			tensor.SiLUMul(g, gu[i*2*F+F:(i+1)*2*F])
			for _, v := range g {
				want = append(want, roundTo(dt, v))
			}
		}
		bound := map[cuda.DType]float64{cuda.F32: 1e-5, cuda.F16: 1e-3, cuda.BF16: 8e-3}[dt]
		checkClose(t, "silu·mul "+dt.String(), d.get(t, dt, out, n*F), want, bound)
	}
}

func TestKernelDequantQ8_0(t *testing.T) {
	d := openTestDevice(t)
	r := rand.New(rand.NewPCG(7, 8))
	const n = 32 * 4096
	v := randoms(r, n, 0.05)
	q, err := tensor.Quantize(gguf.Q8_0, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, n)
	if err := tensor.Dequantize(gguf.Q8_0, q, want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i] = tensor.RoundF16(want[i]) // Q8_0 is stored as fp16 on the GPU
	}
	src := d.testAlloc(t, int64(len(q)))
	out := d.testAlloc(t, 2*n)
	d.run(t, func() error {
		if err := cuda.CopyIn(d.stream, src, q); err != nil {
			return err
		}
		return d.dequantQ80(src, out, n)
	})
	checkClose(t, "Q8_0 → fp16", d.get(t, cuda.F16, out, n), want, 0)
}

// TestKernelSiLUMulF16Outliers is TestSiLUMulF16KeepsOutliersOnHost on
// the GPU: a row with SiLU·up past fp16's range comes out divided by a
// power of two, finite, with the divisor for the next rmsnorm.
func TestKernelSiLUMulF16Outliers(t *testing.T) {
	d := openTestDevice(t)
	r := rand.New(rand.NewPCG(15, 16))
	const n, F = 2, 4864
	gu := randoms(r, n*2*F, 2)
	gu[2*F+5], gu[2*F+F+5] = 300, 400 // row 1: 120,000
	out, pgu, scale := d.testAlloc(t, int64(2*n*F)), d.put(t, cuda.F32, gu), d.testAlloc(t, 4*n)
	d.run(t, func() error { return d.siluMul(cuda.F16, pgu, out, scale, n, F) })
	act, s := d.get(t, cuda.F16, out, n*F), d.get(t, cuda.F32, scale, n)
	if s[0] != 1 || s[1] != 2 {
		t.Errorf("divisors %v, want [1 2]", s)
	}
	if got := act[F+5] * s[1]; math.IsInf(float64(act[F+5]), 0) || math.Abs(float64(got)-120000) > 120000.0/1024 {
		t.Errorf("SiLU·up of 300 and 400: %v × %v", act[F+5], s[1])
	}
}

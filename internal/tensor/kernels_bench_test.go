package tensor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// BenchmarkMulBatch measures the matmul kernels at every feature level this
// CPU has. "l2" matrices (896×896, under 1 MiB) stay in cache and show the
// kernels' compute speed on one thread; "mem" matrices (64 Mi weights'
// worth of rows, twice the L3) stream from memory on two threads, which is
// what decode does: compare their GB/s (weight bytes read per second) with
// the machine's ≈45 GB/s read bandwidth. GFLOP/s counts 2 per multiply-add,
// for every token of the batch.
func BenchmarkMulBatch(b *testing.B) {
	types := []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.F16, gguf.BF16, gguf.F32}
	for _, size := range []struct {
		name            string
		rows, cols, thr int
		tokens          []int
	}{{"l2", 896, 1024, 1, []int{1, 4, 16, 32}}, {"mem", 0, 1024, 2, []int{1, 8, 32}}, {"prefill", 896, 1024, 2, []int{512}}} {
		for _, typ := range types {
			rows := size.rows
			rb, _ := typ.RowBytes(int64(size.cols))
			if rows == 0 {
				rows = int(64<<20/rb) &^ 15
			}
			r := rand.New(rand.NewPCG(1, 1))
			m, err := NewMatrix(typ, rows, size.cols, benchBlocks(typ, rows, size.cols, r))
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range size.tokens {
				for _, k := range levels() {
					b.Run(fmt.Sprintf("%s/%s/n%d/%s", size.name, typ, n, k), func(b *testing.B) {
						benchMul(b, m, n, k, size.thr)
					})
				}
			}
			// The repacked layout (x8) where this CPU runs it.
			if x8 := *m; x8.Repack(slices.Clone(m.Data)) {
				for _, n := range size.tokens {
					b.Run(fmt.Sprintf("%s/%sx8/n%d/%s", size.name, typ, n, detect()), func(b *testing.B) {
						benchMul(b, &x8, n, detect(), size.thr)
					})
				}
			}
		}
	}
}

func benchMul(b *testing.B, m *Matrix, n int, k isa, threads int) {
	m.isa = k
	defer func() { m.isa = detect() }()
	x := make([]float32, n*m.Cols)
	r := rand.New(rand.NewPCG(2, 2))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	out := make([]float32, n*m.Rows)
	p := NewPool(threads)
	defer p.Close()
	var s Scratch
	m.MulBatch(x, n, out, p, &s)
	b.SetBytes(int64(len(m.Data)))
	b.ReportAllocs()
	for b.Loop() {
		m.MulBatch(x, n, out, p, &s)
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)*2*float64(m.Rows)*float64(m.Cols)*float64(n)/sec/1e9, "GFLOP/s")
}

// benchBlocks is random weights with sane scales (random bytes would make
// some F16/F32 values NaN or subnormal, which slows float units down).
func benchBlocks(t gguf.TensorType, rows, cols int, r *rand.Rand) []byte {
	switch t {
	case gguf.F16, gguf.BF16, gguf.F32:
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out, err := Quantize(t, x, nil)
		if err != nil {
			panic(err)
		}
		return out
	}
	return randomBlocks(t, rows, cols, r, 0)
}

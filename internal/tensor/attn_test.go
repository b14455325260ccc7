package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionKernels checks Dots and AddWeighted at every kernel level
// against float64 sums, for head sizes the SIMD kernels take and ones they
// leave to Go, over strided runs as the KV cache lays them out.
func TestAttentionKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	defer func() { hostISA = detect() }()
	for _, k := range levels() {
		hostISA = k
		for _, d := range []int{8, 16, 48, 64, 128} {
			for _, n := range []int{1, 5, 16} {
				t.Run(fmt.Sprintf("%s/d%d/n%d", k, d, n), func(t *testing.T) {
					stride := 3*d + 8
					q := randFloats(r, d)
					kv := randFloats(r, (n-1)*stride+d)
					out := make([]float32, n)
					Dots(out, q, kv, stride)
					for i := range n {
						var want float64
						for j := range d {
							want += float64(q[j]) * float64(kv[i*stride+j])
						}
						if math.Abs(float64(out[i])-want) > 1e-4 {
							t.Fatalf("Dots[%d] = %v, want %v", i, out[i], want)
						}
					}
					w := randFloats(r, n)
					acc := randFloats(r, d)
					want := make([]float64, d)
					for j := range d {
						want[j] = float64(acc[j])
						for i := range n {
							want[j] += float64(w[i]) * float64(kv[i*stride+j])
						}
					}
					AddWeighted(acc, w, kv, stride)
					for j := range d {
						if math.Abs(float64(acc[j])-want[j]) > 1e-4 {
							t.Fatalf("AddWeighted[%d] = %v, want %v", j, acc[j], want[j])
						}
					}
				})
			}
		}
	}
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

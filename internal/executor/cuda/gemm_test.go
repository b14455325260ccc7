package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// TestGEMMAgainstCPU checks cuBLASLt's linear layers against the CPU
// executor's matmul (tensor.Matrix.MulBatch, which rounds activations to
// the weights' type as llama.cpp does) on Llama-3.1-8B's and
// Qwen2.5-0.5B's projection shapes.
func TestGEMMAgainstCPU(t *testing.T) {
	d := openTestDevice(t)
	pool := tensor.NewPool(4)
	defer pool.Close()
	r := rand.New(rand.NewPCG(21, 22))
	for _, tt := range []struct {
		dt      cuda.DType
		n, in   int
		out     int
		ggufTyp gguf.TensorType
	}{
		{cuda.BF16, 1, 4096, 6144, gguf.BF16},  // Llama-3.1-8B's fused QKV at decode
		{cuda.BF16, 64, 4096, 4096, gguf.BF16}, // its O projection at batch 64
		{cuda.BF16, 33, 14336, 4096, gguf.BF16},
		{cuda.F16, 5, 896, 9728, gguf.F16}, // Qwen2.5-0.5B's fused gate/up
		{cuda.F32, 3, 64, 512, gguf.F32},   // stories260K's output head
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", tt.dt, tt.n, tt.in, tt.out), func(t *testing.T) {
			w := randoms(r, tt.out*tt.in, 0.02)
			for i := range w {
				w[i] = roundTo(tt.dt, w[i])
			}
			x := randoms(r, tt.n*tt.in, 1)
			raw := make([]byte, tt.out*tt.in*tt.dt.Size())
			switch tt.dt {
			case cuda.F32:
				copy(raw, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(raw)))
			default:
				h := toHalf(tt.dt, w)
				copy(raw, unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), len(raw)))
			}
			m, err := tensor.NewMatrix(tt.ggufTyp, tt.out, tt.in, raw)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, tt.n*tt.out)
			m.MulBatch(x, tt.n, want, pool, &tensor.Scratch{})
			xr := make([]float32, len(x)) // the activations as the GEMM reads them
			for i, v := range x {
				xr[i] = roundTo(tt.dt, v)
			}
			pw, px := d.put(t, tt.dt, w), d.put(t, tt.dt, xr)
			py := d.testAlloc(t, int64(4*tt.n*tt.out))
			d.run(t, func() error { return d.gemm("test", tt.dt, cuda.F32, tt.n, tt.in, tt.out, pw, px, py, false) })
			// f32 sums of up to 14336 products in another order.
			checkClose(t, "GEMM vs the CPU's matmul", d.get(t, cuda.F32, py, tt.n*tt.out), want, 1e-5)
		})
	}
}

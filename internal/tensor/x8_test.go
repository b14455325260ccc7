package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestRepackX8 checks the repacked layouts, made for each kernel set this
// CPU has (an AVX-512 machine checks the AVX2 layout and kernels too):
// rows dequantise as before; the assembly matches the pure-Go x8 kernel
// bit for bit for every tile split of 1..37 tokens; each token's result
// does not depend on the batch around it; and results agree with the
// unpacked kernels to float rounding. Every format, kernel set and mode
// runs; the other row counts and batch sizes (three minutes under -race)
// with GLASSBOX_LONG_TESTS=1, which .ci/run sets.
func TestRepackX8(t *testing.T) {
	if detect() == isaGeneric {
		t.Skip("no assembly kernels here: matrices are not repacked")
	}
	shapes, batches := []int{24, 48, 80, 104, 128}, []int{1, 2, 3, 7, 16, 21, 37} // Q4_K: groups of 8, of 16; 80, 104: runs of groups and some left over (16 and 8 rows); 128: runs only
	if !reftest.LongTests() {
		shapes, batches = []int{24, 104}, []int{3, 13, 37} // tiles of 16, 8, 4, 2 and 1 among them
	}
	for _, pack := range levels()[1:] {
		for _, typ := range []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
			if !repacks(pack, typ) {
				continue
			}
			for mode := range 3 {
				for _, rows := range shapes {
					t.Run(fmt.Sprintf("%s/%s/mode%d/rows%d", pack, typ, mode, rows), func(t *testing.T) { testRepack(t, pack, typ, mode, rows, 512, batches) })
				}
				// One block per row: the kernels' block loops run once.
				one := typ.BlockElems()
				t.Run(fmt.Sprintf("%s/%s/mode%d/rows48/cols%d", pack, typ, mode, one), func(t *testing.T) { testRepack(t, pack, typ, mode, 48, one, batches) })
			}
		}
	}
}

func testRepack(t *testing.T, pack isa, typ gguf.TensorType, mode, rows, cols int, batches []int) {
	r := rand.New(rand.NewPCG(5, uint64(mode)))
	data := randomBlocks(typ, rows, cols, r, mode)
	plain, _ := NewMatrix(typ, rows, cols, data)
	m, _ := NewMatrix(typ, rows, cols, slices.Clone(data))
	m.isa = pack
	if !m.Repack(m.Data) {
		t.Fatalf("Repack refused a %d-row %s matrix", rows, typ)
	}
	if m.Repack(m.Data) {
		t.Fatal("Repack repacked twice")
	}
	a, b := make([]float32, cols), make([]float32, cols)
	for i := range rows {
		plain.Row(i, a)
		m.Row(i, b)
		if firstDiff(a, b) >= 0 {
			t.Fatalf("row %d differs after repacking", i)
		}
	}
	x := randFloats(r, 37*cols)
	alone := make([]float32, rows)
	var s Scratch
	for _, n := range batches {
		var want []float32
		for _, k := range levels() {
			m.isa = k
			out := make([]float32, n*rows)
			p := NewPool(2)
			m.MulBatch(x, n, out, p, &s)
			if k == isaGeneric {
				want = out
			} else if i := firstDiff(out, want); i >= 0 {
				t.Fatalf("n %d %s: out[%d] = %v, generic %v", n, k, i, out[i], want[i])
			}
			for tok := range n { // batch invariance
				m.MulBatch(x[tok*cols:], 1, alone, p, &s)
				if i := firstDiff(alone, out[tok*rows:(tok+1)*rows]); i >= 0 {
					t.Fatalf("n %d %s: token %d row %d alone %v, in the batch %v", n, k, tok, i, alone[i], out[tok*rows+i])
				}
			}
			p.Close()
		}
		ref := make([]float32, n*rows)
		p := NewPool(1)
		plain.MulBatch(x, n, ref, p, &s)
		p.Close()
		for i := range ref {
			if typ.BlockElems() == 256 && math.Float32bits(ref[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: out[%d] = %v, unpacked %v (K-quants keep the row kernels' bits)", n, i, want[i], ref[i])
			}
			if d := math.Abs(float64(ref[i] - want[i])); d > 1e-4*(1+math.Abs(float64(ref[i]))) {
				t.Fatalf("n %d: out[%d] = %v, unpacked %v", n, i, want[i], ref[i])
			}
		}
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

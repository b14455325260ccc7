package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// levels are the kernel sets this CPU runs, generic first: the assembly
// sets are each compared with the pure-Go one.
func levels() []isa {
	var ks []isa
	for k := isaGeneric; k <= detect(); k++ {
		if k == isaGeneric || k.arm64() == detect().arm64() {
			ks = append(ks, k)
		}
	}
	return ks
}

// randomBlocks fills rows×cols of type t with random bytes, then sets every
// fp16 scale to a finite value; mode picks edge cases: 1 puts the extreme
// quants (-128, 127, all-ones nibbles) in, 2 zeroes the scales.
func randomBlocks(t gguf.TensorType, rows, cols int, r *rand.Rand, mode int) []byte {
	rb, _ := t.RowBytes(int64(cols))
	data := make([]byte, int(rb)*rows)
	for i := range data {
		data[i] = byte(r.Uint32())
		if mode == 1 {
			data[i] = []byte{0x80, 0x7f, 0xff, 0x00}[r.IntN(4)]
		}
	}
	bb := t.BlockBytes()
	half := func(off int) {
		v := float32(r.NormFloat64() * 0.01)
		if mode == 2 {
			v = 0
		}
		binary.LittleEndian.PutUint16(data[off:], F32ToF16(v))
	}
	for b := 0; b < len(data); b += bb {
		switch t {
		case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0:
			half(b)
		case gguf.Q4_K, gguf.Q5_K:
			half(b)
			half(b + 2)
		case gguf.Q6_K:
			half(b + 208)
		}
	}
	return data
}

// randomActs quantises n rows of random activations (with outliers, and an
// all-zero row) the way MulBatch does.
func randomActs(t gguf.TensorType, n, cols int, r *rand.Rand, q *Q8) {
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(50) == 0 {
			x[i] *= 40
		}
	}
	if n > 1 {
		clear(x[cols : 2*cols])
	}
	switch t {
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		QuantizeQ8_K(x, q)
	default:
		QuantizeQ8_0(x, q)
	}
}

// TestKernelsMatchGeneric runs every quantised matmul kernel at every
// feature level this CPU has against the pure-Go kernel: the results must be
// bit-identical, for 1..9 tokens (the 4-token tile and its remainder).
func TestKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		for mode := range 3 {
			for _, n := range []int{1, 3, 4, 5, 9} {
				const rows, cols = 13, 512
				m, err := NewMatrix(typ, rows, cols, randomBlocks(typ, rows, cols, r, mode))
				if err != nil {
					t.Fatal(err)
				}
				var s Scratch
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				x[0] = 1e3 // an outlier scale
				var want []float32
				for _, k := range levels() {
					m.isa = k
					out := make([]float32, n*rows)
					p := NewPool(1)
					m.MulBatch(x, n, out, p, &s)
					p.Close()
					if k == isaGeneric {
						want = out
						continue
					}
					for i := range out {
						if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s mode %d n %d %s: out[%d] = %v, generic %v", typ, mode, n, k, i, out[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestGenericKernelsAgainstFloat checks the pure-Go integer kernels against
// a float64 dot of the dequantised weights with the dequantised
// activations: they compute the same value up to float32 rounding.
func TestGenericKernelsAgainstFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		const rows, cols = 7, 1024
		data := randomBlocks(typ, rows, cols, r, 0)
		m, _ := NewMatrix(typ, rows, cols, data)
		m.isa = isaGeneric
		var q Q8
		randomActs(typ, 2, cols, r, &q)
		row := make([]float32, cols)
		for rr := range rows {
			m.Row(rr, row)
			for tok := range 2 {
				var want, mag float64
				for c := range cols {
					a := float64(q.Q[tok*cols+c]) * float64(q.D[(tok*cols+c)/q.Block])
					want += float64(row[c]) * a
					mag += math.Abs(float64(row[c]) * a)
				}
				got := m.dotRow(rr, data[rr*m.rowBytes:(rr+1)*m.rowBytes], nil, &q, tok, nil, 0)
				if math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
					t.Errorf("%s row %d token %d: %v, float64 reference %v (magnitude %v)", typ, rr, tok, got, want, mag)
				}
			}
		}
	}
}

// TestFloatKernels compares arm64's F32, F16 and BF16 row kernels with
// float64 sums, for lengths around the 32-element groups.
func TestFloatKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 31, 32, 33, 64, 100, 896} {
		a, b := make([]float32, n), make([]float32, n)
		h, bf := make([]uint16, n), make([]uint16, n)
		var want32, want16, wantBF, mag float64
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			h[i], bf[i] = F32ToF16(a[i]), F32ToBF16(a[i])
			want32 += float64(a[i]) * float64(b[i])
			want16 += float64(F16ToF32(h[i])) * float64(b[i])
			wantBF += float64(BF16ToF32(bf[i])) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		for _, k := range levels() {
			v, done := dotF32Asm(k, a, b)
			got32 := v + dotF32(a[done:], b[done:])
			v, done = dotF16Asm(k, h, b)
			got16 := v + dotF16(h[done:], b[done:])
			v, done = dotBF16Asm(k, bf, b)
			gotBF := v + dotBF16(bf[done:], b[done:])
			for _, c := range []struct {
				kind      string
				got, want float64
			}{{"f32", float64(got32), want32}, {"f16", float64(got16), want16}, {"bf16", float64(gotBF), wantBF}} {
				if math.Abs(c.got-c.want) > 1e-6*mag {
					t.Errorf("n %d %s %s: %v, float64 %v", n, k, c.kind, c.got, c.want)
				}
			}
		}
	}
}

func TestISAString(t *testing.T) {
	if got := fmt.Sprint(isaGeneric, isaAVX2, isaVNNI, isaBF16, isaNEON, isaDotProd); got != "generic avx2 avx512vnni avx512bf16 neon neon-dotprod" {
		t.Errorf("%q", got)
	}
}

func TestKernelInfo(t *testing.T) {
	// CI names the kernel set its (emulated) CPU must pick, so that a
	// detection that fell back to pure Go fails instead of testing less.
	if want := os.Getenv("GLASSBOX_TEST_ISA"); want != "" && detect().String() != want {
		t.Errorf("detected kernel set %v, GLASSBOX_TEST_ISA wants %s", detect(), want)
	}
	k := KernelInfo()
	if k.ISA != detect().String() {
		t.Errorf("ISA %q, detected %v", k.ISA, detect())
	}
	if (k.Layout == "repacked") != (len(k.Repacked) > 0) || k.String() == "" {
		t.Errorf("%+v", k)
	}
	if d := detect(); (d.x86() || d == isaDotProd) != (k.String() == d.String()+", repacked (Q8_0 Q4_0 Q5_0 Q4_K Q5_K Q6_K)") {
		t.Errorf("%v: AVX2 and up, and arm64 with the dot product, repack the six formats; nothing else repacks", k)
	}
}

// randomMatrix is a rows×cols matrix of typ with random weights (floats
// rounded to typ, or random blocks).
func randomMatrix(t *testing.T, r *rand.Rand, typ gguf.TensorType, rows, cols int) *Matrix {
	var data []byte
	if typ == gguf.F32 || typ == gguf.F16 || typ == gguf.BF16 {
		data, _ = Quantize(typ, randFloats(r, rows*cols), nil)
	} else {
		data = randomBlocks(typ, rows, cols, r, 0)
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSameInput: a matmul told that its input is the previous one's gives
// what it gives alone, whether it reuses the quantised, rounded or paired
// activations (same layout, same float type) or not (another type came
// between, or another layout). Nine tokens pair for the 512-bit F32 tile.
func TestSameInput(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const rows, cols, n = 16, 512, 9
	mk := func(typ gguf.TensorType) *Matrix { return randomMatrix(t, r, typ, rows, cols) }
	x1, x2 := randFloats(r, n*cols), randFloats(r, n*cols)
	p := NewPool(2)
	defer p.Close()
	alone := func(m *Matrix, x []float32) []float32 {
		var s Scratch
		out := make([]float32, n*rows)
		m.MulBatch(x, n, out, p, &s)
		return out
	}
	for _, c := range []struct{ first, second gguf.TensorType }{{gguf.Q8_0, gguf.Q8_0}, {gguf.Q4_K, gguf.Q6_K}, {gguf.Q8_0, gguf.Q4_K}, {gguf.Q4_0, gguf.Q8_0},
		{gguf.F16, gguf.F16}, {gguf.BF16, gguf.BF16}, {gguf.BF16, gguf.F16}, {gguf.F16, gguf.BF16}, {gguf.F32, gguf.F16}, {gguf.F16, gguf.F32}, {gguf.Q8_0, gguf.BF16}} {
		a, b := mk(c.first), mk(c.second)
		var s Scratch
		out := make([]float32, n*rows)
		mk(gguf.F32).MulBatch(x2, n, out, p, &s) // leaves nothing to reuse
		s.SameInput()
		a.MulBatch(x2, n, out, p, &s)
		a.MulBatch(x1, n, out, p, &s)
		s.SameInput()
		b.MulBatch(x1, n, out, p, &s)
		if i := firstDiff(out, alone(b, x1)); i >= 0 {
			t.Errorf("%s after %s: out[%d] differs from the matmul alone", c.second, c.first, i)
		}
	}
	// A float matmul's activations are stale once another type's matmul
	// took another input.
	for _, typ := range []gguf.TensorType{gguf.F16, gguf.BF16, gguf.F32} {
		f := mk(typ)
		var s Scratch
		out := make([]float32, n*rows)
		f.MulBatch(x2, n, out, p, &s)
		mk(gguf.Q8_0).MulBatch(x1, n, out, p, &s)
		s.SameInput()
		f.MulBatch(x1, n, out, p, &s)
		if i := firstDiff(out, alone(f, x1)); i >= 0 {
			t.Errorf("%s after Q8_0 on another input: out[%d] differs from the matmul alone", typ, i)
		}
	}
}

// TestMulBatches: several matrices on one input, fused into one parallel
// operation (one type: Q/K/V-like rows of 256, 32 and 32, decode's whole
// fours of groups and a matrix within one chunk) or one after another
// (mixed types, as Q4_K_M's Q6_K V), give each matrix's MulBatch alone,
// after a matmul of another input left its activations behind, and leave
// the scratch holding none of the matrices.
func TestMulBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	const cols = 512
	mk := func(typ gguf.TensorType, rows int) *Matrix {
		m := randomMatrix(t, r, typ, rows, cols)
		m.Repack(m.Data)
		return m
	}
	p := NewPool(2)
	defer p.Close()
	for _, types := range [][]gguf.TensorType{{gguf.Q8_0, gguf.Q8_0, gguf.Q8_0}, {gguf.Q4_0, gguf.Q4_0, gguf.Q4_0}, {gguf.Q4_K, gguf.Q4_K, gguf.Q4_K},
		{gguf.Q4_K, gguf.Q4_K, gguf.Q6_K}, {gguf.F16, gguf.F16}, {gguf.Q8_0, gguf.F16, gguf.Q8_0}} {
		var ms []*Matrix
		for i, typ := range types {
			ms = append(ms, mk(typ, []int{256, 32, 32}[i]))
		}
		for _, n := range []int{0, 1, 3, 20} {
			x, other := randFloats(r, n*cols), randFloats(r, n*cols)
			outs := make([][]float32, len(ms))
			for i, m := range ms {
				outs[i] = make([]float32, n*m.Rows)
			}
			var s Scratch
			mk(gguf.Q8_0, 16).MulBatch(other, n, make([]float32, n*16), p, &s)
			MulBatches(ms, x, n, outs, p, &s)
			for i, m := range ms {
				var alone Scratch
				want := make([]float32, n*m.Rows)
				m.MulBatch(x, n, want, p, &alone)
				if j := firstDiff(outs[i], want); j >= 0 {
					t.Errorf("%v, n %d: matrix %d (%s) out[%d] = %v, alone %v", types, n, i, m.Type, j, outs[i][j], want[j])
				}
			}
			kept := len(s.multi.parts) != 0 || s.multi.x != nil || s.task.m != nil
			for _, c := range s.multi.parts[:cap(s.multi.parts)] {
				kept = kept || c.m != nil || c.out != nil
			}
			if kept {
				t.Errorf("%v, n %d: the scratch keeps matrices reachable", types, n)
			}
		}
	}
}

// TestQuantizeQ8_0Levels: the assembly quantiser gives the pure-Go bits:
// random blocks, outliers, an all-zero block, ties (x·127/amax = k+½),
// subnormals and huge values; so do the X8 records made from them.
func TestQuantizeQ8_0Levels(t *testing.T) {
	defer func() { hostISA = detect() }()
	r := rand.New(rand.NewPCG(4, 4))
	x := randFloats(r, 32*64)
	clear(x[32:64])
	for i := range 32 { // ties: amax 127 makes x·127/amax = x
		x[64+i] = float32(i) - 15.5
	}
	x[64] = 127
	for i := range 32 {
		x[96+i] = float32(r.NormFloat64()) * 1e-41
		x[128+i] = float32(r.NormFloat64()) * 1e30
	}
	x[200] *= 1e3
	var want Q8
	for _, k := range levels() {
		hostISA = k
		var q Q8
		QuantizeQ8_0(x, &q)
		if k == isaGeneric {
			want = q
			continue
		}
		sameQ8(t, k, &q, &want, x)
	}
	// The repacked kernels' X8 records, for tiles of four, two and one
	// token (seven tokens of eight blocks) and each offset they add.
	for _, tokens := range []int{1, 7} {
		xs := x[:tokens*32*(64/tokens)]
		for _, off := range []int32{0, 8, 16, 128} {
			var want []byte
			for _, k := range levels() {
				hostISA = k
				var q Q8
				q.layout, q.off, q.tokens = layoutX8, off, tokens
				q.prepare(len(xs), 32)
				q.quantize(xs, 0, len(xs)/32)
				if k == isaGeneric {
					want = q.X8
				} else if !bytes.Equal(q.X8, want) {
					t.Fatalf("%s, %d tokens, offset %d: the X8 records differ from Go's", k, tokens, off)
				}
			}
		}
	}
}

// sameQ8 fails t where kernel set k's quants or scales of x differ from
// pure Go's (want).
func sameQ8(t *testing.T, k isa, q, want *Q8, x []float32) {
	t.Helper()
	for i := range q.Q {
		if q.Q[i] != want.Q[i] {
			t.Fatalf("%s: q[%d] = %d, generic %d (x %v)", k, i, q.Q[i], want.Q[i], x[i])
		}
	}
	if i := firstDiff(q.D, want.D); i >= 0 {
		t.Fatalf("%s: d[%d] = %v, generic %v", k, i, q.D[i], want.D[i])
	}
}

// TestQuantizeQ8_KLevels: the assembly Q8_K quantiser gives the pure-Go
// bits (quants, scales, sums, and the KTile layout for four tokens and
// one) on random blocks, an all-zero block, ties, a largest magnitude
// that is negative or met twice with both signs, sums at ±127·16, huge
// values, and the blocks it leaves to Go (subnormals, whose scale
// overflows, infinities and NaNs) between blocks it does.
func TestQuantizeQ8_KLevels(t *testing.T) {
	defer func() { hostISA = detect() }()
	r := rand.New(rand.NewPCG(9, 9))
	const nb = 16
	x := randFloats(r, 256*nb)
	blk := func(b int) []float32 { return x[256*b : 256*b+256] }
	clear(blk(1))
	for i := range 256 { // ties: max 127 makes −127/max·x = −x
		blk(2)[i] = float32(i%64) - 31.5
	}
	blk(2)[7] = 127
	blk(3)[100] = -50 // the largest magnitude negative
	blk(4)[10], blk(4)[200] = -40, 40
	blk(5)[10], blk(5)[200] = 40, -40
	for i := range blk(6) { // every sum of 16 at ±127·16
		blk(6)[i] = float32(1 - 2*(i/16%2))
	}
	for i := range 256 {
		blk(7)[i] = float32(r.NormFloat64()) * 1e-41
		blk(8)[i] = float32(r.NormFloat64()) * 1e37
	}
	blk(9)[3] = float32(math.Inf(1))
	blk(10)[250] = float32(math.NaN())
	blk(11)[0] = float32(math.Inf(-1))
	blk(12)[128] *= 1e3
	if k := detect(); k.x86() { // the assembly (x86 only) does ordinary blocks and stops at the NaN's
		n := len(blk(12))
		q, d, bs := make([]int8, 3*n), make([]float32, 3), make([]int16, 48)
		if got := quantQ8_KAsm(k, x[12*n:15*n], q, d, bs); got != 3 {
			t.Errorf("%s: the assembly did %d of 3 ordinary blocks", k, got)
		}
		if got := quantQ8_KAsm(k, x[7*n:10*n], q, d, bs); got != 0 {
			t.Errorf("%s: the assembly did %d blocks of subnormals, huge values and an infinity, want 0", k, got)
		}
		if got := quantQ8_KAsm(k, x[8*n:11*n], q, d, bs); got != 1 {
			t.Errorf("%s: the assembly did %d blocks of huge values, an infinity and a NaN, want 1", k, got)
		}
	}
	for _, tokens := range []int{1, 4} { // KTile: one token, or a tile of four
		xs := x
		var want Q8
		for _, k := range levels() {
			hostISA = k
			var q Q8
			q.layout = layoutKTile
			q.tokens = tokens
			q.prepare(len(xs), 256)
			q.quantize(xs, 0, len(xs)/256)
			if k == isaGeneric {
				want = q
				continue
			}
			sameQ8(t, k, &q, &want, xs)
			if !slices.Equal(q.BSums, want.BSums) || !bytes.Equal(q.KTile, want.KTile) {
				t.Fatalf("%s, %d tokens: block sums or KTile differ", k, tokens)
			}
		}
	}
}

// TestFloatTiles checks the F32, F16 and BF16 tile kernels at every
// feature level against float64 sums of the rounded weights and
// activations, for row counts around the kernels' (eight lanes for one
// token, tiles of 3 rows for more, 4 rows × 8 tokens on AVX-512), widths
// with and without a tail after the last 8 columns, and 20 tokens (F16
// rows widened once for 16 and more, BF16 for 8 and more on AVX-512); and
// that a token's outputs are the same bits in any batch as alone, as
// decode after prefill needs.
func TestFloatTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []gguf.TensorType{gguf.F16, gguf.BF16, gguf.F32} {
		for _, rows := range []int{1, 2, 7, 8, 11, 17, 33} {
			for _, cols := range []int{5, 8, 16, 21, 24, 517, 1037, 2053} {
				data, _ := Quantize(typ, randFloats(r, rows*cols), nil)
				m, err := NewMatrix(typ, rows, cols, data)
				if err != nil {
					t.Fatal(err)
				}
				w := make([]float32, rows*cols)
				for i := range rows {
					m.Row(i, w[i*cols:(i+1)*cols])
				}
				const n = 20
				x := randFloats(r, n*cols)
				x[0] = 1e3
				for _, k := range levels() {
					m.isa = k
					var s Scratch
					out := make([]float32, n*rows)
					m.MulBatch(x, n, out, p, &s)
					for tok := range n {
						for i := range rows {
							var want, mag float64
							for c := range cols {
								a := x[tok*cols+c]
								switch typ {
								case gguf.F16:
									a = RoundF16(a)
								case gguf.BF16:
									a = BF16ToF32(F32ToBF16(a))
								}
								want += float64(w[i*cols+c]) * float64(a)
								mag += math.Abs(float64(w[i*cols+c]) * float64(a))
							}
							if got := out[tok*rows+i]; math.Abs(float64(got)-want) > 1e-5*mag {
								t.Fatalf("%s %dx%d %s: token %d row %d = %v, float64 %v", typ, rows, cols, k, tok, i, got, want)
							}
						}
					}
					for _, nb := range []int{1, 2, 3, 4, 5, 8, 9, 12, 17} { // the first nb tokens as a batch
						got := make([]float32, nb*rows)
						m.MulBatch(x, nb, got, p, &s)
						if i := firstDiff(got, out[:nb*rows]); i >= 0 {
							t.Fatalf("%s %dx%d %s: %d tokens: out[%d] = %v, %v in a batch of %d", typ, rows, cols, k, nb, i, got[i], out[i], n)
						}
					}
				}
			}
		}
	}
}

// TestRoundActs: the assembly rounding of activations through F16 and
// BF16 gives RoundF16's and F32ToBF16's bits: ties, subnormals of both,
// overflow to infinity, infinities and NaNs (NaN payloads may differ).
func TestRoundActs(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	x := randFloats(r, 8*40+5)
	for i := range 64 {
		x[i] = math.Float32frombits(r.Uint32()) // every exponent, NaNs too
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 65504, 65520, 65519.99, 1e-8, -6e-8, 2.98e-8, 1e-39, -1e-40, 3.4e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0x7f7fffff)}
	copy(x[64:], special)
	for i := range 16 { // F16 and BF16 ties: the halfway bit set, the rest clear
		x[96+i] = math.Float32frombits(0x3f800000 | uint32(i)<<14 | 1<<12)
		x[112+i] = math.Float32frombits(0x40000000 | uint32(i)<<17 | 1<<15)
	}
	for _, bf16 := range []bool{false, true} {
		for _, k := range levels() {
			got := make([]float32, len(x))
			roundActs(k, bf16, x, got)
			for i, v := range x {
				want := RoundF16(v)
				if bf16 {
					want = BF16ToF32(F32ToBF16(v))
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
					t.Fatalf("bf16 %v %s: %v (%#x) rounds to %#x, want %#x", bf16, k, v, math.Float32bits(v), math.Float32bits(got[i]), math.Float32bits(want))
				}
			}
		}
	}
	// The packed BF16 bits of the VDPBF16PS kernels (where the CPU has them).
	packed := make([]uint16, len(x))
	done := packBF16Asm(detect(), x, packed)
	for i, v := range x[:done] {
		if want := F32ToBF16(v); packed[i] != want && !(v != v && packed[i]&0x7fc0 == 0x7fc0) {
			t.Fatalf("packBF16: %v (%#x) packs to %#x, want %#x", v, math.Float32bits(v), packed[i], want)
		}
	}
	t.Logf("packBF16Asm checked on %d of %d values (%s)", done, len(x), detect())
}

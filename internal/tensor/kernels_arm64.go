//go:build arm64 && !purego

package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// detect picks the best kernel set this CPU runs: NEON with the dot
// product instructions (SDOT, FEAT_DotProd: Apple M1 on, Graviton 2 on,
// Ampere Altra), else plain NEON (every ARMv8-A), else pure Go.
func detect() isa {
	a := &cpu.ARM64
	switch {
	case a.HasASIMD && a.HasASIMDDP: // ASIMDDP is the dot product hwcap
		return isaDotProd
	case a.HasASIMD:
		return isaNEON
	}
	return isaGeneric
}

type rows1Func = func(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)

// q8Kernels are the Q8_0-family row kernels, [NEON, dot product].
var q8Kernels = map[gguf.TensorType][2]rows1Func{
	gguf.Q8_0: {q80Rows1NEON, q80Rows1Dot},
	gguf.Q4_0: {q40Rows1NEON, q40Rows1Dot},
	gguf.Q5_0: {q50Rows1NEON, q50Rows1Dot},
}

// q8RowsAsm computes rows [0, nrows) of w (rowBytes apart, GGUF's own
// layout) against the n Q8_0 activation rows of q: out[t·ostride + r],
// one token per pass. It reports false when k or t has no kernel.
func q8RowsAsm(k isa, t gguf.TensorType, w []byte, rowBytes, nrows int, q *Q8, n int, out []float32, ostride int) bool {
	fs, ok := q8Kernels[t]
	if !k.arm64() || !ok || len(q.D) < n || n == 0 { // (the kernels take nb ≥ 1 blocks)
		return false
	}
	if nrows == 0 {
		return true
	}
	f := fs[0]
	if k == isaDotProd {
		f = fs[1]
	}
	nb := len(q.D) / n
	cols := nb * 32
	_ = w[(nrows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+nrows-1]
	_ = q.Q[n*cols-1]
	for tok := range n {
		f(&w[0], rowBytes, nrows, &q.Q[tok*cols], &q.D[tok*nb], nb, &out[tok*ostride])
	}
	return true
}

// x8DotKernels are the dot-product kernels over the repacked Q8_0 family
// (kernelgen), for runs of 4, 2 and 1 tokens.
var x8DotKernels = map[gguf.TensorType][3]x8RunFunc{
	gguf.Q8_0: {q80x8T4Dot, q80x8T2Dot, q80x8T1Dot},
	gguf.Q4_0: {q40x8T4Dot, q40x8T2Dot, q40x8T1Dot},
	gguf.Q5_0: {q50x8T4Dot, q50x8T2Dot, q50x8T1Dot},
}

// x8Asm runs the repacked Q8_0-family kernels over groups of eight rows
// (w) for the n tokens of q.X8, writing out[t·ostride + r].
func x8Asm(k isa, t gguf.TensorType, w []byte, R, groups, nb int, q *Q8, n int, out []float32, ostride int) bool {
	if !repacks(k, t) || groups == 0 {
		return repacks(k, t)
	}
	_ = w[groups*nb*R*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+R*groups-1]
	_ = q.X8[n*nb*x8ActBytes-1]
	x8Runs(x8DotKernels[t], w, groups, nb, q, n, out, ostride)
	return true
}

// kxAsm runs the repacked K-quant kernel over groups of eight rows (w)
// against one token's Q8_K activations, writing out[0, 8·groups).
func kxAsm(k isa, t gguf.TensorType, w []byte, R, groups, nb int, q []int8, d []float32, bsums []int16, out []float32) bool {
	if k != isaDotProd || t.BlockElems() != 256 || R != 8 || groups == 0 {
		return false
	}
	_ = w[groups*nb*t.BlockBytes()*R-1]
	_ = q[nb*256-1]
	_ = d[nb-1]
	_ = bsums[nb*16-1]
	_ = out[R*groups-1]
	// Direct calls (not through a func value) keep out on the caller's
	// stack.
	switch t {
	case gguf.Q4_K:
		q4kx8Dot(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	case gguf.Q5_K:
		q5kx8Dot(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	default:
		q6kx8Dot(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	}
	return true
}

type kRows1Func = func(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)

// kKernels are the K-quant row kernels, [NEON, dot product].
var kKernels = map[gguf.TensorType][2]kRows1Func{
	gguf.Q4_K: {q4kRows1NEON, q4kRows1Dot},
	gguf.Q5_K: {q5kRows1NEON, q5kRows1Dot},
	gguf.Q6_K: {q6kRows1NEON, q6kRows1Dot},
}

// kRowsAsm is q8RowsAsm for Q4_K, Q5_K and Q6_K weights against Q8_K
// activations.
func kRowsAsm(k isa, t gguf.TensorType, w []byte, rowBytes, nrows int, q *Q8, n int, out []float32, ostride int) bool {
	fs, ok := kKernels[t]
	if !k.arm64() || !ok || len(q.D) < n || n == 0 { // (the kernels take nb ≥ 1 blocks)
		return false
	}
	if nrows == 0 {
		return true
	}
	f := fs[0]
	if k == isaDotProd {
		f = fs[1]
	}
	nb := len(q.D) / n
	cols := nb * 256
	_ = w[(nrows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+nrows-1]
	_ = q.Q[n*cols-1]
	_ = q.BSums[n*nb*16-1]
	for tok := range n {
		f(&w[0], rowBytes, nrows, &q.Q[tok*cols], &q.D[tok*nb], &q.BSums[tok*nb*16], nb, &out[tok*ostride])
	}
	return true
}

// dotF32Asm, dotF16Asm and dotBF16Asm return the dot product of whole
// 32-element groups and how many elements they covered.
func dotF32Asm(k isa, a, b []float32) (float32, int) {
	n := len(a) &^ 31
	if !k.arm64() || n == 0 {
		return 0, 0
	}
	_ = b[n-1]
	return dotF32NEON(&a[0], &b[0], n), n
}

func dotF16Asm(k isa, w []uint16, x []float32) (float32, int) {
	n := len(w) &^ 31
	if !k.arm64() || n == 0 {
		return 0, 0
	}
	_ = x[n-1]
	return dotF16NEON(&w[0], &x[0], n), n
}

func dotBF16Asm(k isa, w []uint16, x []float32) (float32, int) {
	n := len(w) &^ 31
	if !k.arm64() || n == 0 {
		return 0, 0
	}
	_ = x[n-1]
	return dotBF16NEON(&w[0], &x[0], n), n
}

// readSumAsm sums whole 128-byte pieces of b as 64-bit words and returns
// how many bytes it covered.
func readSumAsm(k isa, b []byte) (uint64, int) {
	n := len(b) &^ 127
	if !k.arm64() || n == 0 {
		return 0, 0
	}
	return readSumNEON(&b[0], n), n
}

// quantQ8_0Asm quantises whole Q8_0 blocks of x into q and d (their
// lengths checked by the caller) and reports whether it did.
func quantQ8_0Asm(k isa, x []float32, q []int8, d []float32) bool {
	if !k.arm64() || len(d) == 0 {
		return false
	}
	_ = x[len(d)*32-1]
	_ = q[len(d)*32-1]
	quantQ8_0NEON(&x[0], len(d), &q[0], &d[0])
	return true
}

// flashAsm runs one Flash step with the scores and the weighted sum of
// values in NEON (strides in bytes, bounds checked by the caller; D a
// multiple of 16) and the softmax between them in Go, row by row. Nothing
// is prefetched.
func flashAsm(f *Flash, k unsafe.Pointer, kstride int, v unsafe.Pointer, vstride, nk int, _, _ unsafe.Pointer, f16 bool) {
	d := f.D
	for r := range f.Rows {
		var s [FlashKeys]float32
		q, o := &f.Q[r*d], &f.o[r*d]
		if f16 {
			flashScoresF16NEON(q, d, k, kstride, &s[0])
		} else {
			flashScoresF32NEON(q, d, k, kstride, &s[0])
		}
		alpha := f.softmax(r, &s)
		if f16 {
			flashAccF16NEON(o, d, alpha, &s[0], nk, v, vstride)
		} else {
			flashAccF32NEON(o, d, alpha, &s[0], nk, v, vstride)
		}
	}
}

// runsAtOnce: these kernels read one run of groups at a time.
func runsAtOnce(isa) int { return 1 }

// quantQ8_KAsm: no Q8_K quantiser here.
func quantQ8_KAsm(isa, []float32, []int8, []float32, []int16) int { return 0 }

// x8RecordsAsm: the X8 records are written in Go here.
func x8RecordsAsm(isa, []int8, []float32, int32, []byte, int) bool { return false }

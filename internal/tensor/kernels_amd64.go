//go:build amd64 && !purego

package tensor

import (
	"slices"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// detect picks the best kernel set this CPU runs: AVX-512 VNNI (on ymm
// registers, with BW and VL; with BF16 where the CPU has it) or AVX2 with
// FMA and F16C, else pure Go; at
// most maxISA (the noavx512 build tag caps it at AVX2).
func detect() isa {
	x := &cpu.X86
	if !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		return isaGeneric
	}
	if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI {
		if x.HasAVX512BF16 {
			return min(isaBF16, maxISA)
		}
		return min(isaVNNI, maxISA)
	}
	return isaAVX2
}

type rows1Func = func(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
type rows4Func = func(w *byte, rowBytes, nrows int, a *int8, astride int, d *float32, dstride, nb int, out *float32, ostride int)

func q8Kernels(k isa, t gguf.TensorType) (rows1Func, rows4Func) {
	vnni := k.avx512()
	switch {
	case t == gguf.Q8_0 && vnni:
		return q80Rows1VNNI, q80Rows4VNNI
	case t == gguf.Q8_0:
		return q80Rows1AVX2, q80Rows4AVX2
	case t == gguf.Q4_0 && vnni:
		return q40Rows1VNNI, q40Rows4VNNI
	case t == gguf.Q4_0:
		return q40Rows1AVX2, q40Rows4AVX2
	case t == gguf.Q5_0 && vnni:
		return q50Rows1VNNI, q50Rows4VNNI
	case t == gguf.Q5_0:
		return q50Rows1AVX2, q50Rows4AVX2
	}
	return nil, nil
}

// q8RowsAsm computes rows [0, nrows) of w (rowBytes apart) against the n
// Q8_0 activation rows of q: out[t·ostride + r]. It takes four tokens per
// pass over each weight row and reports false when k or t has no kernel.
func q8RowsAsm(k isa, t gguf.TensorType, w []byte, rowBytes, nrows int, q *Q8, n int, out []float32, ostride int) bool {
	if k == isaGeneric || nrows == 0 {
		return k != isaGeneric
	}
	r1, r4 := q8Kernels(k, t)
	if r1 == nil {
		return false
	}
	nb := len(q.D) / n
	cols := nb * 32
	_ = w[(nrows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+nrows-1]
	act, astride := q.Q, cols
	if k.avx512() {
		if q.layout != layoutVNNI {
			panic("BUG: tensor: VNNI kernel without the VNNI activation layout")
		}
		act, astride = unsafe.Slice((*int8)(unsafe.Pointer(&q.VNNI[0])), len(q.VNNI)), 2*cols
	}
	_ = act[n*astride-1]
	tok := 0
	for ; tok+4 <= n; tok += 4 {
		r4(&w[0], rowBytes, nrows, &act[tok*astride], astride, &q.D[tok*nb], nb*4, nb, &out[tok*ostride], ostride*4)
	}
	for ; tok < n; tok++ {
		r1(&w[0], rowBytes, nrows, &act[tok*astride], &q.D[tok*nb], nb, &out[tok*ostride])
	}
	return true
}

// kRowsAsm is q8RowsAsm for Q4_K and Q6_K weights against Q8_K
// activations, one token per pass.
func kRowsAsm(k isa, t gguf.TensorType, w []byte, rowBytes, nrows int, q *Q8, n int, out []float32, ostride int) bool {
	if k == isaGeneric || nrows == 0 {
		return k != isaGeneric && (t == gguf.Q4_K || t == gguf.Q6_K)
	}
	if k.avx512() && t == gguf.Q4_K {
		kTileRows(q4kRows1VNNI, q4kRows4VNNI, w, rowBytes, nrows, t.BlockBytes(), q, n, out, ostride)
		return true
	}
	if k.avx512() && t == gguf.Q6_K {
		kTileRows(q6kRows1VNNI, q6kRows4VNNI, w, rowBytes, nrows, t.BlockBytes(), q, n, out, ostride)
		return true
	}
	f := q4kRows1AVX2
	switch t {
	case gguf.Q4_K:
	case gguf.Q6_K:
		f = q6kRows1AVX2
	default:
		return false
	}
	nb := len(q.D) / n
	cols := nb * 256
	_ = w[(nrows-1)*rowBytes+nb*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+nrows-1]
	_ = q.BSums[n*nb*16-1]
	for tok := range n {
		f(&w[0], rowBytes, nrows, &q.Q[tok*cols], &q.D[tok*nb], &q.BSums[tok*nb*16], nb, &out[tok*ostride])
	}
	return true
}

// dotF32Asm, dotF16Asm and dotBF16Asm are arm64's row kernels; here the
// tile kernels (floatRowsAsm, bf16RowsAsm) serve float rows.
func dotF32Asm(isa, []float32, []float32) (float32, int) { return 0, 0 }

func dotF16Asm(isa, []uint16, []float32) (float32, int) { return 0, 0 }

func dotBF16Asm(isa, []uint16, []float32) (float32, int) { return 0, 0 }

// roundActsAsm rounds the whole groups of 8 of x into dst through F16 or
// BF16 and returns how many elements it did.
func roundActsAsm(k isa, bf16 bool, x, dst []float32) int {
	n := len(x) &^ 7
	if k == isaGeneric || n == 0 {
		return 0
	}
	_ = dst[n-1]
	if bf16 {
		roundBF16AVX2(&x[0], &dst[0], n)
	} else {
		roundF16AVX2(&x[0], &dst[0], n)
	}
	return n
}

type floatTileFunc = func(w unsafe.Pointer, laneStride, groups int, x *float32, xstride, steps int, out *float32, ostride, rowBytes, outLane int)

// floatKernels are each float format's kernels (kernelgen's
// floatLanes and floatTile): eight lanes of rows for one token, three
// lanes for 2..4 tokens, and one row at a time for the rows left over.
var floatKernels = [3]struct {
	lanes func(w unsafe.Pointer, laneStride, groups int, x *float32, rowBytes, steps int, out *float32, outLane int)
	tiles [5][2]floatTileFunc // [tokens]{three rows, one row}
}{
	floatF16:  {f16Lanes8AVX2, [5][2]floatTileFunc{1: {nil, f16Tile1x1AVX2}, 2: {f16Tile3x2AVX2, f16Tile1x2AVX2}, 3: {f16Tile3x3AVX2, f16Tile1x3AVX2}, 4: {f16Tile3x4AVX2, f16Tile1x4AVX2}}},
	floatBF16: {bf16Lanes8AVX2, [5][2]floatTileFunc{1: {nil, bf16Tile1x1AVX2}, 2: {bf16Tile3x2AVX2, bf16Tile1x2AVX2}, 3: {bf16Tile3x3AVX2, bf16Tile1x3AVX2}, 4: {bf16Tile3x4AVX2, bf16Tile1x4AVX2}}},
	floatF32:  {f32Lanes8AVX2, [5][2]floatTileFunc{1: {nil, f32Tile1x1AVX2}, 2: {f32Tile3x2AVX2, f32Tile1x2AVX2}, 3: {f32Tile3x3AVX2, f32Tile1x3AVX2}, 4: {f32Tile3x4AVX2, f32Tile1x4AVX2}}},
}

// floatRowsAsm computes out[t·ostride + r] for rows [0, nrows) of the
// kind weights w (rowBytes apart) and the n tokens of x (cols apart): the
// dot products of the first cols&^7 elements, whose number it returns
// (the caller adds the rest), up to four tokens per pass over the rows,
// eight for F32 with pairs (x laid out by pairTokens, where runsTileZ);
// -1 when k has no kernel or cols < 8.
func floatRowsAsm(k isa, kind floatKind, w []byte, rowBytes, cols, nrows int, x, pairs []float32, n int, out []float32, ostride int) int {
	steps := cols / 8
	if k == isaGeneric || steps == 0 {
		return -1
	}
	if nrows == 0 {
		return 0
	}
	_ = w[(nrows-1)*rowBytes+steps*8*kind.bytes()-1]
	_ = x[(n-1)*cols+steps*8-1]
	_ = out[(n-1)*ostride+nrows-1]
	ks := &floatKernels[kind]
	for t0 := 0; t0 < n; {
		T := min(4, n-t0)
		r0 := 0
		if kind == floatF32 && len(pairs) > 0 && n-t0 >= 8 {
			// Eight tokens on 512-bit registers (pairs: pairTokens'): four
			// lanes of L rows, the rest one row at a time, four tokens at a
			// time.
			if L := nrows / 4; L > 0 {
				_ = pairs[(t0/8+1)*64*steps-1]
				f32TileZ4x8(unsafe.Pointer(&w[0]), L*rowBytes, L, &pairs[t0/8*64*steps], 64*steps, steps, &out[t0*ostride], 4*ostride, rowBytes, 4*L)
				r0 = 4 * L
			}
			for t := t0; r0 < nrows && t < t0+8; t += 4 {
				ks.tiles[4][1](unsafe.Pointer(&w[r0*rowBytes]), 0, nrows-r0, &x[t*cols], 4*cols, steps, &out[t*ostride+r0], 4*ostride, rowBytes, 0)
			}
			t0 += 8
			continue
		}
		if T == 1 {
			if L := nrows / 8; L > 0 { // eight lanes of L rows
				ks.lanes(unsafe.Pointer(&w[0]), L*rowBytes, L, &x[t0*cols], rowBytes, steps, &out[t0*ostride], 4*L)
				r0 = 8 * L
			}
		} else if L := nrows / 3; L > 0 { // three lanes of L rows
			ks.tiles[T][0](unsafe.Pointer(&w[0]), L*rowBytes, L, &x[t0*cols], 4*cols, steps, &out[t0*ostride], 4*ostride, rowBytes, 4*L)
			r0 = 3 * L
		}
		if r0 < nrows {
			ks.tiles[T][1](unsafe.Pointer(&w[r0*rowBytes]), 0, nrows-r0, &x[t0*cols], 4*cols, steps, &out[t0*ostride+r0], 4*ostride, rowBytes, 0)
		}
		t0 += T
	}
	return steps * 8
}

// wideBytes is how much of a batch's F16 rows rowsWideAsm widens at a
// time: a block that stays in L2 (512 KiB here) while every token meets it.
const wideBytes = 256 << 10

// runsTileZ reports whether a batch of n tokens against kind rows runs
// the 512-bit F32 tile (floatTileZ), whose activations pairTokens lays out.
func runsTileZ(k isa, kind floatKind, n int) bool {
	return k.avx512() && n >= 8 && (kind == floatF32 || widens(k, kind, n))
}

// widens reports whether a batch of n tokens against kind rows runs
// rowsWideAsm: F16 from 16 tokens (VCVTPH2PS for every four tokens held
// prefill to 105 tok/s where BF16 ran 184, on AVX2), BF16 where the
// widened rows meet the 512-bit F32 tile (eight tokens).
func widens(k isa, kind floatKind, n int) bool {
	return kind == floatF16 && n >= 16 || kind == floatBF16 && k == isaVNNI && n >= 8
}

// rowsWideAsm is floatRowsAsm for F16 or BF16 rows w (cols apart) and a
// long batch: it widens blocks of rows to F32 in buf once and runs the
// F32 tiles over them, which give the F16 and BF16 tiles' bits (the
// widening is exact) without converting each weight again for every
// tile of tokens. buf grows as needed and is returned.
func rowsWideAsm(k isa, kind floatKind, w []uint16, cols, nrows int, x, pairs []float32, n int, out []float32, ostride int, buf []float32) (int, []float32) {
	steps := cols / 8
	if k == isaGeneric || steps == 0 {
		return -1, buf
	}
	widen := f16ToF32AVX2
	if kind == floatBF16 {
		widen = bf16ToF32AVX2
	}
	tile := 3 // rows of a tile: a block of whole tiles leaves no row to the one-row kernel
	if len(pairs) > 0 {
		tile = 4
	}
	block := max(tile, wideBytes/(4*cols)/tile*tile)
	buf = resize(buf, min(block, nrows)*cols)
	for r0 := 0; r0 < nrows; r0 += block {
		rows := min(block, nrows-r0)
		_ = w[(r0+rows)*cols-1]
		for r := range rows {
			widen(&w[(r0+r)*cols], &buf[r*cols], steps*8)
		}
		wb := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 4*len(buf))
		floatRowsAsm(k, floatF32, wb, 4*cols, cols, rows, x, pairs, n, out[r0:], ostride)
	}
	return steps * 8, buf
}

type bf16DPFunc = func(w unsafe.Pointer, laneStride, groups int, x *uint16, xstride, cols int, out *float32, ostride, rowBytes, outLane int)

// bf16DPKernels are kernelgen's bf16DP kernels by tokens: {lanes of
// rows (eight for one token, else four), one row}.
var bf16DPKernels = [7][2]bf16DPFunc{1: {bf16DP8x1, bf16DP1x1}, 2: {bf16DP4x2, bf16DP1x2}, 3: {bf16DP4x3, bf16DP1x3}, 4: {bf16DP4x4, bf16DP1x4}, 5: {bf16DP4x5, bf16DP1x5}, 6: {bf16DP4x6, bf16DP1x6}}

// bf16RowsAsm computes out[t·ostride + r] for the nrows BF16 rows w (cols
// apart) and the n tokens of BF16 activations x (cols apart, packBF16Asm's)
// by VDPBF16PS, whole rows, six tokens per pass over the rows; false where
// k is not isaBF16. A row and a token give the same bits in any batch.
func bf16RowsAsm(k isa, w, x []uint16, cols, nrows, n int, out []float32, ostride int) bool {
	if k != isaBF16 || cols == 0 {
		return false
	}
	if nrows == 0 {
		return true
	}
	_ = w[nrows*cols-1]
	_ = x[n*cols-1]
	_ = out[(n-1)*ostride+nrows-1]
	rb := 2 * cols
	for t0 := 0; t0 < n; {
		T := min(6, n-t0)
		R := 4
		if T == 1 {
			R = 8
		}
		ks := &bf16DPKernels[T]
		r0 := 0
		if L := nrows / R; L > 0 {
			ks[0](unsafe.Pointer(&w[0]), L*rb, L, &x[t0*cols], rb, cols, &out[t0*ostride], 4*ostride, rb, 4*L)
			r0 = R * L
		}
		if r0 < nrows {
			ks[1](unsafe.Pointer(&w[r0*cols]), 0, nrows-r0, &x[t0*cols], rb, cols, &out[t0*ostride+r0], 4*ostride, rb, 0)
		}
		t0 += T
	}
	return true
}

// packBF16Asm rounds the whole groups of 8 of x to BF16 bits in dst (for
// bf16RowsAsm) and returns how many elements it did.
func packBF16Asm(k isa, x []float32, dst []uint16) int {
	n := len(x) &^ 7
	if k != isaBF16 || n == 0 {
		return 0
	}
	_ = dst[n-1]
	packBF16AVX512(&x[0], &dst[0], n)
	return n
}

// readSumAsm sums b's first 8·lane bytes as 64-bit words in eight
// interleaved lanes (lane a multiple of 32) and returns how many bytes it
// covered.
func readSumAsm(k isa, b []byte) (uint64, int) {
	lane := len(b) / 8 &^ 31
	if k == isaGeneric || lane == 0 {
		return 0, 0
	}
	return readSumAVX2(&b[0], lane, lane), 8 * lane
}

type kTileFunc = func(w *byte, rowBytes, nrows int, a *byte, nb int, out *float32, ostride int)

// kTileRows runs a VNNI K-quant kernel over the tiles of q.KTile: four
// tokens per pass over the weight rows, then the remainder one by one.
func kTileRows(r1, r4 kTileFunc, w []byte, rowBytes, nrows, blockBytes int, q *Q8, n int, out []float32, ostride int) {
	nb := len(q.D) / n
	_ = w[(nrows-1)*rowBytes+nb*blockBytes-1]
	_ = out[(n-1)*ostride+nrows-1]
	_ = q.KTile[n*nb*kTileBytes-1]
	tok := 0
	for ; tok+4 <= n; tok += 4 {
		r4(&w[0], rowBytes, nrows, &q.KTile[tok*nb*kTileBytes], nb, &out[tok*ostride], ostride*4)
	}
	for ; tok < n; tok++ {
		r1(&w[0], rowBytes, nrows, &q.KTile[tok*nb*kTileBytes], nb, &out[tok*ostride], ostride*4)
	}
}

type x8Func = func(w *byte, groups, nb int, a *byte, out *float32, ostride int)

// x8Kernels are the VNNI repacked kernels per format and group size (8
// rows on 256-bit registers, 16 on 512-bit ones), in x8Tiles order.
var x8Kernels = map[gguf.TensorType][2][5]x8Func{
	gguf.Q8_0: {{q80x8T16, q80x8T8, q80x8T4, q80x8T2, q80x8T1}, {q80x16T16, q80x16T8, q80x16T4, q80x16T2, q80x16T1}},
	gguf.Q4_0: {{q40x8T16, q40x8T8, q40x8T4, q40x8T2, q40x8T1}, {q40x16T16, q40x16T8, q40x16T4, q40x16T2, q40x16T1}},
	gguf.Q5_0: {{q50x8T16, q50x8T8, q50x8T4, q50x8T2, q50x8T1}, {q50x16T16, q50x16T8, q50x16T4, q50x16T2, q50x16T1}},
}

// x8AVX2Streams are the one-token kernels that read x8Streams runs of
// groups at once (kernelgen's qx8AVX2S).
var x8AVX2Streams = map[gguf.TensorType]x8RunFunc{
	gguf.Q8_0: q80x8AVX2S,
	gguf.Q4_0: q40x8AVX2S,
	gguf.Q5_0: q50x8AVX2S,
}

// x8Streams is kernelgen's: the runs those kernels read at once.
const x8Streams = 4

// runsAtOnce is how many runs of groups kernel set k's one-token kernels
// read at once: a decode chunk of groups a multiple of it leaves none to
// the slower one-run kernel.
func runsAtOnce(k isa) int {
	if k == isaAVX2 {
		return x8Streams
	}
	return 1
}

// streamRuns runs a one-token kernel f over groups of gbytes each as
// x8Streams runs at once, and the groups left over with one, which
// reads one run (out gets 32 bytes per group).
func streamRuns(f, one func(w *byte, groups int, out *float32), w []byte, groups, gbytes int, out []float32) {
	per := groups / x8Streams
	if per > 0 {
		f(&w[0], per, &out[0])
	}
	if done := per * x8Streams; done < groups {
		one(&w[done*gbytes], groups-done, &out[8*done])
	}
}

// x8AVX2Kernels are the AVX2 repacked kernels per format, for tiles of 4,
// 2 and 1 tokens.
var x8AVX2Kernels = map[gguf.TensorType][3]x8RunFunc{
	gguf.Q8_0: {q80x8AVX2T4, q80x8AVX2T2, q80x8AVX2T1},
	gguf.Q4_0: {q40x8AVX2T4, q40x8AVX2T2, q40x8AVX2T1},
	gguf.Q5_0: {q50x8AVX2T4, q50x8AVX2T2, q50x8AVX2T1},
}

// x8Asm runs the repacked Q8_0-family kernels over groups of R rows (w)
// for each token tile of q.X8, writing out[t·ostride + r].
func x8Asm(k isa, t gguf.TensorType, w []byte, R, groups, nb int, q *Q8, n int, out []float32, ostride int) bool {
	if !repacks(k, t) || groups == 0 {
		return repacks(k, t)
	}
	_ = w[groups*nb*R*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+R*groups-1]
	_ = q.X8[n*nb*x8ActBytes-1]
	if k == isaAVX2 && n == 1 {
		gb, s := nb*8*t.BlockBytes(), x8AVX2Streams[t]
		per := groups / x8Streams
		streamRuns(func(w *byte, g int, out *float32) { s(w, g, nb, &q.X8[0], per*gb, out, 32*per) },
			func(w *byte, g int, out *float32) { x8AVX2Kernels[t][2](w, g, nb, &q.X8[0], x8ActBytes, out, 0) },
			w, groups, gb, out)
		return true
	}
	if k == isaAVX2 {
		x8Runs(x8AVX2Kernels[t], w, groups, nb, q, n, out, ostride)
		return true
	}
	fs := x8Kernels[t][R/16]
	for t0 := 0; t0 < n; {
		_, T := x8Tile(t0, n)
		fs[slices.Index(x8Tiles[:], T)](&w[0], groups, nb, &q.X8[t0*nb*x8ActBytes], &out[t0*ostride], ostride*4)
		t0 += T
	}
	return true
}

// expShiftAsm and siluMulAsm do whole groups of 8 and return how many
// elements they covered.
func expShiftAsm(k isa, w []float32, shift, scale float32) int {
	n := len(w) &^ 7
	if k == isaGeneric || n == 0 {
		return 0
	}
	expShiftAVX2(&w[0], n, shift, scale)
	return n
}

func siluMulAsm(k isa, g, u []float32) int {
	n := len(g) &^ 7
	if k == isaGeneric || n == 0 {
		return 0
	}
	_ = u[n-1]
	siluMulAVX2(&g[0], &u[0], n)
	return n
}

// kxAsm runs the repacked K-quant kernel for groups of R rows (w) against
// one token's Q8_K activations, out[0 : R·groups].
func kxAsm(k isa, t gguf.TensorType, w []byte, R, groups, nb int, q []int8, d []float32, bsums []int16, out []float32) bool {
	if !k.avx512() {
		return false
	}
	_ = w[groups*nb*t.BlockBytes()*R-1]
	_ = q[nb*256-1]
	_ = d[nb-1]
	_ = bsums[nb*16-1]
	_ = out[R*groups-1]
	// Direct calls (not through a func value) keep out on the caller's
	// stack.
	switch {
	case t == gguf.Q4_K && R == 16:
		q4kx16VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	case t == gguf.Q4_K:
		q4kx8VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	case t == gguf.Q5_K && R == 16:
		q5kx16VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	case t == gguf.Q5_K:
		q5kx8VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	case t == gguf.Q6_K && R == 16:
		q6kx16VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	default:
		q6kx8VNNI(&w[0], groups, nb, &q[0], &d[0], &bsums[0], &out[0])
	}
	return true
}

// flashAsm runs one Flash step in assembly (strides in bytes; bounds
// checked by the caller), prefetching the tile at pk, pv. The AVX2 kernel
// serves the AVX-512 machines too.
func flashAsm(f *Flash, k unsafe.Pointer, kstride int, v unsafe.Pointer, vstride, nk int, pk, pv unsafe.Pointer, f16 bool) {
	if f16 {
		flashF16AVX2(&f.Q[0], &f.o[0], &f.m[0], &f.l[0], &f.Lim[0], f.Rows, f.D, k, kstride, v, vstride, nk, pk, pv)
	} else {
		flashF32AVX2(&f.Q[0], &f.o[0], &f.m[0], &f.l[0], &f.Lim[0], f.Rows, f.D, k, kstride, v, vstride, nk, pk, pv)
	}
}

// kx8AVX2Kernels are the AVX2 kernels of each repacked K-quant: four
// tokens, one token, and one token over x8Streams runs of groups.
var kx8AVX2Kernels = map[gguf.TensorType]struct {
	t4, t1 func(w *byte, groups, nb int, a *byte, out *float32, ostride int)
	s      func(w *byte, groups, nb int, a *byte, out *float32, ostride, wstep int)
}{
	gguf.Q4_K: {q4kx8AVX2T4, q4kx8AVX2T1, q4kx8AVX2S},
	gguf.Q5_K: {q5kx8AVX2T4, q5kx8AVX2T1, q5kx8AVX2S},
	gguf.Q6_K: {q6kx8AVX2T4, q6kx8AVX2T1, q6kx8AVX2S},
}

// kx8Asm runs the AVX2 kernels of K-quants repacked eight rows at a time
// (w: groups of them) over the token tiles of q.KTile (four tokens, the
// rest one by one), writing out[t·ostride + r].
func kx8Asm(k isa, t gguf.TensorType, w []byte, groups, nb int, q *Q8, n int, out []float32, ostride int) bool {
	fs, ok := kx8AVX2Kernels[t]
	if k != isaAVX2 || !ok {
		return false
	}
	if groups == 0 {
		return true
	}
	_ = w[groups*nb*8*t.BlockBytes()-1]
	_ = out[(n-1)*ostride+8*groups-1]
	_ = q.KTile[n*nb*kTileBytes-1]
	if n == 1 {
		gb, per := nb*8*t.BlockBytes(), groups/x8Streams
		streamRuns(func(w *byte, g int, out *float32) { fs.s(w, g, nb, &q.KTile[0], out, 32*per, per*gb) },
			func(w *byte, g int, out *float32) { fs.t1(w, g, nb, &q.KTile[0], out, 0) },
			w, groups, gb, out)
		return true
	}
	for tok := 0; tok < n; {
		a, o := &q.KTile[tok*nb*kTileBytes], &out[tok*ostride]
		if n-tok >= 4 {
			fs.t4(&w[0], groups, nb, a, o, ostride*4)
			tok += 4
		} else {
			fs.t1(&w[0], groups, nb, a, o, ostride*4)
			tok++
		}
	}
	return true
}

// x8RecordsAsm writes the X8 records of Q8_0 blocks (q, d) from o,
// ostride bytes apart: the 32 quants, −off·Σq, d (Q8.writeX8).
func x8RecordsAsm(k isa, q []int8, d []float32, off int32, o []byte, ostride int) bool {
	if k == isaGeneric {
		return false
	}
	if len(d) == 0 {
		return true
	}
	_ = q[len(d)*32-1]
	_ = o[(len(d)-1)*ostride+x8ActBytes-1]
	x8RecordsAVX2(&q[0], &d[0], len(d), off, &o[0], ostride)
	return true
}

// quantQ8_KAsm quantises Q8_K blocks of x into q, d and their sums bs
// (lengths checked by the caller), from the first block until one that
// Go must do (kernelgen's quantQ8KKernel), and returns how many.
func quantQ8_KAsm(k isa, x []float32, q []int8, d []float32, bs []int16) int {
	if k == isaGeneric || len(d) == 0 {
		return 0
	}
	_ = x[len(d)*256-1]
	_ = q[len(d)*256-1]
	_ = bs[len(d)*16-1]
	return quantQ8_KAVX2(&x[0], len(d), &q[0], &d[0], &bs[0])
}

// quantQ8_0Asm quantises whole Q8_0 blocks of x into q and d (their
// lengths checked by the caller) and reports whether it did.
func quantQ8_0Asm(k isa, x []float32, q []int8, d []float32) bool {
	if k == isaGeneric || len(d) == 0 {
		return false
	}
	_ = x[len(d)*32-1]
	_ = q[len(d)*32-1]
	quantQ8_0AVX2(&x[0], len(d), &q[0], &d[0])
	return true
}

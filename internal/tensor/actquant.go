package tensor

import (
	"encoding/binary"
	"math"
)

// Q8 holds activations quantised per block, as llama.cpp quantises them
// before integer dot products: Q8_0 (blocks of 32, scale rounded to fp16)
// for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weights, Q8_K (blocks of 256, float32 scale)
// for the K-quants.
type Q8 struct {
	Block int
	Q     []int8
	D     []float32 // one scale per block
	// BSums (Q8_K only) holds the sum of each 16 quants, which the
	// K-quant dot products use for the minimums and offsets.
	BSums []int16
	// VNNI (Q8_0 blocks, layoutVNNI) is the layout of the AVX-512 VNNI
	// row kernels: per block the 32 quants, then eight int32 lanes of
	// -off·(sum of four quants), so that unsigned weights w+off give
	// exact Σ w·a in one VPDPBUSD.
	VNNI []byte
	// KTile (Q8_K, layoutKTile) is the layout of the VNNI K-quant tile
	// kernels: tokens in tiles of four (the remainder one by one), each
	// tile's super-blocks in order, each super-block holding the tile's
	// quants, then its scales, then its block sums, so that one pointer
	// walks every token of the tile.
	KTile []byte
	// X8 (Q8_0 blocks, layoutX8) is the layout of the repacked kernels:
	// tokens in tiles (x8Tiles), each tile's blocks in order, each block
	// holding the tile's tokens one after another (x8ActBytes each).
	X8 []byte

	layout actLayout // which of the layouts above quantize also fills
	off    int32     // the weights' unsigned offset (VNNI, X8)
	tokens int       // tokens in the batch (KTile, X8)
}

// actLayout is an extra layout of quantised activations for a kernel set.
type actLayout uint8

const (
	layoutPlain actLayout = iota
	layoutVNNI
	layoutKTile
	layoutX8
)

// QuantizeQ8_0 quantises x (a multiple of 32 long) into q, reusing its
// buffers: d = amax/127 rounded to fp16, q = round-half-even(x·127/amax),
// as ggml's x86 path.
func QuantizeQ8_0(x []float32, q *Q8) {
	q.layout = layoutPlain
	q.prepare(len(x), 32)
	q.quantize(x, 0, len(x)/32)
}

// QuantizeQ8_K quantises x (a multiple of 256 long) as ggml's
// quantize_row_q8_K: the scale comes from the element of largest magnitude
// (sign kept), iscale = -127/max, q = round-half-even(iscale·x) capped at
// 127, d = 1/iscale; and the sums of each 16 quants.
func QuantizeQ8_K(x []float32, q *Q8) {
	q.layout = layoutPlain
	q.prepare(len(x), 256)
	q.quantize(x, 0, len(x)/256)
}

// prepare sizes q for n values in blocks of block (32: Q8_0, 256: Q8_K).
func (q *Q8) prepare(n, block int) {
	q.Block = block
	q.Q = resize(q.Q, n)
	q.D = resize(q.D, n/block)
	if block == 256 {
		q.BSums = resize(q.BSums, n/16)
	}
	switch q.layout {
	case layoutVNNI:
		q.VNNI = resize(q.VNNI, n*2)
	case layoutKTile:
		q.KTile = resize(q.KTile, n/256*kTileBytes)
	case layoutX8:
		q.X8 = resize(q.X8, n/32*x8ActBytes)
	}
}

// kTileBytes is one token's super-block in KTile: 256 quants, a float32
// scale and sixteen int16 block sums.
const kTileBytes = 256 + 4 + 32

// kTile returns where super-block b (of all tokens' blocks in order) puts
// its quants, scale and sums in KTile.
func (q *Q8) kTile(b int) (qs, d, bs []byte) {
	nb := len(q.D) / q.tokens
	tok, bi := b/nb, b%nb
	first, T := tok&^3, 4
	if first+4 > q.tokens {
		first, T = tok, 1
	}
	t := tok - first
	base := (first*nb + bi*T) * kTileBytes
	qs = q.KTile[base+256*t : base+256*t+256]
	d = q.KTile[base+256*T+4*t : base+256*T+4*t+4]
	bs = q.KTile[base+260*T+32*t : base+260*T+32*t+32]
	return qs, d, bs
}

// quantize fills blocks [lo, hi) of q from x; blocks are independent, so
// ranges may run in parallel.
func (q *Q8) quantize(x []float32, lo, hi int) {
	if q.Block == 32 {
		quantQ8_0Blocks(x, q, lo, hi)
	} else {
		quantQ8_KBlocks(x, q, lo, hi)
	}
}

func quantQ8_0Blocks(x []float32, q *Q8, lo, hi int) {
	asm := quantQ8_0Asm(hostISA, x[lo*32:hi*32], q.Q[lo*32:hi*32], q.D[lo:hi])
	for b := lo; b < hi; b++ {
		qs := q.Q[b*32 : b*32+32]
		if !asm {
			xs := x[b*32 : b*32+32]
			var amax float32
			for _, v := range xs {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			q.D[b] = RoundF16(amax / 127)
			id := 127 / amax
			if !(id < float32(math.Inf(1))) { // amax 0, or tiny: the scale is 0
				id = 0
			}
			for j, v := range xs {
				qs[j] = int8(math.RoundToEven(float64(v * id)))
			}
		}
		if q.layout == layoutVNNI {
			dst := q.VNNI[b*64 : b*64+64]
			for l := range 8 {
				s := int32(qs[4*l]) + int32(qs[4*l+1]) + int32(qs[4*l+2]) + int32(qs[4*l+3])
				binary.LittleEndian.PutUint32(dst[32+4*l:], uint32(-q.off*s))
				dst[4*l], dst[4*l+1], dst[4*l+2], dst[4*l+3] = byte(qs[4*l]), byte(qs[4*l+1]), byte(qs[4*l+2]), byte(qs[4*l+3])
			}
		}
	}
	if q.layout == layoutX8 {
		q.writeX8(lo, hi)
	}
}

func quantQ8_KBlocks(x []float32, q *Q8, lo, hi int) {
	for b := lo; b < hi; {
		n := quantQ8_KAsm(hostISA, x[b*256:hi*256], q.Q[b*256:hi*256], q.D[b:hi], q.BSums[b*16:hi*16])
		if n == 0 { // no assembly here, or a block it leaves to Go
			quantQ8_KBlock(x[b*256:b*256+256], q.Q[b*256:b*256+256], &q.D[b], q.BSums[b*16:b*16+16])
			n = 1
		}
		b += n
	}
	if q.layout != layoutKTile {
		return
	}
	for b := lo; b < hi; b++ {
		tq, td, tbs := q.kTile(b)
		for j, v := range q.Q[b*256 : b*256+256] {
			tq[j] = byte(v)
		}
		binary.LittleEndian.PutUint32(td, math.Float32bits(q.D[b]))
		for g := range 16 {
			binary.LittleEndian.PutUint16(tbs[2*g:], uint16(q.BSums[b*16+g]))
		}
	}
}

// quantQ8_KBlock is llama.cpp's quantize_row_q8_K for one block: the
// scale −127/max from the first element of largest magnitude, the
// products rounded half to even, and the sums of each 16 quants.
func quantQ8_KBlock(xs []float32, qs []int8, d *float32, bsums []int16) {
	var amax, mx float32
	for _, v := range xs {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax == 0 {
		*d = 0
		clear(qs)
	} else {
		iscale := -127 / mx
		for j, v := range xs {
			qs[j] = int8(min(127, math.RoundToEven(float64(iscale*v))))
		}
		*d = 1 / iscale
	}
	for g := range 16 {
		var s int16
		for _, v := range qs[g*16 : g*16+16] {
			s += int16(v)
		}
		bsums[g] = s
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func sumQ8K(q *Q8) {
	for g := range q.BSums {
		var s int16
		for _, v := range q.Q[g*16 : g*16+16] {
			s += int16(v)
		}
		q.BSums[g] = s
	}
}

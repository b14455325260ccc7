package tensor

import (
	"encoding/binary"
	"math"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Q8_0 weights can be repacked eight rows at a time ("x8") for the VNNI
// kernels: per group of eight rows and per block, the eight fp16 scales,
// then for each four quants k the eight rows' quants k, stored +128
// (unsigned). One VPDPBUSD against a token's four quants broadcast then
// advances eight rows at once, the SIMD lanes being rows: no horizontal
// sums, and each weight load serves a whole tile of tokens. The layout
// takes exactly the bytes of the original rows, so it can replace them in
// place.
//
// The result of a repacked matrix is, per row and token, the sum over
// blocks b of float32(Σ w·a)·(dw_b·da_b), added block by block (dotQ8x8).
// It differs in the last bits from the unpacked kernels' lane order, but
// every batch size and kernel set gives the same bits for one matrix.

// x8ActBytes is one token's block in Q8.X8: 32 quants, the int32
// correction −off·Σq for the unsigned weights (off 128, 8 or 16 for
// Q8_0, Q4_0, Q5_0), and the float32 scale.
const x8ActBytes = 40

// x8Tiles are the token tiles of the x8 kernels, largest first; a batch
// is split greedily.
var x8Tiles = [...]int{16, 8, 4, 2, 1}

// x8Tile returns the tile (first token, size) that token tok of n is in.
func x8Tile(tok, n int) (int, int) {
	t0 := 0
	for _, T := range x8Tiles {
		for n-t0 >= T {
			if tok < t0+T {
				return t0, T
			}
			t0 += T
		}
	}
	panic("BUG: tensor: token outside the batch")
}

// Repack rearranges a Q8_0, Q4_K or Q6_K matrix into its x8 layout (Q4_K: see
// x8k.go), writing dst (as long as Data; it may be Data itself, when the
// caller owns those bytes), if this CPU runs the x8 kernels and Rows is a
// multiple of 8. It reports whether it did.
func (m *Matrix) Repack(dst []byte) bool {
	if m.Rows%8 != 0 || m.isa != isaVNNI || m.x8 || len(dst) != len(m.Data) {
		return false
	}
	if m.Type == gguf.Q4_K || m.Type == gguf.Q6_K {
		copy(dst, m.Data)
		m.Data = dst
		R := 8
		if m.Rows%16 == 0 {
			R = 16
		}
		m.repackK(R)
		m.x8 = true
		return true
	}
	if m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0 && m.Type != gguf.Q5_0 {
		return false
	}
	rb, nb, bb := m.rowBytes, m.Cols/32, m.Type.BlockBytes()
	buf := make([]byte, 8*rb)
	for g := range m.Rows / 8 {
		copy(buf, m.Data[g*8*rb:(g+1)*8*rb])
		out := dst[g*8*rb : (g+1)*8*rb]
		for b := range nb {
			o := out[b*8*bb : (b+1)*8*bb]
			for r := range 8 {
				blk := buf[r*rb+b*bb : r*rb+(b+1)*bb]
				x8Offsets(m.Type, r, func(oo, bo, n int) { copy(o[oo:oo+n], blk[bo:bo+n]) })
				if m.Type == gguf.Q8_0 {
					for k := range 8 {
						for j := range 4 {
							o[16+32*k+4*r+j] ^= 0x80
						}
					}
				}
			}
		}
	}
	m.Data, m.x8 = dst, true
	return true
}

// x8Offsets calls f for each piece of row r's block: where it goes in the
// group block, where it is in the block, how long. Q8_0's quants are
// stored +128 (the caller flips their top bits).
func x8Offsets(t gguf.TensorType, r int, f func(o, b, n int)) {
	f(2*r, 0, 2)
	switch t {
	case gguf.Q8_0:
		for k := range 8 {
			f(16+32*k+4*r, 2+4*k, 4)
		}
	case gguf.Q4_0:
		for g := range 4 {
			f(16+32*g+4*r, 2+4*g, 4)
		}
	case gguf.Q5_0:
		f(16+4*r, 2, 4) // qh
		for g := range 4 {
			f(48+32*g+4*r, 6+4*g, 4)
		}
	}
}

// unpackX8 writes row r's block b back in its GGUF layout.
func (m *Matrix) unpackX8(r, b int, blk []byte) {
	bb := m.Type.BlockBytes()
	o := m.Data[r/8*8*m.rowBytes+b*8*bb:][:8*bb]
	x8Offsets(m.Type, r%8, func(oo, bo, n int) { copy(blk[bo:bo+n], o[oo:oo+n]) })
	if m.Type == gguf.Q8_0 {
		for j := 2; j < 34; j++ {
			blk[j] ^= 0x80
		}
	}
}

// rowX8 dequantises row r of a repacked matrix.
func (m *Matrix) rowX8(r int, dst []float32) {
	var buf [34]byte
	blk := buf[:m.Type.BlockBytes()]
	for b := range m.Cols / 32 {
		m.unpackX8(r, b, blk)
		if err := Dequantize(m.Type, blk, dst[b*32:(b+1)*32]); err != nil {
			panic("BUG: tensor: " + err.Error())
		}
	}
}

// dotX8 is the pure-Go x8 kernel: the eight rows of group g against one
// token's Q8_0 activations (q, d), into out[0:8]: per row and block the
// exact integer Σ w·a, then sum += float32(Σ)·(dw·da), block by block.
func (m *Matrix) dotX8(g int, q []int8, d []float32, out []float32) {
	var buf [34]byte
	var w [32]int8
	blk := buf[:m.Type.BlockBytes()]
	for lane := range 8 {
		var sum float32
		for b := range d {
			m.unpackX8(8*g+lane, b, blk)
			decodeQ8Family(m.Type, blk, &w)
			var isum int32
			for j, v := range w {
				isum += int32(v) * int32(q[b*32+j])
			}
			s := f16at(blk, 0) * d[b]
			sum = sum + float32(float32(isum)*s)
		}
		out[lane] = sum
	}
}

// writeX8 stores Q8_0 block b (of all tokens' blocks in order) in X8.
func (q *Q8) writeX8(b int, qs []int8, d float32) {
	nb := len(q.D) / q.tokens
	tok, bi := b/nb, b%nb
	t0, T := x8Tile(tok, q.tokens)
	o := q.X8[(t0*nb+bi*T+tok-t0)*x8ActBytes:][:x8ActBytes]
	var sum int32
	for j, v := range qs {
		o[j] = byte(v)
		sum += int32(v)
	}
	binary.LittleEndian.PutUint32(o[32:], uint32(-q.x8off*sum))
	binary.LittleEndian.PutUint32(o[36:], math.Float32bits(d))
}

// mulRowsX8 computes rows [lo, hi) (multiples of 8) of a repacked matrix
// for n tokens.
func (m *Matrix) mulRowsX8(lo, hi int, n int, out []float32, q *Q8) {
	rb, nb := m.rowBytes, m.Cols/32
	if x8Asm(m.isa, m.Type, m.Data[lo*rb:hi*rb], (hi-lo)/8, nb, q, n, out[lo:], m.Rows) {
		return
	}
	var tmp [8]float32
	for g := lo / 8; g < hi/8; g++ {
		for t := range n {
			m.dotX8(g, q.Q[t*m.Cols:(t+1)*m.Cols], q.D[t*nb:(t+1)*nb], tmp[:])
			copy(out[t*m.Rows+8*g:], tmp[:])
		}
	}
}

// x8Offset is what the x8 kernels add to t's signed quants.
func x8Offset(t gguf.TensorType) int32 {
	switch t {
	case gguf.Q4_0:
		return 8
	case gguf.Q5_0:
		return 16
	}
	return 128
}

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

// x8GroupBlock is one block of a group of eight rows.
const x8GroupBlock = 8 * 34

// x8ActBytes is one token's block in Q8.X8: 32 quants, the int32
// correction −128·Σq for the unsigned weights, and the float32 scale.
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
	if m.Type != gguf.Q8_0 {
		return false
	}
	rb, nb := m.rowBytes, m.Cols/32
	buf := make([]byte, 8*rb)
	for g := range m.Rows / 8 {
		copy(buf, m.Data[g*8*rb:(g+1)*8*rb])
		out := dst[g*8*rb : (g+1)*8*rb]
		for b := range nb {
			o := out[b*x8GroupBlock : (b+1)*x8GroupBlock]
			for r := range 8 {
				blk := buf[r*rb+b*34 : r*rb+b*34+34]
				o[2*r], o[2*r+1] = blk[0], blk[1]
				for k := range 8 {
					for j := range 4 {
						o[16+32*k+4*r+j] = blk[2+4*k+j] ^ 0x80
					}
				}
			}
		}
	}
	m.Data, m.x8 = dst, true
	return true
}

// rowX8 dequantises row r of a repacked matrix.
func (m *Matrix) rowX8(r int, dst []float32) {
	grp := m.Data[r/8*8*m.rowBytes:]
	lane := r % 8
	for b := range m.Cols / 32 {
		o := grp[b*x8GroupBlock:]
		dw := f16at(o, 2*lane)
		for k := range 8 {
			for j := range 4 {
				dst[b*32+4*k+j] = dw * float32(int8(o[16+32*k+4*lane+j]^0x80))
			}
		}
	}
}

// dotQ8x8 is the pure-Go x8 kernel: the eight rows of group grp against
// one token's Q8_0 activations (q, d), into out[0:8].
func dotQ8x8(grp []byte, q []int8, d []float32, out []float32) {
	for lane := range 8 {
		var sum float32
		for b := range d {
			o := grp[b*x8GroupBlock : (b+1)*x8GroupBlock]
			var isum int32
			for k := range 8 {
				for j := range 4 {
					isum += int32(int8(o[16+32*k+4*lane+j]^0x80)) * int32(q[b*32+4*k+j])
				}
			}
			s := f16at(o, 2*lane) * d[b]
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
	binary.LittleEndian.PutUint32(o[32:], uint32(-128*sum))
	binary.LittleEndian.PutUint32(o[36:], math.Float32bits(d))
}

// mulRowsX8 computes rows [lo, hi) (multiples of 8) of a repacked matrix
// for n tokens.
func (m *Matrix) mulRowsX8(lo, hi int, n int, out []float32, q *Q8) {
	rb, nb := m.rowBytes, m.Cols/32
	if x8Asm(m.isa, m.Data[lo*rb:hi*rb], (hi-lo)/8, nb, q, n, out[lo:], m.Rows) {
		return
	}
	var tmp [8]float32
	for g := lo / 8; g < hi/8; g++ {
		grp := m.Data[g*8*rb : (g+1)*8*rb]
		for t := range n {
			dotQ8x8(grp, q.Q[t*m.Cols:(t+1)*m.Cols], q.D[t*nb:(t+1)*nb], tmp[:])
			copy(out[t*m.Rows+8*g:], tmp[:])
		}
	}
}

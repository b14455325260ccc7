package tensor

import (
	"encoding/binary"
	"math"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Weights can be repacked R rows at a time for the kernels whose SIMD
// lanes are rows: one VPDPBUSD (AVX-512 VNNI; on AVX2 VPMADDUBSW and
// VPMADDWD; on arm64 with the dot product, SDOT by element on four rows)
// against a token's four quants (broadcast) advances R rows at once,
// with no horizontal sums, and each weight load serves every token of a
// tile. The layout takes exactly the bytes of the original rows, so it
// replaces them in place. R is 8, and on VNNI 16 where the row count
// allows (512-bit registers: twice the rows per instruction; on the Zen 5
// of docs/cpu.md the Q8_0 family's one-token kernel read 45 → 83 GB/s
// from L2 for Q4_0, and 512 tokens ran 540–595 → 895–1017 GFLOP/s). The
// layout is made for one kernel set (Matrix.pack): Q8_0's quants are
// stored +128 for VNNI and signed for AVX2 and arm64.
// Per group of R rows and block (offsets in bytes; "the rows'" means R
// consecutive 4-byte or 2-byte pieces, one per row):
//
//	Q8_0  0: scales (fp16)   2R: quants 4k…4k+3, k = 0…7 (+128 for VNNI)
//	Q4_0  0: scales          2R: nibble bytes 4g…4g+3, g = 0…3
//	Q5_0  0: scales          2R: qh dwords (as q5hPacked has them)
//	      6R: nibble bytes as Q4_0
//	Q4_K  0: d   2R: dmin   4R: scale bytes 0–3, 4–7, 8–11
//	      16R: packed nibble bytes 32p+4k…, p = 0…3, k = 0…7
//	Q5_K  as Q4_K, with 16R: qh dwords 0…7   48R: the nibble bytes
//	Q6_K  0: d   2R: the 16 int8 scales, one byte per row   18R: for
//	      each step s = (half n, k) in the order the kernel reads them
//	      (strictly forward: an interleaved order halved the speed from
//	      DRAM), ql bytes 64n+4k…, ql 64n+32+4k…, qh 32n+4k…
//
// Results: the Q8_0 family sums, per row, block and token, the exact
// integer Σ w·a, then sum += float32(Σ)·(dw·da) block by block (dotX8);
// this differs in the last bits from the unpacked kernels' lane order.
// The K-quants give dotQ4K's and dotQ6K's bits exactly. Either way every
// batch size and kernel set gives the same bits for one matrix.

// x8ActBytes is one token's block in Q8.X8: 32 quants, the int32
// correction −off·Σq for the unsigned weights (off 128, 8 or 16 for
// Q8_0, Q4_0, Q5_0), and the float32 scale.
const x8ActBytes = 40

// x8Tiles are the token tiles of the Q8_0-family kernels, largest first;
// a batch is split greedily.
var x8Tiles = [...]int{16, 8, 4, 2, 1}

// x8RunFunc is a kernel over runs of 4, 2 or 1 tokens (registers) within
// a layout tile: groups of eight rows of w against the tokens whose
// blocks are at a + b·astride + 40t, into out + t·ostride (bytes) + 32g.
type x8RunFunc = func(w *byte, groups, nb int, a *byte, astride int, out *float32, ostride int)

// x8Runs runs kernels fs (for runs of 4, 2 and 1 tokens) over groups of
// eight rows (w) for the n tokens of q.X8, writing out[t·ostride + r]: a
// layout tile of T tokens (blocks T·x8ActBytes apart) is split into runs
// of at most four.
func x8Runs(fs [3]x8RunFunc, w []byte, groups, nb int, q *Q8, n int, out []float32, ostride int) {
	for t0 := 0; t0 < n; {
		_, T := x8Tile(t0, n)
		for s := 0; s < T; {
			size, i := 1, 2
			switch {
			case T-s >= 4:
				size, i = 4, 0
			case T-s >= 2:
				size, i = 2, 1
			}
			fs[i](&w[0], groups, nb, &q.X8[(t0*nb+s)*x8ActBytes], T*x8ActBytes, &out[(t0+s)*ostride], ostride*4)
			s += size
		}
		t0 += T
	}
}

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

// Repack rearranges a Q8_0, Q4_0, Q5_0, Q4_K, Q5_K or Q6_K matrix into its
// repacked layout, writing dst (as long as Data; it may be Data itself,
// when the caller owns those bytes), if this CPU runs the kernels for it
// and Rows is a multiple of 8 (groups of 16 rows on VNNI when Rows is a
// multiple of 16). It reports whether it did.
func (m *Matrix) Repack(dst []byte) bool {
	if m.Rows%8 != 0 || !repacks(m.isa, m.Type) || m.group != 0 || len(dst) != len(m.Data) {
		return false
	}
	R := 8
	if m.isa.avx512() && m.Rows%16 == 0 {
		R = 16 // groups on 512-bit registers
	}
	m.pack = m.isa.layout()
	rb, bb := m.rowBytes, m.Type.BlockBytes()
	buf := make([]byte, R*rb)
	for g := range m.Rows / R {
		copy(buf, m.Data[g*R*rb:(g+1)*R*rb])
		out := dst[g*R*rb : (g+1)*R*rb]
		for b := range rb / bb {
			o := out[b*R*bb : (b+1)*R*bb]
			for r := range R {
				blk := buf[r*rb+b*bb : r*rb+(b+1)*bb]
				packOffsets(m.Type, r, R, func(oo, bo, n int) {
					copy(o[oo:oo+n], blk[bo:bo+n])
					m.toPacked(bo, o[oo:oo+n], true)
				})
			}
		}
	}
	m.Data, m.group = dst, R
	return true
}

// unpackBlock writes row r's block b back in its GGUF layout.
func (m *Matrix) unpackBlock(r, b int, blk []byte) {
	R, bb := m.group, m.Type.BlockBytes()
	o := m.Data[r/R*R*m.rowBytes+b*R*bb:][:R*bb]
	packOffsets(m.Type, r%R, R, func(oo, bo, n int) {
		copy(blk[bo:bo+n], o[oo:oo+n])
		m.toPacked(bo, blk[bo:bo+n], false)
	})
}

// repacks reports whether kernel set k has repacked kernels for t.
func repacks(k isa, t gguf.TensorType) bool {
	switch t {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		return k.x86() || k == isaDotProd
	}
	return false
}

// toPacked changes a piece of a block (at offset bo in the block) to
// (packed) or from its layout for m.pack: VNNI's Q8_0 quants are +128,
// and Q5_0's fifth bits are arranged as Q5_K's (q5hPacked).
func (m *Matrix) toPacked(bo int, b []byte, packed bool) {
	switch {
	case m.Type == gguf.Q8_0 && m.pack == isaVNNI && bo >= 2:
		for i := range b {
			b[i] ^= 0x80
		}
	case m.Type == gguf.Q5_0 && bo == 2:
		binary.LittleEndian.PutUint32(b, q5hPacked(binary.LittleEndian.Uint32(b), packed))
	}
}

// q5hPacked rearranges a Q5_0 block's fifth bits (bit e for element e) so
// that byte i, bit k holds element 16·(k/4) + 4·(k%4) + i's: the AVX2
// kernels' four bytes for step k (elements 4g+i of the low or high
// nibbles, k = 4·hi + g) then get them at bit 4 with one shift by k−4
// and a mask, as Q5_K's do, instead of a multiply that spreads them.
// packed false undoes it.
func q5hPacked(qh uint32, packed bool) uint32 {
	var out uint32
	for k := range 8 {
		for i := range 4 {
			e, p := 16*(k/4)+4*(k%4)+i, 8*i+k
			if !packed {
				e, p = p, e
			}
			out |= (qh >> e & 1) << p
		}
	}
	return out
}

// packOffsets calls f for each piece of row r's block: where it goes in a
// group block of R rows, where it is in the row's block, how long.
func packOffsets(t gguf.TensorType, r, R int, f func(o, b, n int)) {
	switch t {
	case gguf.Q8_0:
		f(2*r, 0, 2)
		for k := range 8 {
			f(2*R+4*R*k+4*r, 2+4*k, 4)
		}
	case gguf.Q4_0:
		f(2*r, 0, 2)
		for g := range 4 {
			f(2*R+4*R*g+4*r, 2+4*g, 4)
		}
	case gguf.Q5_0:
		f(2*r, 0, 2)
		f(2*R+4*r, 2, 4) // qh
		for g := range 4 {
			f(6*R+4*R*g+4*r, 6+4*g, 4)
		}
	case gguf.Q4_K:
		f(2*r, 0, 2)
		f(2*R+2*r, 2, 2)
		for i := range 3 {
			f(4*R+4*R*i+4*r, 4+4*i, 4)
		}
		for p := range 4 {
			for k := range 8 {
				f(16*R+32*R*p+4*R*k+4*r, 16+32*p+4*k, 4)
			}
		}
	case gguf.Q5_K:
		f(2*r, 0, 2)
		f(2*R+2*r, 2, 2)
		for i := range 3 {
			f(4*R+4*R*i+4*r, 4+4*i, 4)
		}
		for i := range 8 {
			f(16*R+4*R*i+4*r, 16+4*i, 4)
		}
		for p := range 4 {
			for k := range 8 {
				f(48*R+32*R*p+4*R*k+4*r, 48+32*p+4*k, 4)
			}
		}
	case gguf.Q6_K:
		f(2*r, 208, 2)
		for g := range 16 {
			f(2*R+R*g+r, 192+g, 1)
		}
		for s := range 16 {
			n, k := s/8, s%8
			base := 18*R + 12*R*s
			f(base+4*r, 64*n+4*k, 4)
			f(base+4*R+4*r, 64*n+32+4*k, 4)
			f(base+8*R+4*r, 128+32*n+4*k, 4)
		}
	}
}

// rowRepacked dequantises row r of a repacked matrix (an embedding lookup
// per token: no allocation).
func (m *Matrix) rowRepacked(r int, dst []float32) {
	var buf [256]byte
	blk := buf[:m.Type.BlockBytes()]
	be := m.Type.BlockElems()
	for b := range m.Cols / be {
		m.unpackBlock(r, b, blk)
		if err := Dequantize(m.Type, blk, dst[b*be:(b+1)*be]); err != nil {
			panic("BUG: tensor: " + err.Error())
		}
	}
}

// mulRowsRepacked computes rows [lo, hi) (multiples of the group) of a
// repacked matrix for n tokens.
func (m *Matrix) mulRowsRepacked(lo, hi int, n int, out []float32, q *Q8) {
	rb, R, be := m.rowBytes, m.group, m.Type.BlockElems()
	nb := m.Cols / be
	k := m.packedISA()
	if be == 32 && x8Asm(k, m.Type, m.Data[lo*rb:hi*rb], R, (hi-lo)/R, nb, q, n, out[lo:], m.Rows) {
		return
	}
	if be == 256 && kx8Asm(k, m.Type, m.Data[lo*rb:hi*rb], (hi-lo)/8, nb, q, n, out[lo:], m.Rows) {
		return
	}
	tok := func(t int) ([]int8, []float32) { return q.Q[t*m.Cols : (t+1)*m.Cols], q.D[t*nb : (t+1)*nb] }
	bsums := func(t int) []int16 { return q.BSums[t*nb*16 : (t+1)*nb*16] }
	if n == 1 && be == 256 { // one token streams all the rows in one call
		qs, d := tok(0)
		if kxAsm(k, m.Type, m.Data[lo*rb:hi*rb], R, (hi-lo)/R, nb, qs, d, bsums(0), out[lo:hi]) {
			return
		}
	}
	// A batch takes group by group, each meeting every token while in cache.
	var tmp [16]float32
	for g := lo / R; g < hi/R; g++ {
		for t := range n {
			qs, d := tok(t)
			switch {
			case be == 32:
				m.dotX8(g, qs, d, tmp[:R])
			case !kxAsm(k, m.Type, m.Data[g*R*rb:(g+1)*R*rb], R, 1, nb, qs, d, bsums(t), tmp[:R]):
				m.dotKx(g, qs, d, bsums(t), tmp[:R])
			}
			copy(out[t*m.Rows+R*g:], tmp[:R])
		}
	}
}

// decodeUnit is the rows a one-token chunk is a multiple of: the groups
// that the one-token kernels read at once (AVX2: four runs of eight-row
// groups; Qwen2.5-0.5B's down projection in chunks of 48 rows left a
// third of its groups to the one-run kernel, 5 % of a Q8_0 decode profile),
// and at least 16.
func (m *Matrix) decodeUnit() int {
	if m.group == 0 {
		return 16
	}
	return max(16, m.group*runsAtOnce(m.packedISA()))
}

// packedISA is the kernel set that runs on m's repacked layout: the one
// it was made for, when m's kernel set includes it (tests lower m.isa to
// check the others against pure Go), else pure Go.
func (m *Matrix) packedISA() isa {
	if m.isa >= m.pack {
		return m.pack
	}
	return isaGeneric
}

// dotX8 is the pure-Go kernel of the repacked Q8_0 family: the rows of
// group g against one token's Q8_0 activations (q, d), into out: per row
// and block the exact integer Σ w·a, then sum += float32(Σ)·(dw·da).
func (m *Matrix) dotX8(g int, q []int8, d []float32, out []float32) {
	var buf [34]byte
	var w [32]int8
	blk := buf[:m.Type.BlockBytes()]
	for lane := range out {
		var sum float32
		for b := range d {
			m.unpackBlock(len(out)*g+lane, b, blk)
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

// dotKx is the pure-Go kernel of a repacked K-quant: the row kernel for
// each row of group g. It allocates; it runs only where tests lower the
// kernel set (matrices are repacked only on CPUs with the assembly).
func (m *Matrix) dotKx(g int, q []int8, d []float32, bsums []int16, out []float32) {
	bb := m.Type.BlockBytes()
	row := make([]byte, m.rowBytes)
	for lane := range out {
		for b := range d {
			m.unpackBlock(len(out)*g+lane, b, row[b*bb:(b+1)*bb])
		}
		switch m.Type {
		case gguf.Q6_K:
			out[lane] = dotQ6K(row, q, d, bsums)
		case gguf.Q5_K:
			out[lane] = dotQ5K(row, q, d, bsums)
		default:
			out[lane] = dotQ4K(row, q, d, bsums)
		}
	}
}

// writeX8 stores Q8_0 blocks [lo, hi) (of all tokens' blocks in order) in
// X8: each token's run of them is a run of records T·x8ActBytes apart in
// its tile of T tokens, written by x8RecordsAsm where there is one (in Go
// this took 2 % of a Qwen Q4_0 decode profile, on the calling thread).
func (q *Q8) writeX8(lo, hi int) {
	nb := len(q.D) / q.tokens
	for b := lo; b < hi; {
		tok, bi := b/nb, b%nb
		t0, T := x8Tile(tok, q.tokens)
		end := min(hi, (tok+1)*nb)
		o := q.X8[(t0*nb+bi*T+tok-t0)*x8ActBytes:]
		if !x8RecordsAsm(hostISA, q.Q[b*32:end*32], q.D[b:end], q.off, o, T*x8ActBytes) {
			for i := range end - b {
				r := o[i*T*x8ActBytes:][:x8ActBytes]
				var sum int32
				for j, v := range q.Q[(b+i)*32 : (b+i)*32+32] {
					r[j] = byte(v)
					sum += int32(v)
				}
				binary.LittleEndian.PutUint32(r[32:], uint32(-q.off*sum))
				binary.LittleEndian.PutUint32(r[36:], math.Float32bits(q.D[b+i]))
			}
		}
		b = end
	}
}

// x8Offset is what the repacked kernels for k add to t's signed quants
// (the AVX2 Q8_0 kernel multiplies them signed).
func x8Offset(t gguf.TensorType, k isa) int32 {
	switch {
	case t == gguf.Q4_0:
		return 8
	case t == gguf.Q5_0:
		return 16
	case k.avx512():
		return 128
	}
	return 0
}

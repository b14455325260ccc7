package tensor

import "github.com/glassbox-llm/glassbox/internal/gguf"

// K-quant weights repacked R rows at a time (R = 16 where the row count
// allows, on 512-bit registers, else 8), in place (same size), for the VNNI
// kernels whose SIMD lanes are rows. Per group of R rows and super-block,
// 144·R bytes:
//
//	  0   d of the R rows (fp16)
//	 2R   dmin of the R rows (fp16)
//	 4R   scale bytes 0–3 of the R rows, then bytes 4–7, then 8–11 (3×4R)
//	16R   for each sub-block pair p and four quants k, the R rows'
//	      packed nibble bytes 32p+4k … 32p+4k+3 (4×8×4R)
//
// The 6-bit scales stay packed; the kernel unpacks them for R rows with
// the same shifts and masks dotQ4K's scalar code uses. Results are
// dotQ4K's, bit for bit.

//
// Q6_K (210·R bytes per group block) likewise:
//
//	  0   d of the R rows (fp16)
//	 2R   for each of the 16 scales, the R rows' int8 scale
//	18R   for each half n and four-quant step k, in the order the kernel
//	      reads them (memory is streamed strictly forward: an interleaved
//	      order halved the speed from DRAM), the R rows' ql bytes
//	      64n+4k…, then ql 64n+32+4k…, then qh 32n+4k… (16×12R)
//
// and the kernel assembles the 6-bit quants of R rows as dotQ6K does.

// kPack describes a K-quant's repacking.
type kPack struct {
	bytes int // block bytes
	q6    bool
	dot   func(row []byte, q []int8, d []float32, bsums []int16) float32
}

var kPacks = map[gguf.TensorType]*kPack{
	gguf.Q4_K: {144, false, dotQ4K},
	gguf.Q6_K: {210, true, dotQ6K},
}

// offsets calls f for each piece of row r's block: where it goes in a
// group block of R rows, where it is in the row's block, how long. (A
// direct call, not a func field: the closures stay on the stack.)
func (kp *kPack) offsets(r, R int, f func(o, b, n int)) {
	if kp.q6 {
		q6kOffsets(r, R, f)
	} else {
		q4kOffsets(r, R, f)
	}
}

// repackK rearranges m.Data in place in groups of R rows.
func (m *Matrix) repackK(R int) {
	kp := kPacks[m.Type]
	rb, nb, bb := m.rowBytes, m.Cols/256, kp.bytes
	buf := make([]byte, R*rb)
	for g := range m.Rows / R {
		copy(buf, m.Data[g*R*rb:(g+1)*R*rb])
		out := m.Data[g*R*rb : (g+1)*R*rb]
		for b := range nb {
			o := out[b*bb*R : (b+1)*bb*R]
			for r := range R {
				blk := buf[r*rb+b*bb : r*rb+(b+1)*bb]
				kp.offsets(r, R, func(oo, bo, n int) { copy(o[oo:oo+n], blk[bo:bo+n]) })
			}
		}
	}
	m.group = R
}

// unpackK reads row r's block back from group block o.
func unpackK(kp *kPack, o []byte, r, R int, blk []byte) {
	kp.offsets(r, R, func(oo, bo, n int) { copy(blk[bo:bo+n], o[oo:oo+n]) })
}

func q6kOffsets(r, R int, f func(o, b, n int)) {
	f(2*r, 208, 2)
	for g := range 16 {
		f(2*R+R*g+r, 192+g, 1)
	}
	for s := range 16 { // the kernel's order: half n, k-half, k
		n, k := s/8, s%8
		base := 18*R + 12*R*s
		f(base+4*r, 64*n+4*k, 4)
		f(base+4*R+4*r, 64*n+32+4*k, 4)
		f(base+8*R+4*r, 128+32*n+4*k, 4)
	}
}

// q4kOffsets lists, for row r of a group of R, where each piece of its
// super-block goes: (offset in the group block, offset in the row's block,
// bytes).
func q4kOffsets(r, R int, f func(o, b, n int)) {
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
}

// rowKx dequantises row r of a repacked K-quant matrix.
func (m *Matrix) rowKx(r int, dst []float32) {
	kp, R := kPacks[m.Type], m.group
	grp := m.Data[r/R*R*m.rowBytes:]
	var buf [256]byte // an embedding lookup per token: no allocation
	blk := buf[:kp.bytes]
	for b := range m.Cols / 256 {
		unpackK(kp, grp[b*kp.bytes*R:], r%R, R, blk)
		if kp.q6 {
			dequantQ6_K(blk, dst[b*256:(b+1)*256])
		} else {
			dequantQ4_K(blk, dst[b*256:(b+1)*256])
		}
	}
}

// dotKx is the pure-Go kernel of a repacked K-quant: the row kernel for
// each of the group's R rows. It allocates; it runs only where tests lower
// the kernel set (matrices are repacked only on CPUs with the assembly).
func dotKx(kp *kPack, grp []byte, R int, q []int8, d []float32, bsums []int16, out []float32) {
	nb := len(d)
	row := make([]byte, kp.bytes*nb)
	for r := range R {
		for b := range nb {
			unpackK(kp, grp[b*kp.bytes*R:], r, R, row[b*kp.bytes:(b+1)*kp.bytes])
		}
		out[r] = kp.dot(row, q, d, bsums)
	}
}

// mulRowsKx computes rows [lo, hi) (multiples of the group) of a
// repacked K-quant matrix for n tokens: one token streams the rows in one
// call; a batch takes group by group, each meeting every token while in
// cache.
func (m *Matrix) mulRowsKx(lo, hi int, n int, out []float32, q *Q8) {
	rb, nb, R := m.rowBytes, m.Cols/256, m.group
	tok := func(t int) ([]int8, []float32, []int16) {
		return q.Q[t*m.Cols : (t+1)*m.Cols], q.D[t*nb : (t+1)*nb], q.BSums[t*nb*16 : (t+1)*nb*16]
	}
	if n == 1 {
		qs, d, bs := tok(0)
		if kxAsm(m.isa, m.Type, m.Data[lo*rb:hi*rb], R, (hi-lo)/R, nb, qs, d, bs, out[lo:hi]) {
			return
		}
	}
	var tmp [16]float32
	for g := lo / R; g < hi/R; g++ {
		grp := m.Data[g*R*rb : (g+1)*R*rb]
		for t := range n {
			qs, d, bs := tok(t)
			if !kxAsm(m.isa, m.Type, grp, R, 1, nb, qs, d, bs, tmp[:R]) {
				dotKx(kPacks[m.Type], grp, R, qs, d, bs, tmp[:R])
			}
			copy(out[t*m.Rows+R*g:], tmp[:R])
		}
	}
}

package tensor

// Q4_K weights repacked R rows at a time (R = 16 where the row count
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

// repackQ4K rearranges m.Data in place in groups of R rows.
func (m *Matrix) repackQ4K(R int) {
	rb, nb := m.rowBytes, m.Cols/256
	buf := make([]byte, R*rb)
	for g := range m.Rows / R {
		copy(buf, m.Data[g*R*rb:(g+1)*R*rb])
		out := m.Data[g*R*rb : (g+1)*R*rb]
		for b := range nb {
			o := out[b*144*R : (b+1)*144*R]
			for r := range R {
				packQ4KRow(o, r, R, buf[r*rb+b*144:r*rb+b*144+144])
			}
		}
	}
	m.group = R
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

// packQ4KRow writes row r's super-block blk into group block o;
// unpackQ4KRow reads it back.
func packQ4KRow(o []byte, r, R int, blk []byte) {
	q4kOffsets(r, R, func(oo, bo, n int) { copy(o[oo:oo+n], blk[bo:bo+n]) })
}

func unpackQ4KRow(o []byte, r, R int, blk []byte) {
	q4kOffsets(r, R, func(oo, bo, n int) { copy(blk[bo:bo+n], o[oo:oo+n]) })
}

// rowQ4Kx8 dequantises row r of a repacked Q4_K matrix.
func (m *Matrix) rowQ4Kx8(r int, dst []float32) {
	R := m.group
	grp := m.Data[r/R*R*m.rowBytes:]
	var blk [144]byte
	for b := range m.Cols / 256 {
		unpackQ4KRow(grp[b*144*R:], r%R, R, blk[:])
		dequantQ4_K(blk[:], dst[b*256:(b+1)*256])
	}
}

// dotQ4Kx8 is the pure-Go kernel: dotQ4K for each of the group's R rows.
func dotQ4Kx8(grp []byte, R int, q []int8, d []float32, bsums []int16, out []float32) {
	nb := len(d)
	row := make([]byte, 144*nb)
	for r := range R {
		for b := range nb {
			unpackQ4KRow(grp[b*144*R:], r, R, row[b*144:(b+1)*144])
		}
		out[r] = dotQ4K(row, q, d, bsums)
	}
}

// mulRowsQ4Kx8 computes rows [lo, hi) (multiples of the group) of a
// repacked Q4_K matrix for n tokens: one token streams the rows in one
// call; a batch takes group by group, each meeting every token while in
// cache.
func (m *Matrix) mulRowsQ4Kx8(lo, hi int, n int, out []float32, q *Q8) {
	rb, nb, R := m.rowBytes, m.Cols/256, m.group
	tok := func(t int) ([]int8, []float32, []int16) {
		return q.Q[t*m.Cols : (t+1)*m.Cols], q.D[t*nb : (t+1)*nb], q.BSums[t*nb*16 : (t+1)*nb*16]
	}
	if n == 1 {
		qs, d, bs := tok(0)
		if q4kx8Asm(m.isa, m.Data[lo*rb:hi*rb], R, (hi-lo)/R, nb, qs, d, bs, out[lo:hi]) {
			return
		}
	}
	var tmp [16]float32
	for g := lo / R; g < hi/R; g++ {
		grp := m.Data[g*R*rb : (g+1)*R*rb]
		for t := range n {
			qs, d, bs := tok(t)
			if !q4kx8Asm(m.isa, grp, R, 1, nb, qs, d, bs, tmp[:R]) {
				dotQ4Kx8(grp, R, qs, d, bs, tmp[:R])
			}
			copy(out[t*m.Rows+R*g:], tmp[:R])
		}
	}
}

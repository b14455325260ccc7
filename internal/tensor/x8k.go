package tensor

// Q4_K weights repacked eight rows at a time, in place (same size), for
// the VNNI decode kernel whose SIMD lanes are rows. Per group of eight
// rows and super-block, 1152 bytes:
//
//	  0  d of the eight rows (fp16)
//	 16  dmin of the eight rows (fp16)
//	 32  scale bytes 0–3 of the eight rows, then bytes 4–7, then 8–11 (3×32)
//	128  for each sub-block pair p and four quants k, the eight rows'
//	     packed nibble bytes 32p+4k … 32p+4k+3 (4×8×32)
//
// The 6-bit scales stay packed; the kernel unpacks them for eight rows
// with the same shifts and masks dotQ4K's scalar code uses. Results are
// dotQ4K's, bit for bit.

const q4kGroupBlock = 8 * 144

// repackQ4K rearranges m.Data in place.
func (m *Matrix) repackQ4K() {
	rb, nb := m.rowBytes, m.Cols/256
	buf := make([]byte, 8*rb)
	for g := range m.Rows / 8 {
		copy(buf, m.Data[g*8*rb:(g+1)*8*rb])
		out := m.Data[g*8*rb : (g+1)*8*rb]
		for b := range nb {
			o := out[b*q4kGroupBlock : (b+1)*q4kGroupBlock]
			for r := range 8 {
				packQ4KRow(o, r, buf[r*rb+b*144:r*rb+b*144+144])
			}
		}
	}
}

// packQ4KRow writes row r's super-block blk into group block o;
// unpackQ4KRow reads it back.
func packQ4KRow(o []byte, r int, blk []byte) {
	copy(o[2*r:2*r+2], blk[0:2])
	copy(o[16+2*r:16+2*r+2], blk[2:4])
	for i := range 3 {
		copy(o[32+32*i+4*r:32+32*i+4*r+4], blk[4+4*i:8+4*i])
	}
	for p := range 4 {
		for k := range 8 {
			copy(o[128+256*p+32*k+4*r:][:4], blk[16+32*p+4*k:][:4])
		}
	}
}

func unpackQ4KRow(o []byte, r int, blk []byte) {
	copy(blk[0:2], o[2*r:2*r+2])
	copy(blk[2:4], o[16+2*r:16+2*r+2])
	for i := range 3 {
		copy(blk[4+4*i:8+4*i], o[32+32*i+4*r:32+32*i+4*r+4])
	}
	for p := range 4 {
		for k := range 8 {
			copy(blk[16+32*p+4*k:][:4], o[128+256*p+32*k+4*r:][:4])
		}
	}
}

// rowQ4Kx8 dequantises row r of a repacked Q4_K matrix.
func (m *Matrix) rowQ4Kx8(r int, dst []float32) {
	grp := m.Data[r/8*8*m.rowBytes:]
	var blk [144]byte
	for b := range m.Cols / 256 {
		unpackQ4KRow(grp[b*q4kGroupBlock:], r%8, blk[:])
		dequantQ4_K(blk[:], dst[b*256:(b+1)*256])
	}
}

// dotQ4Kx8 is the pure-Go x8 kernel: dotQ4K for each of the group's eight
// rows.
func dotQ4Kx8(grp []byte, q []int8, d []float32, bsums []int16, out []float32) {
	nb := len(d)
	row := make([]byte, 144*nb)
	for r := range 8 {
		for b := range nb {
			unpackQ4KRow(grp[b*q4kGroupBlock:], r, row[b*144:(b+1)*144])
		}
		out[r] = dotQ4K(row, q, d, bsums)
	}
}

// mulRowsQ4Kx8 computes rows [lo, hi) (multiples of 8) of a repacked
// Q4_K matrix for n tokens: each group of eight rows meets every token
// while it is in cache.
func (m *Matrix) mulRowsQ4Kx8(lo, hi int, n int, out []float32, q *Q8) {
	rb, nb := m.rowBytes, m.Cols/256
	var tmp [8]float32
	for g := lo / 8; g < hi/8; g++ {
		grp := m.Data[g*8*rb : (g+1)*8*rb]
		for t := range n {
			qs, d, bs := q.Q[t*m.Cols:(t+1)*m.Cols], q.D[t*nb:(t+1)*nb], q.BSums[t*nb*16:(t+1)*nb*16]
			if q4kx8Asm(m.isa, grp, nb, qs, d, bs, tmp[:]) {
			} else {
				dotQ4Kx8(grp, qs, d, bs, tmp[:])
			}
			for r, v := range tmp {
				out[t*m.Rows+8*g+r] = v
			}
		}
	}
}

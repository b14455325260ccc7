package tensor

import (
	"encoding/binary"
	"math"
)

// The K-quant writers are the plain round-to-nearest forms of ggml's
// schemes (no importance search): valid files whose error is within a step
// of the format, for random test and benchmark models.

func nearest(v float32) int { return int(math.RoundToEven(float64(v))) }

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// subScaleMin gives, for one sub-block, the step and the (non-negative)
// offset of an asymmetric grid of levels 0..nmax, as Q4_K/Q5_K store them.
func subScaleMin(xs []float32, nmax float32) (scale, minv float32) {
	mn, mx := xs[0], xs[0]
	for _, v := range xs {
		mn, mx = min(mn, v), max(mx, v)
	}
	mn = min(mn, 0)
	return (mx - mn) / nmax, -mn
}

// packScalesK4 stores eight 6-bit scales and mins the way scaleMinK4 reads them.
func packScalesK4(ls, lm [8]int) [12]byte {
	var q [12]byte
	for j := range 8 {
		if j < 4 {
			q[j] |= byte(ls[j])
			q[j+4] |= byte(lm[j])
			continue
		}
		q[j+4] = byte(ls[j]&0xf) | byte(lm[j]&0xf)<<4
		q[j-4] |= byte(ls[j]>>4) << 6
		q[j] |= byte(lm[j]>>4) << 6
	}
	return q
}

// quantAsymK quantises one 256 block as Q4_K (nmax 15) or Q5_K (nmax 31):
// per 32-value sub-block a 6-bit scale and min under fp16 super-scales.
func quantAsymK(xs []float32, nmax int) (d, dmin float32, sc [12]byte, levels [256]int) {
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		scales[j], mins[j] = subScaleMin(xs[j*32:j*32+32], float32(nmax))
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	d, dmin = RoundF16(maxScale/63), RoundF16(maxMin/63)
	var ls, lm [8]int
	for j := range 8 {
		if d > 0 {
			ls[j] = clampInt(nearest(scales[j]/d), 0, 63)
		}
		if dmin > 0 {
			lm[j] = clampInt(nearest(mins[j]/dmin), 0, 63)
		}
		step, off := d*float32(ls[j]), dmin*float32(lm[j])
		for l := range 32 {
			if step > 0 {
				levels[j*32+l] = clampInt(nearest((xs[j*32+l]+off)/step), 0, nmax)
			}
		}
	}
	return d, dmin, packScalesK4(ls, lm), levels
}

func quantQ4_K(xs []float32, dst []byte) []byte {
	d, dmin, sc, L := quantAsymK(xs, 15)
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(dmin))
	dst = append(dst, sc[:]...)
	for k := range 4 {
		for l := range 32 {
			dst = append(dst, byte(L[64*k+l])|byte(L[64*k+32+l])<<4)
		}
	}
	return dst
}

func quantQ5_K(xs []float32, dst []byte) []byte {
	d, dmin, sc, L := quantAsymK(xs, 31)
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(dmin))
	dst = append(dst, sc[:]...)
	var qh [32]byte
	for k := range 4 {
		for l := range 32 {
			if L[64*k+l] >= 16 {
				qh[l] |= 1 << (2 * k)
			}
			if L[64*k+32+l] >= 16 {
				qh[l] |= 2 << (2 * k)
			}
		}
	}
	dst = append(dst, qh[:]...)
	for k := range 4 {
		for l := range 32 {
			dst = append(dst, byte(L[64*k+l]&0xf)|byte(L[64*k+32+l]&0xf)<<4)
		}
	}
	return dst
}

// quantQ6_K: sixteen 16-value sub-blocks with int8 scales under an fp16
// super-scale, 6-bit levels -32..31.
func quantQ6_K(xs []float32, dst []byte) []byte {
	var scales [16]float32
	var maxAbs, maxScale float32
	for j := range 16 {
		_, v := amaxSigned(xs[j*16 : j*16+16])
		scales[j] = v / -32
		if a := float32(math.Abs(float64(scales[j]))); a > maxAbs {
			maxAbs, maxScale = a, scales[j]
		}
	}
	var d float32
	var sc [16]int8
	if maxAbs > 0 {
		iscale := -128 / maxScale
		for j := range 16 {
			sc[j] = int8(min(127, nearest(iscale*scales[j])))
		}
		d = RoundF16(1 / iscale)
	}
	var L [256]int
	for j := range 16 {
		step := d * float32(sc[j])
		for l := range 16 {
			q := 0
			if step != 0 {
				q = clampInt(nearest(xs[j*16+l]/step), -32, 31)
			}
			L[j*16+l] = q + 32
		}
	}
	var ql [128]byte
	var qh [64]byte
	for n := range 2 {
		for l := range 32 {
			b := n * 128
			ql[n*64+l] = byte(L[b+l]&0xf) | byte(L[b+l+64]&0xf)<<4
			ql[n*64+l+32] = byte(L[b+l+32]&0xf) | byte(L[b+l+96]&0xf)<<4
			qh[n*32+l] = byte(L[b+l]>>4) | byte(L[b+l+32]>>4)<<2 | byte(L[b+l+64]>>4)<<4 | byte(L[b+l+96]>>4)<<6
		}
	}
	dst = append(dst, ql[:]...)
	dst = append(dst, qh[:]...)
	for _, s := range sc {
		dst = append(dst, byte(s))
	}
	return binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
}

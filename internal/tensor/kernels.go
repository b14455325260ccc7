package tensor

import (
	"encoding/binary"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// isa is a kernel set. Matrices pick the best one the CPU has when they
// are made; tests lower it to check every set against the pure-Go one.
type isa uint8

const (
	isaGeneric isa = iota // pure Go, every platform
	isaAVX2               // AVX2 + FMA + F16C
	isaVNNI               // AVX-512 BW/VL + VNNI, on ymm registers
	isaBF16               // isaVNNI with AVX512_BF16: BF16 weights by VDPBF16PS
	isaNEON               // arm64 Advanced SIMD (int8 dots by SMULL/SADALP)
	isaDotProd            // arm64 NEON with SDOT (FEAT_DotProd)
)

func (k isa) String() string {
	return [...]string{"generic", "avx2", "avx512vnni", "avx512bf16", "neon", "neon-dotprod"}[k]
}

// x86 and arm64 report which architecture's kernel set k is.
func (k isa) x86() bool   { return k == isaAVX2 || k.avx512() }
func (k isa) arm64() bool { return k == isaNEON || k == isaDotProd }

// avx512 reports whether k runs the AVX-512 VNNI kernels (and layouts).
func (k isa) avx512() bool { return k == isaVNNI || k == isaBF16 }

// layout is the kernel set whose repacked layouts k reads: isaBF16
// differs from isaVNNI only in its BF16 kernels.
func (k isa) layout() isa {
	if k == isaBF16 {
		return isaVNNI
	}
	return k
}

// The pure-Go kernels below fix the order of every floating-point
// operation to the one the assembly kernels use, so both give bit-identical
// results: integer block sums are exact, and the float steps are spelled
// out with explicit conversions, which the Go spec says prevent fusing a
// multiply and an add into an FMA.

// dotQ8Lanes is the Q8_0-family dot product of one weight row with Q8_0
// activations: eight float lanes, lane l accumulating, block by block,
// float32(Σ of the products of elements 4l..4l+3)·(d_w·d_a), then the lanes
// summed as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
func dotQ8Lanes(t gguf.TensorType, row []byte, q []int8, d []float32) float32 {
	var acc [8]float32
	var w [32]int8
	bb := t.BlockBytes()
	for b := range d {
		blk := row[b*bb : (b+1)*bb]
		decodeQ8Family(t, blk, &w)
		s := f16at(blk, 0) * d[b]
		qs := q[b*32 : b*32+32]
		for l := range 8 {
			j := 4 * l
			li := int32(w[j])*int32(qs[j]) + int32(w[j+1])*int32(qs[j+1]) + int32(w[j+2])*int32(qs[j+2]) + int32(w[j+3])*int32(qs[j+3])
			acc[l] += float32(float32(li) * s)
		}
	}
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

// decodeQ8Family writes a Q8_0, Q4_0 or Q5_0 block's 32 signed quants.
func decodeQ8Family(t gguf.TensorType, blk []byte, w *[32]int8) {
	switch t {
	case gguf.Q8_0:
		for j := range 32 {
			w[j] = int8(blk[2+j])
		}
	case gguf.Q4_0:
		for j := range 16 {
			w[j] = int8(blk[2+j]&0xf) - 8
			w[j+16] = int8(blk[2+j]>>4) - 8
		}
	case gguf.Q5_0:
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j := range 16 {
			w[j] = int8(blk[6+j]&0xf|byte(qh>>j&1)<<4) - 16
			w[j+16] = int8(blk[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
		}
	default:
		panic("BUG: tensor: decodeQ8Family of " + t.String())
	}
}

// dotQ4K is llama.cpp's Q4_K·Q8_K: per super-block the exact integer
// Σ_j sc_j·Σ q·a and Σ_j m_j·bsum_j, then d·d_a and dmin·d_a applied once.
func dotQ4K(row []byte, q []int8, d []float32, bsums []int16) float32 {
	var sum float32
	for b := range d {
		blk := row[b*144 : (b+1)*144]
		scales, qs, a, bs := blk[4:16], blk[16:144], q[b*256:(b+1)*256], bsums[b*16:(b+1)*16]
		var sumi, summ int32
		for k := range 4 {
			sc0, m0 := scaleMinK4(2*k, scales)
			sc1, m1 := scaleMinK4(2*k+1, scales)
			var s0, s1 int32
			for l := range 32 {
				s0 += int32(qs[32*k+l]&0xf) * int32(a[64*k+l])
				s1 += int32(qs[32*k+l]>>4) * int32(a[64*k+32+l])
			}
			sumi += int32(sc0)*s0 + int32(sc1)*s1
			summ += int32(m0)*(int32(bs[4*k])+int32(bs[4*k+1])) + int32(m1)*(int32(bs[4*k+2])+int32(bs[4*k+3]))
		}
		sum = kSuperBlock(sum, sumi, summ, f16at(blk, 0)*d[b], f16at(blk, 2)*d[b])
	}
	return sum
}

// dotQ5K is dotQ4K for Q5_K (a fifth bit per quant from qh).
func dotQ5K(row []byte, q []int8, d []float32, bsums []int16) float32 {
	var sum float32
	for b := range d {
		blk := row[b*176 : (b+1)*176]
		scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
		a, bs := q[b*256:(b+1)*256], bsums[b*16:(b+1)*16]
		var sumi, summ int32
		for k := range 4 {
			sc0, m0 := scaleMinK4(2*k, scales)
			sc1, m1 := scaleMinK4(2*k+1, scales)
			var s0, s1 int32
			for l := range 32 {
				lo := int32(ql[32*k+l]&0xf) | int32(qh[l]>>(2*k)&1)<<4
				hi := int32(ql[32*k+l]>>4) | int32(qh[l]>>(2*k+1)&1)<<4
				s0 += lo * int32(a[64*k+l])
				s1 += hi * int32(a[64*k+32+l])
			}
			sumi += int32(sc0)*s0 + int32(sc1)*s1
			summ += int32(m0)*(int32(bs[4*k])+int32(bs[4*k+1])) + int32(m1)*(int32(bs[4*k+2])+int32(bs[4*k+3]))
		}
		sum = kSuperBlock(sum, sumi, summ, f16at(blk, 0)*d[b], f16at(blk, 2)*d[b])
	}
	return sum
}

// kSuperBlock adds one super-block's integer sums in the assembly's order.
func kSuperBlock(sum float32, sumi, summ int32, dd, dm float32) float32 {
	sum = sum + float32(float32(sumi)*dd)
	return sum - float32(float32(summ)*dm)
}

// dotQ6K is llama.cpp's Q6_K·Q8_K: quants 0..63 with an offset of 32 that
// the block sums remove, Σ_g sc_g·(Σ q·a − 32·bsum_g) over 16-element
// groups g.
func dotQ6K(row []byte, q []int8, d []float32, bsums []int16) float32 {
	var sum float32
	var v [256]int32
	for b := range d {
		blk := row[b*210 : (b+1)*210]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		a, bs := q[b*256:(b+1)*256], bsums[b*16:(b+1)*16]
		for n := range 2 {
			for l := range 32 {
				h := qh[32*n+l]
				v[128*n+l] = int32(ql[64*n+l]&0xf | (h&3)<<4)
				v[128*n+l+32] = int32(ql[64*n+l+32]&0xf | (h>>2&3)<<4)
				v[128*n+l+64] = int32(ql[64*n+l]>>4 | (h>>4&3)<<4)
				v[128*n+l+96] = int32(ql[64*n+l+32]>>4 | (h>>6&3)<<4)
			}
		}
		var sumi, corr int32
		for g := range 16 {
			var s int32
			for j := 16 * g; j < 16*g+16; j++ {
				s += v[j] * int32(a[j])
			}
			sumi += int32(int8(sc[g])) * s
			corr += int32(int8(sc[g])) * int32(bs[g])
		}
		sumi -= 32 * corr
		sum = sum + float32(float32(sumi)*(f16at(blk, 208)*d[b]))
	}
	return sum
}

// dotF32 is the pure-Go float dot product (and the tail of the SIMD one).
func dotF32(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16 is dot(F16 weights, x) in float32.
func dotF16(w []uint16, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += F16ToF32(w[i]) * x[i]
		s1 += F16ToF32(w[i+1]) * x[i+1]
		s2 += F16ToF32(w[i+2]) * x[i+2]
		s3 += F16ToF32(w[i+3]) * x[i+3]
	}
	for ; i < len(w); i++ {
		s0 += F16ToF32(w[i]) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// floatKind is a float weight format the tile kernels read.
type floatKind uint8

const (
	floatF16 floatKind = iota
	floatBF16
	floatF32
)

func (k floatKind) bytes() int { return [...]int{2, 2, 4}[k] }

// floatKindOf is t's floatKind (t F32, F16 or BF16).
func floatKindOf(t gguf.TensorType) floatKind {
	switch t {
	case gguf.F16:
		return floatF16
	case gguf.BF16:
		return floatBF16
	}
	return floatF32
}

// pairTokens lays out the whole 8-token tiles of x (n tokens, cols
// apart) for the 512-bit F32 tile: per tile and pair of tokens, per 8
// columns, the pair's 8 activations side by side (dst grows as needed and
// is returned).
func pairTokens(x []float32, n, cols int, dst []float32) []float32 {
	steps := cols / 8
	dst = resize(dst, n/8*64*steps)
	i := 0
	for t0 := 0; t0+8 <= n; t0 += 8 {
		for p := range 4 {
			a, b := x[(t0+2*p)*cols:], x[(t0+2*p+1)*cols:]
			for k := range steps {
				copy(dst[i:i+8], a[8*k:8*k+8])
				copy(dst[i+8:i+16], b[8*k:8*k+8])
				i += 16
			}
		}
	}
	return dst
}

// dotBF16 is dot(BF16 weights, x) in float32.
func dotBF16(w []uint16, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += BF16ToF32(w[i]) * x[i]
		s1 += BF16ToF32(w[i+1]) * x[i+1]
		s2 += BF16ToF32(w[i+2]) * x[i+2]
		s3 += BF16ToF32(w[i+3]) * x[i+3]
	}
	for ; i < len(w); i++ {
		s0 += BF16ToF32(w[i]) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

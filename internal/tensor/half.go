// Package tensor holds the numeric kernels of CPU inference: fp16/bf16
// conversion, dequantisation of GGUF block formats (F32, F16, BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), activation quantisation to
// Q8_0/Q8_K as llama.cpp does before its dot products, and batched
// matrix-vector products over those formats.
//
// The matmul kernels are assembly for amd64 (AVX2, AVX-512 VNNI and BF16)
// and arm64 (NEON, with and without the dot product), written with their
// Go declarations (asm_amd64.go, asm_arm64.go) by the generator in
// kernelgen and chosen at run time from the CPU's features, with pure-Go
// kernels that give bit-identical results (for the quantised formats;
// float sums differ in order only) on every other CPU and under the purego
// build tag. Parallel work runs on a Pool:
// a fixed set of goroutines made once per model runner and ended by Close.
//
// It is pure computation: no I/O, no goroutines beyond its Pool's, and it
// must not import the engine, server or executor packages.
package tensor

import "math"

//go:generate go run ./kernelgen

// F16ToF32 converts an IEEE 754 half-precision value.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToF16 rounds to the nearest half-precision value, ties to even, as
// ggml's conversion does.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, which is the right rounding
	}
	return sign | uint16(r)
}

// BF16ToF32 widens a bfloat16.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to the nearest bfloat16, ties to even (NaN kept quiet).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// RoundF16 rounds f through half precision, as llama.cpp rounds the
// activations that meet F16 weights.
func RoundF16(f float32) float32 { return F16ToF32(F32ToF16(f)) }

// NEON kernels for arm64 (kernels_arm64.go chooses them). Each WORD is an
// instruction Go's arm64 assembler does not spell (most of Advanced SIMD's
// arithmetic), with its GNU mnemonic beside it; TestARM64Encodings checks
// every one. To encode a new one:
//
//	echo 'sdot v6.4s, v0.16b, v2.16b' | aarch64-linux-gnu-as -march=armv8.2-a+dotprod -o /tmp/w.o
//	aarch64-linux-gnu-objdump -d /tmp/w.o
//
// The NEON and dot-product variants of a kernel differ only in how the
// int8 products are summed.

//go:build arm64 && !purego

#include "textflag.h"

// func dotF32NEON(a, b *float32, n int) float32
// n: a positive multiple of 16 (the caller passes whole 32-element groups).
TEXT ·dotF32NEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	LSR $4, R2, R2
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
f32loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e24cc10 // fmla v16.4s, v0.4s, v4.4s
	WORD $0x4e25cc31 // fmla v17.4s, v1.4s, v5.4s
	WORD $0x4e26cc52 // fmla v18.4s, v2.4s, v6.4s
	WORD $0x4e27cc73 // fmla v19.4s, v3.4s, v7.4s
	SUBS $1, R2, R2
	BNE f32loop
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS F16, ret+24(FP)
	RET

// func dotF16NEON(w *uint16, x *float32, n int) float32
// n: a positive multiple of 16.
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LSR $4, R2, R2
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
f16loop:
	VLD1.P 32(R0), [V0.H8, V1.H8]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x0e217802 // fcvtl v2.4s, v0.4h
	WORD $0x4e217803 // fcvtl2 v3.4s, v0.8h
	WORD $0x0e217834 // fcvtl v20.4s, v1.4h
	WORD $0x4e217835 // fcvtl2 v21.4s, v1.8h
	WORD $0x4e24cc50 // fmla v16.4s, v2.4s, v4.4s
	WORD $0x4e25cc71 // fmla v17.4s, v3.4s, v5.4s
	WORD $0x4e26ce92 // fmla v18.4s, v20.4s, v6.4s
	WORD $0x4e27ceb3 // fmla v19.4s, v21.4s, v7.4s
	SUBS $1, R2, R2
	BNE f16loop
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS F16, ret+24(FP)
	RET

// func dotBF16NEON(w *uint16, x *float32, n int) float32
// n: a positive multiple of 16. dotF16NEON with BF16 widened by a shift.
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LSR $4, R2, R2
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
bf16loop:
	VLD1.P 32(R0), [V0.H8, V1.H8]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x2e613802 // shll v2.4s, v0.4h, #16
	WORD $0x6e613803 // shll2 v3.4s, v0.8h, #16
	WORD $0x2e613834 // shll v20.4s, v1.4h, #16
	WORD $0x6e613835 // shll2 v21.4s, v1.8h, #16
	WORD $0x4e24cc50 // fmla v16.4s, v2.4s, v4.4s
	WORD $0x4e25cc71 // fmla v17.4s, v3.4s, v5.4s
	WORD $0x4e26ce92 // fmla v18.4s, v20.4s, v6.4s
	WORD $0x4e27ceb3 // fmla v19.4s, v21.4s, v7.4s
	SUBS $1, R2, R2
	BNE bf16loop
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS F16, ret+24(FP)
	RET

// func q80Rows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q8_0 (34-byte blocks: fp16 scale, 32 int8) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q80Rows1NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
q80Rows1NEONrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q80Rows1NEONblock:
	MOVHU.P 2(R7), R11
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3
	// (int16 products, pairs widened to int32, then pairs of pairs).
	WORD $0x0e22c006 // smull v6.8h, v0.8b, v2.8b
	WORD $0x4e22c012 // smull2 v18.8h, v0.16b, v2.16b
	WORD $0x0e23c027 // smull v7.8h, v1.8b, v3.8b
	WORD $0x4e23c033 // smull2 v19.8h, v1.16b, v3.16b
	WORD $0x4e6028c6 // saddlp v6.4s, v6.8h
	WORD $0x4e602a52 // saddlp v18.4s, v18.8h
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e602a73 // saddlp v19.4s, v19.8h
	WORD $0x4eb2bcc6 // addp v6.4s, v6.4s, v18.4s
	WORD $0x4eb3bce7 // addp v7.4s, v7.4s, v19.4s
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q80Rows1NEONblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q80Rows1NEONrow
	RET

// func q80Rows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q8_0 (34-byte blocks: fp16 scale, 32 int8) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q80Rows1Dot(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
q80Rows1Dotrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q80Rows1Dotblock:
	MOVHU.P 2(R7), R11
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3.
	WORD $0x6f00e406 // movi v6.2d, #0
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e829406 // sdot v6.4s, v0.16b, v2.16b
	WORD $0x4e839427 // sdot v7.4s, v1.16b, v3.16b
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q80Rows1Dotblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q80Rows1Dotrow
	RET

// func q40Rows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q4_0 (18-byte blocks: fp16 scale, 16 nibble bytes, quants 0-15 low nibbles, 16-31 high, minus 8) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q40Rows1NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e51f // movi v31.16b, #8
q40Rows1NEONrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q40Rows1NEONblock:
	MOVHU.P 2(R7), R11
	VLD1.P 16(R7), [V0.B16]
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3
	// (int16 products, pairs widened to int32, then pairs of pairs).
	WORD $0x0e22c006 // smull v6.8h, v0.8b, v2.8b
	WORD $0x4e22c012 // smull2 v18.8h, v0.16b, v2.16b
	WORD $0x0e23c027 // smull v7.8h, v1.8b, v3.8b
	WORD $0x4e23c033 // smull2 v19.8h, v1.16b, v3.16b
	WORD $0x4e6028c6 // saddlp v6.4s, v6.8h
	WORD $0x4e602a52 // saddlp v18.4s, v18.8h
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e602a73 // saddlp v19.4s, v19.8h
	WORD $0x4eb2bcc6 // addp v6.4s, v6.4s, v18.4s
	WORD $0x4eb3bce7 // addp v7.4s, v7.4s, v19.4s
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q40Rows1NEONblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q40Rows1NEONrow
	RET

// func q40Rows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q4_0 (18-byte blocks: fp16 scale, 16 nibble bytes, quants 0-15 low nibbles, 16-31 high, minus 8) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q40Rows1Dot(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e51f // movi v31.16b, #8
q40Rows1Dotrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q40Rows1Dotblock:
	MOVHU.P 2(R7), R11
	VLD1.P 16(R7), [V0.B16]
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3.
	WORD $0x6f00e406 // movi v6.2d, #0
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e829406 // sdot v6.4s, v0.16b, v2.16b
	WORD $0x4e839427 // sdot v7.4s, v1.16b, v3.16b
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q40Rows1Dotblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q40Rows1Dotrow
	RET

// func q50Rows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q5_0 (22-byte blocks: fp16 scale, 32 high bits, 16 nibble bytes; minus 16) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q50Rows1NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #16
	WORD $0x4f00e617 // movi v23.16b, #0x10
	MOVD $·q50Consts(SB), R13
	VLD1 (R13), [V27.B16, V28.B16, V29.B16]
q50Rows1NEONrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q50Rows1NEONblock:
	MOVHU.P 2(R7), R11
	MOVWU.P 4(R7), R12
	VLD1.P 16(R7), [V0.B16]
	WORD $0x4e040d98 // dup v24.4s, w12
	WORD $0x4e1c0319 // tbl v25.16b, {v24.16b}, v28.16b
	WORD $0x4e1d031a // tbl v26.16b, {v24.16b}, v29.16b
	WORD $0x4e3b8f39 // cmtst v25.16b, v25.16b, v27.16b
	WORD $0x4e3b8f5a // cmtst v26.16b, v26.16b, v27.16b
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x4e371f39 // and v25.16b, v25.16b, v23.16b
	WORD $0x4e371f5a // and v26.16b, v26.16b, v23.16b
	WORD $0x4eb91c00 // orr v0.16b, v0.16b, v25.16b
	WORD $0x4eba1c21 // orr v1.16b, v1.16b, v26.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3
	// (int16 products, pairs widened to int32, then pairs of pairs).
	WORD $0x0e22c006 // smull v6.8h, v0.8b, v2.8b
	WORD $0x4e22c012 // smull2 v18.8h, v0.16b, v2.16b
	WORD $0x0e23c027 // smull v7.8h, v1.8b, v3.8b
	WORD $0x4e23c033 // smull2 v19.8h, v1.16b, v3.16b
	WORD $0x4e6028c6 // saddlp v6.4s, v6.8h
	WORD $0x4e602a52 // saddlp v18.4s, v18.8h
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e602a73 // saddlp v19.4s, v19.8h
	WORD $0x4eb2bcc6 // addp v6.4s, v6.4s, v18.4s
	WORD $0x4eb3bce7 // addp v7.4s, v7.4s, v19.4s
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q50Rows1NEONblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q50Rows1NEONrow
	RET

// func q50Rows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)
// Q5_0 (22-byte blocks: fp16 scale, 32 high bits, 16 nibble bytes; minus 16) rows against one token's Q8_0 activations: dotQ8Lanes's eight
// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·q50Rows1Dot(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD nb+40(FP), R5
	MOVD out+48(FP), R6
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #16
	WORD $0x4f00e617 // movi v23.16b, #0x10
	MOVD $·q50Consts(SB), R13
	VLD1 (R13), [V27.B16, V28.B16, V29.B16]
q50Rows1Dotrow:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
q50Rows1Dotblock:
	MOVHU.P 2(R7), R11
	MOVWU.P 4(R7), R12
	VLD1.P 16(R7), [V0.B16]
	WORD $0x4e040d98 // dup v24.4s, w12
	WORD $0x4e1c0319 // tbl v25.16b, {v24.16b}, v28.16b
	WORD $0x4e1d031a // tbl v26.16b, {v24.16b}, v29.16b
	WORD $0x4e3b8f39 // cmtst v25.16b, v25.16b, v27.16b
	WORD $0x4e3b8f5a // cmtst v26.16b, v26.16b, v27.16b
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x4e371f39 // and v25.16b, v25.16b, v23.16b
	WORD $0x4e371f5a // and v26.16b, v26.16b, v23.16b
	WORD $0x4eb91c00 // orr v0.16b, v0.16b, v25.16b
	WORD $0x4eba1c21 // orr v1.16b, v1.16b, v26.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
	// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3.
	WORD $0x6f00e406 // movi v6.2d, #0
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e829406 // sdot v6.4s, v0.16b, v2.16b
	WORD $0x4e839427 // sdot v7.4s, v1.16b, v3.16b
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE q50Rows1Dotblock
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q50Rows1Dotrow
	RET

// q50Consts: the bit of each byte lane (1, 2, ... 128, twice), then the
// TBL indices that spread qh's bytes 0-1 and 2-3 over sixteen lanes.
DATA ·q50Consts+0(SB)/8, $0x8040201008040201
DATA ·q50Consts+8(SB)/8, $0x8040201008040201
DATA ·q50Consts+16(SB)/8, $0x0000000000000000
DATA ·q50Consts+24(SB)/8, $0x0101010101010101
DATA ·q50Consts+32(SB)/8, $0x0202020202020202
DATA ·q50Consts+40(SB)/8, $0x0303030303030303
GLOBL ·q50Consts(SB), RODATA|NOPTR, $48

// func q4kRows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q4_K rows against one token's Q8_K activations, dotQ4K's bits: per
// super-block the exact integers sumi = Σ_j sc_j·Σ q·a and
// summ = Σ_j m_j·(bsum_2j + bsum_2j+1), then
// sum = (sum + float32(sumi)·(d·da)) − float32(summ)·(dmin·da).
// nrows, nb > 0.
TEXT ·q4kRows1NEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #0x10
q4kRows1NEONrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q4kRows1NEONblock:
	// F21 = d·da, F22 = dmin·da.
	MOVHU (R8), R13
	MOVHU 2(R8), R14
	WORD $0x1e2701b5 // fmov s21, w13
	WORD $0x1e2701d6 // fmov s22, w14
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1ee242d6 // fcvt s22, h22
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	WORD $0x1e220ad6 // fmul s22, s22, s2
	// The 6-bit scales and mins (scaleMinK4): R13 = sc 0-3, R17 = sc 4-7,
	// R19 = m 0-3, R16 = m 4-7, a byte each.
	MOVWU 4(R8), R13
	MOVWU 8(R8), R14
	MOVWU 12(R8), R15
	LSRW $4, R15, R16
	ANDW $0x0f0f0f0f, R16, R16
	LSRW $6, R14, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R16, R16
	ANDW $0x0f0f0f0f, R15, R17
	LSRW $6, R13, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R17, R17
	ANDW $0x3f3f3f3f, R14, R19
	ANDW $0x3f3f3f3f, R13, R13
	ADD $16, R8, R8
	// V24, V25: the scales as int32; V26: the mins as int16.
	WORD $0x4e041db8 // mov v24.s[0], w13
	WORD $0x4e0c1e38 // mov v24.s[1], w17
	WORD $0x4e041e7a // mov v26.s[0], w19
	WORD $0x4e0c1e1a // mov v26.s[1], w16
	WORD $0x2f08a718 // uxtl v24.8h, v24.8b
	WORD $0x6f10a719 // uxtl2 v25.4s, v24.8h
	WORD $0x2f10a718 // uxtl v24.4s, v24.4h
	WORD $0x2f08a75a // uxtl v26.8h, v26.8b
	// summ (S28) from the block sums, added in pairs.
	VLD1.P 32(R11), [V27.H8, V28.H8]
	WORD $0x4e7cbf7b // addp v27.8h, v27.8h, v28.8h
	WORD $0x0e7ac37c // smull v28.4s, v27.4h, v26.4h
	WORD $0x4e7a837c // smlal2 v28.4s, v27.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x6f00e41d // movi v29.2d, #0
	// sub-blocks 0 (low nibbles) and 1 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f98021d // mla v29.4s, v16.4s, v24.s[0]
	WORD $0x6fb8023d // mla v29.4s, v17.4s, v24.s[1]
	// sub-blocks 2 (low nibbles) and 3 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f980a1d // mla v29.4s, v16.4s, v24.s[2]
	WORD $0x6fb80a3d // mla v29.4s, v17.4s, v24.s[3]
	// sub-blocks 4 (low nibbles) and 5 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f99021d // mla v29.4s, v16.4s, v25.s[0]
	WORD $0x6fb9023d // mla v29.4s, v17.4s, v25.s[1]
	// sub-blocks 6 (low nibbles) and 7 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f990a1d // mla v29.4s, v16.4s, v25.s[2]
	WORD $0x6fb90a3d // mla v29.4s, v17.4s, v25.s[3]
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x5e21db9c // scvtf s28, s28
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e360b9c // fmul s28, s28, s22
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	WORD $0x1e3c3a94 // fsub s20, s20, s28
	SUBS $1, R12, R12
	BNE q4kRows1NEONblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q4kRows1NEONrow
	RET

// func q4kRows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q4_K rows against one token's Q8_K activations, dotQ4K's bits: per
// super-block the exact integers sumi = Σ_j sc_j·Σ q·a and
// summ = Σ_j m_j·(bsum_2j + bsum_2j+1), then
// sum = (sum + float32(sumi)·(d·da)) − float32(summ)·(dmin·da).
// nrows, nb > 0.
TEXT ·q4kRows1Dot(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #0x10
q4kRows1Dotrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q4kRows1Dotblock:
	// F21 = d·da, F22 = dmin·da.
	MOVHU (R8), R13
	MOVHU 2(R8), R14
	WORD $0x1e2701b5 // fmov s21, w13
	WORD $0x1e2701d6 // fmov s22, w14
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1ee242d6 // fcvt s22, h22
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	WORD $0x1e220ad6 // fmul s22, s22, s2
	// The 6-bit scales and mins (scaleMinK4): R13 = sc 0-3, R17 = sc 4-7,
	// R19 = m 0-3, R16 = m 4-7, a byte each.
	MOVWU 4(R8), R13
	MOVWU 8(R8), R14
	MOVWU 12(R8), R15
	LSRW $4, R15, R16
	ANDW $0x0f0f0f0f, R16, R16
	LSRW $6, R14, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R16, R16
	ANDW $0x0f0f0f0f, R15, R17
	LSRW $6, R13, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R17, R17
	ANDW $0x3f3f3f3f, R14, R19
	ANDW $0x3f3f3f3f, R13, R13
	ADD $16, R8, R8
	// V24, V25: the scales as int32; V26: the mins as int16.
	WORD $0x4e041db8 // mov v24.s[0], w13
	WORD $0x4e0c1e38 // mov v24.s[1], w17
	WORD $0x4e041e7a // mov v26.s[0], w19
	WORD $0x4e0c1e1a // mov v26.s[1], w16
	WORD $0x2f08a718 // uxtl v24.8h, v24.8b
	WORD $0x6f10a719 // uxtl2 v25.4s, v24.8h
	WORD $0x2f10a718 // uxtl v24.4s, v24.4h
	WORD $0x2f08a75a // uxtl v26.8h, v26.8b
	// summ (S28) from the block sums, added in pairs.
	VLD1.P 32(R11), [V27.H8, V28.H8]
	WORD $0x4e7cbf7b // addp v27.8h, v27.8h, v28.8h
	WORD $0x0e7ac37c // smull v28.4s, v27.4h, v26.4h
	WORD $0x4e7a837c // smlal2 v28.4s, v27.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x6f00e41d // movi v29.2d, #0
	// sub-blocks 0 (low nibbles) and 1 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f98021d // mla v29.4s, v16.4s, v24.s[0]
	WORD $0x6fb8023d // mla v29.4s, v17.4s, v24.s[1]
	// sub-blocks 2 (low nibbles) and 3 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f980a1d // mla v29.4s, v16.4s, v24.s[2]
	WORD $0x6fb80a3d // mla v29.4s, v17.4s, v24.s[3]
	// sub-blocks 4 (low nibbles) and 5 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f99021d // mla v29.4s, v16.4s, v25.s[0]
	WORD $0x6fb9023d // mla v29.4s, v17.4s, v25.s[1]
	// sub-blocks 6 (low nibbles) and 7 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f990a1d // mla v29.4s, v16.4s, v25.s[2]
	WORD $0x6fb90a3d // mla v29.4s, v17.4s, v25.s[3]
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x5e21db9c // scvtf s28, s28
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e360b9c // fmul s28, s28, s22
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	WORD $0x1e3c3a94 // fsub s20, s20, s28
	SUBS $1, R12, R12
	BNE q4kRows1Dotblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q4kRows1Dotrow
	RET

// func q5kRows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q5_K (a fifth bit per quant from qh) rows against one token's Q8_K activations, dotQ5K's bits: per
// super-block the exact integers sumi = Σ_j sc_j·Σ q·a and
// summ = Σ_j m_j·(bsum_2j + bsum_2j+1), then
// sum = (sum + float32(sumi)·(d·da)) − float32(summ)·(dmin·da).
// nrows, nb > 0.
TEXT ·q5kRows1NEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #0x10
q5kRows1NEONrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q5kRows1NEONblock:
	// F21 = d·da, F22 = dmin·da.
	MOVHU (R8), R13
	MOVHU 2(R8), R14
	WORD $0x1e2701b5 // fmov s21, w13
	WORD $0x1e2701d6 // fmov s22, w14
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1ee242d6 // fcvt s22, h22
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	WORD $0x1e220ad6 // fmul s22, s22, s2
	// The 6-bit scales and mins (scaleMinK4): R13 = sc 0-3, R17 = sc 4-7,
	// R19 = m 0-3, R16 = m 4-7, a byte each.
	MOVWU 4(R8), R13
	MOVWU 8(R8), R14
	MOVWU 12(R8), R15
	LSRW $4, R15, R16
	ANDW $0x0f0f0f0f, R16, R16
	LSRW $6, R14, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R16, R16
	ANDW $0x0f0f0f0f, R15, R17
	LSRW $6, R13, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R17, R17
	ANDW $0x3f3f3f3f, R14, R19
	ANDW $0x3f3f3f3f, R13, R13
	ADD $16, R8, R8
	// V24, V25: the scales as int32; V26: the mins as int16.
	WORD $0x4e041db8 // mov v24.s[0], w13
	WORD $0x4e0c1e38 // mov v24.s[1], w17
	WORD $0x4e041e7a // mov v26.s[0], w19
	WORD $0x4e0c1e1a // mov v26.s[1], w16
	WORD $0x2f08a718 // uxtl v24.8h, v24.8b
	WORD $0x6f10a719 // uxtl2 v25.4s, v24.8h
	WORD $0x2f10a718 // uxtl v24.4s, v24.4h
	WORD $0x2f08a75a // uxtl v26.8h, v26.8b
	// summ (S28) from the block sums, added in pairs.
	VLD1.P 32(R11), [V27.H8, V28.H8]
	WORD $0x4e7cbf7b // addp v27.8h, v27.8h, v28.8h
	WORD $0x0e7ac37c // smull v28.4s, v27.4h, v26.4h
	WORD $0x4e7a837c // smlal2 v28.4s, v27.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x6f00e41d // movi v29.2d, #0
	// Q5_K's high bits: qh, one byte per lane l of the four steps.
	VLD1.P 32(R8), [V26.B16, V27.B16]
	// sub-blocks 0 (low nibbles) and 1 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4f0c5752 // shl v18.16b, v26.16b, #4
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4f0c5772 // shl v18.16b, v27.16b, #4
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x4f0b5752 // shl v18.16b, v26.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x4f0b5772 // shl v18.16b, v27.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f98021d // mla v29.4s, v16.4s, v24.s[0]
	WORD $0x6fb8023d // mla v29.4s, v17.4s, v24.s[1]
	// sub-blocks 2 (low nibbles) and 3 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4f0a5752 // shl v18.16b, v26.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4f0a5772 // shl v18.16b, v27.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x4f095752 // shl v18.16b, v26.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x4f095772 // shl v18.16b, v27.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f980a1d // mla v29.4s, v16.4s, v24.s[2]
	WORD $0x6fb80a3d // mla v29.4s, v17.4s, v24.s[3]
	// sub-blocks 4 (low nibbles) and 5 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4eba1f52 // mov v18.16b, v26.16b
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4ebb1f72 // mov v18.16b, v27.16b
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x6f0f0752 // ushr v18.16b, v26.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x6f0f0772 // ushr v18.16b, v27.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f99021d // mla v29.4s, v16.4s, v25.s[0]
	WORD $0x6fb9023d // mla v29.4s, v17.4s, v25.s[1]
	// sub-blocks 6 (low nibbles) and 7 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f0e0752 // ushr v18.16b, v26.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x6f0e0772 // ushr v18.16b, v27.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x6f0d0752 // ushr v18.16b, v26.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x6f0d0772 // ushr v18.16b, v27.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x0e24c050 // smull v16.8h, v2.8b, v4.8b
	WORD $0x4e24c052 // smull2 v18.8h, v2.16b, v4.16b
	WORD $0x4e602a10 // saddlp v16.4s, v16.8h
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e25c072 // smull v18.8h, v3.8b, v5.8b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x4e25c072 // smull2 v18.8h, v3.16b, v5.16b
	WORD $0x4e606a50 // sadalp v16.4s, v18.8h
	WORD $0x0e26c011 // smull v17.8h, v0.8b, v6.8b
	WORD $0x4e26c013 // smull2 v19.8h, v0.16b, v6.16b
	WORD $0x4e602a31 // saddlp v17.4s, v17.8h
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x0e27c033 // smull v19.8h, v1.8b, v7.8b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x4e27c033 // smull2 v19.8h, v1.16b, v7.16b
	WORD $0x4e606a71 // sadalp v17.4s, v19.8h
	WORD $0x6f990a1d // mla v29.4s, v16.4s, v25.s[2]
	WORD $0x6fb90a3d // mla v29.4s, v17.4s, v25.s[3]
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x5e21db9c // scvtf s28, s28
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e360b9c // fmul s28, s28, s22
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	WORD $0x1e3c3a94 // fsub s20, s20, s28
	SUBS $1, R12, R12
	BNE q5kRows1NEONblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q5kRows1NEONrow
	RET

// func q5kRows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q5_K (a fifth bit per quant from qh) rows against one token's Q8_K activations, dotQ5K's bits: per
// super-block the exact integers sumi = Σ_j sc_j·Σ q·a and
// summ = Σ_j m_j·(bsum_2j + bsum_2j+1), then
// sum = (sum + float32(sumi)·(d·da)) − float32(summ)·(dmin·da).
// nrows, nb > 0.
TEXT ·q5kRows1Dot(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #0x10
q5kRows1Dotrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q5kRows1Dotblock:
	// F21 = d·da, F22 = dmin·da.
	MOVHU (R8), R13
	MOVHU 2(R8), R14
	WORD $0x1e2701b5 // fmov s21, w13
	WORD $0x1e2701d6 // fmov s22, w14
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1ee242d6 // fcvt s22, h22
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	WORD $0x1e220ad6 // fmul s22, s22, s2
	// The 6-bit scales and mins (scaleMinK4): R13 = sc 0-3, R17 = sc 4-7,
	// R19 = m 0-3, R16 = m 4-7, a byte each.
	MOVWU 4(R8), R13
	MOVWU 8(R8), R14
	MOVWU 12(R8), R15
	LSRW $4, R15, R16
	ANDW $0x0f0f0f0f, R16, R16
	LSRW $6, R14, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R16, R16
	ANDW $0x0f0f0f0f, R15, R17
	LSRW $6, R13, R20
	ANDW $0x03030303, R20, R20
	ORRW R20<<4, R17, R17
	ANDW $0x3f3f3f3f, R14, R19
	ANDW $0x3f3f3f3f, R13, R13
	ADD $16, R8, R8
	// V24, V25: the scales as int32; V26: the mins as int16.
	WORD $0x4e041db8 // mov v24.s[0], w13
	WORD $0x4e0c1e38 // mov v24.s[1], w17
	WORD $0x4e041e7a // mov v26.s[0], w19
	WORD $0x4e0c1e1a // mov v26.s[1], w16
	WORD $0x2f08a718 // uxtl v24.8h, v24.8b
	WORD $0x6f10a719 // uxtl2 v25.4s, v24.8h
	WORD $0x2f10a718 // uxtl v24.4s, v24.4h
	WORD $0x2f08a75a // uxtl v26.8h, v26.8b
	// summ (S28) from the block sums, added in pairs.
	VLD1.P 32(R11), [V27.H8, V28.H8]
	WORD $0x4e7cbf7b // addp v27.8h, v27.8h, v28.8h
	WORD $0x0e7ac37c // smull v28.4s, v27.4h, v26.4h
	WORD $0x4e7a837c // smlal2 v28.4s, v27.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x6f00e41d // movi v29.2d, #0
	// Q5_K's high bits: qh, one byte per lane l of the four steps.
	VLD1.P 32(R8), [V26.B16, V27.B16]
	// sub-blocks 0 (low nibbles) and 1 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4f0c5752 // shl v18.16b, v26.16b, #4
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4f0c5772 // shl v18.16b, v27.16b, #4
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x4f0b5752 // shl v18.16b, v26.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x4f0b5772 // shl v18.16b, v27.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f98021d // mla v29.4s, v16.4s, v24.s[0]
	WORD $0x6fb8023d // mla v29.4s, v17.4s, v24.s[1]
	// sub-blocks 2 (low nibbles) and 3 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4f0a5752 // shl v18.16b, v26.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4f0a5772 // shl v18.16b, v27.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x4f095752 // shl v18.16b, v26.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x4f095772 // shl v18.16b, v27.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f980a1d // mla v29.4s, v16.4s, v24.s[2]
	WORD $0x6fb80a3d // mla v29.4s, v17.4s, v24.s[3]
	// sub-blocks 4 (low nibbles) and 5 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x4eba1f52 // mov v18.16b, v26.16b
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x4ebb1f72 // mov v18.16b, v27.16b
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x6f0f0752 // ushr v18.16b, v26.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x6f0f0772 // ushr v18.16b, v27.16b, #1
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f99021d // mla v29.4s, v16.4s, v25.s[0]
	WORD $0x6fb9023d // mla v29.4s, v17.4s, v25.s[1]
	// sub-blocks 6 (low nibbles) and 7 (high): V16, V17 their sums in four lanes.
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x6f0e0752 // ushr v18.16b, v26.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c42 // orr v2.16b, v2.16b, v18.16b
	WORD $0x6f0e0772 // ushr v18.16b, v27.16b, #2
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c63 // orr v3.16b, v3.16b, v18.16b
	WORD $0x6f0d0752 // ushr v18.16b, v26.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c00 // orr v0.16b, v0.16b, v18.16b
	WORD $0x6f0d0772 // ushr v18.16b, v27.16b, #3
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4eb21c21 // orr v1.16b, v1.16b, v18.16b
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e859470 // sdot v16.4s, v3.16b, v5.16b
	WORD $0x4e869411 // sdot v17.4s, v0.16b, v6.16b
	WORD $0x4e879431 // sdot v17.4s, v1.16b, v7.16b
	WORD $0x6f990a1d // mla v29.4s, v16.4s, v25.s[2]
	WORD $0x6fb90a3d // mla v29.4s, v17.4s, v25.s[3]
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x5e21db9c // scvtf s28, s28
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e360b9c // fmul s28, s28, s22
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	WORD $0x1e3c3a94 // fsub s20, s20, s28
	SUBS $1, R12, R12
	BNE q5kRows1Dotblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q5kRows1Dotrow
	RET

// func q6kRows1NEON(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q6_K rows against one token's Q8_K activations, dotQ6K's bits: per
// super-block the exact sumi = Σ_g sc_g·(Σ q·a − 32·bsum_g) over the 16
// groups of 16, then sum += float32(sumi)·(d·da). nrows, nb > 0.
TEXT ·q6kRows1NEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f01e61f // movi v31.16b, #0x30
q6kRows1NEONrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q6kRows1NEONblock:
	// F21 = d·da.
	MOVHU 208(R8), R15
	WORD $0x1e2701f5 // fmov s21, w15
	WORD $0x1ee242b5 // fcvt s21, h21
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	// The int8 scales: V23, V22 as int16 (groups 0-7, 8-15), V24-V27 as int32.
	ADD $192, R8, R15
	VLD1 (R15), [V22.B16]
	WORD $0x0f08a6d7 // sxtl v23.8h, v22.8b
	WORD $0x4f08a6d6 // sxtl2 v22.8h, v22.16b
	WORD $0x0f10a6f8 // sxtl v24.4s, v23.4h
	WORD $0x4f10a6f9 // sxtl2 v25.4s, v23.8h
	WORD $0x0f10a6da // sxtl v26.4s, v22.4h
	WORD $0x4f10a6db // sxtl2 v27.4s, v22.8h
	// V28: 32·Σ sc_g·bsum_g in four lanes.
	VLD1.P 32(R11), [V16.H8, V17.H8]
	WORD $0x0e77c21c // smull v28.4s, v16.4h, v23.4h
	WORD $0x4e77821c // smlal2 v28.4s, v16.8h, v23.8h
	WORD $0x0e76823c // smlal v28.4s, v17.4h, v22.4h
	WORD $0x4e76823c // smlal2 v28.4s, v17.8h, v22.8h
	WORD $0x4f25579c // shl v28.4s, v28.4s, #5
	WORD $0x6f00e41d // movi v29.2d, #0
	MOVD R8, R14
	ADD $128, R8, R13
	// Half 0: quants 128·0… from ql (V0-V3) and qh (V4, V5), 0…63.
	VLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R13), [V4.B16, V5.B16]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x4e3e1c06 // and v6.16b, v0.16b, v30.16b
	WORD $0x4f0c5487 // shl v7.16b, v4.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e30c0c7 // smull v7.8h, v6.8b, v16.8b
	WORD $0x4e30c0c6 // smull2 v6.8h, v6.16b, v16.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9800fd // mla v29.4s, v7.4s, v24.s[0]
	WORD $0x4e3e1c26 // and v6.16b, v1.16b, v30.16b
	WORD $0x4f0c54a7 // shl v7.16b, v5.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e31c0c7 // smull v7.8h, v6.8b, v17.8b
	WORD $0x4e31c0c6 // smull2 v6.8h, v6.16b, v17.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fb800fd // mla v29.4s, v7.4s, v24.s[1]
	WORD $0x4e3e1c46 // and v6.16b, v2.16b, v30.16b
	WORD $0x4f0a5487 // shl v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e32c0c7 // smull v7.8h, v6.8b, v18.8b
	WORD $0x4e32c0c6 // smull2 v6.8h, v6.16b, v18.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9808fd // mla v29.4s, v7.4s, v24.s[2]
	WORD $0x4e3e1c66 // and v6.16b, v3.16b, v30.16b
	WORD $0x4f0a54a7 // shl v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e33c0c7 // smull v7.8h, v6.8b, v19.8b
	WORD $0x4e33c0c6 // smull2 v6.8h, v6.16b, v19.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fb808fd // mla v29.4s, v7.4s, v24.s[3]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x6f0c0406 // ushr v6.16b, v0.16b, #4
	WORD $0x4e3f1c87 // and v7.16b, v4.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e30c0c7 // smull v7.8h, v6.8b, v16.8b
	WORD $0x4e30c0c6 // smull2 v6.8h, v6.16b, v16.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9900fd // mla v29.4s, v7.4s, v25.s[0]
	WORD $0x6f0c0426 // ushr v6.16b, v1.16b, #4
	WORD $0x4e3f1ca7 // and v7.16b, v5.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e31c0c7 // smull v7.8h, v6.8b, v17.8b
	WORD $0x4e31c0c6 // smull2 v6.8h, v6.16b, v17.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fb900fd // mla v29.4s, v7.4s, v25.s[1]
	WORD $0x6f0c0446 // ushr v6.16b, v2.16b, #4
	WORD $0x6f0e0487 // ushr v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e32c0c7 // smull v7.8h, v6.8b, v18.8b
	WORD $0x4e32c0c6 // smull2 v6.8h, v6.16b, v18.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9908fd // mla v29.4s, v7.4s, v25.s[2]
	WORD $0x6f0c0466 // ushr v6.16b, v3.16b, #4
	WORD $0x6f0e04a7 // ushr v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e33c0c7 // smull v7.8h, v6.8b, v19.8b
	WORD $0x4e33c0c6 // smull2 v6.8h, v6.16b, v19.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fb908fd // mla v29.4s, v7.4s, v25.s[3]
	// Half 1: quants 128·1… from ql (V0-V3) and qh (V4, V5), 0…63.
	VLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R13), [V4.B16, V5.B16]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x4e3e1c06 // and v6.16b, v0.16b, v30.16b
	WORD $0x4f0c5487 // shl v7.16b, v4.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e30c0c7 // smull v7.8h, v6.8b, v16.8b
	WORD $0x4e30c0c6 // smull2 v6.8h, v6.16b, v16.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9a00fd // mla v29.4s, v7.4s, v26.s[0]
	WORD $0x4e3e1c26 // and v6.16b, v1.16b, v30.16b
	WORD $0x4f0c54a7 // shl v7.16b, v5.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e31c0c7 // smull v7.8h, v6.8b, v17.8b
	WORD $0x4e31c0c6 // smull2 v6.8h, v6.16b, v17.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fba00fd // mla v29.4s, v7.4s, v26.s[1]
	WORD $0x4e3e1c46 // and v6.16b, v2.16b, v30.16b
	WORD $0x4f0a5487 // shl v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e32c0c7 // smull v7.8h, v6.8b, v18.8b
	WORD $0x4e32c0c6 // smull2 v6.8h, v6.16b, v18.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9a08fd // mla v29.4s, v7.4s, v26.s[2]
	WORD $0x4e3e1c66 // and v6.16b, v3.16b, v30.16b
	WORD $0x4f0a54a7 // shl v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e33c0c7 // smull v7.8h, v6.8b, v19.8b
	WORD $0x4e33c0c6 // smull2 v6.8h, v6.16b, v19.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fba08fd // mla v29.4s, v7.4s, v26.s[3]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x6f0c0406 // ushr v6.16b, v0.16b, #4
	WORD $0x4e3f1c87 // and v7.16b, v4.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e30c0c7 // smull v7.8h, v6.8b, v16.8b
	WORD $0x4e30c0c6 // smull2 v6.8h, v6.16b, v16.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9b00fd // mla v29.4s, v7.4s, v27.s[0]
	WORD $0x6f0c0426 // ushr v6.16b, v1.16b, #4
	WORD $0x4e3f1ca7 // and v7.16b, v5.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e31c0c7 // smull v7.8h, v6.8b, v17.8b
	WORD $0x4e31c0c6 // smull2 v6.8h, v6.16b, v17.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fbb00fd // mla v29.4s, v7.4s, v27.s[1]
	WORD $0x6f0c0446 // ushr v6.16b, v2.16b, #4
	WORD $0x6f0e0487 // ushr v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e32c0c7 // smull v7.8h, v6.8b, v18.8b
	WORD $0x4e32c0c6 // smull2 v6.8h, v6.16b, v18.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6f9b08fd // mla v29.4s, v7.4s, v27.s[2]
	WORD $0x6f0c0466 // ushr v6.16b, v3.16b, #4
	WORD $0x6f0e04a7 // ushr v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x0e33c0c7 // smull v7.8h, v6.8b, v19.8b
	WORD $0x4e33c0c6 // smull2 v6.8h, v6.16b, v19.16b
	WORD $0x4e6028e7 // saddlp v7.4s, v7.8h
	WORD $0x4e6068c7 // sadalp v7.4s, v6.8h
	WORD $0x6fbb08fd // mla v29.4s, v7.4s, v27.s[3]
	WORD $0x6ebc87bd // sub v29.4s, v29.4s, v28.4s
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	ADD $210, R8, R8
	SUBS $1, R12, R12
	BNE q6kRows1NEONblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q6kRows1NEONrow
	RET

// func q6kRows1Dot(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
// Q6_K rows against one token's Q8_K activations, dotQ6K's bits: per
// super-block the exact sumi = Σ_g sc_g·(Σ q·a − 32·bsum_g) over the 16
// groups of 16, then sum += float32(sumi)·(d·da). nrows, nb > 0.
TEXT ·q6kRows1Dot(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R1
	MOVD nrows+16(FP), R2
	MOVD a+24(FP), R3
	MOVD d+32(FP), R4
	MOVD bsums+40(FP), R5
	MOVD nb+48(FP), R6
	MOVD out+56(FP), R7
	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f01e61f // movi v31.16b, #0x30
q6kRows1Dotrow:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
q6kRows1Dotblock:
	// F21 = d·da.
	MOVHU 208(R8), R15
	WORD $0x1e2701f5 // fmov s21, w15
	WORD $0x1ee242b5 // fcvt s21, h21
	FMOVS.P 4(R10), F2
	WORD $0x1e220ab5 // fmul s21, s21, s2
	// The int8 scales: V23, V22 as int16 (groups 0-7, 8-15), V24-V27 as int32.
	ADD $192, R8, R15
	VLD1 (R15), [V22.B16]
	WORD $0x0f08a6d7 // sxtl v23.8h, v22.8b
	WORD $0x4f08a6d6 // sxtl2 v22.8h, v22.16b
	WORD $0x0f10a6f8 // sxtl v24.4s, v23.4h
	WORD $0x4f10a6f9 // sxtl2 v25.4s, v23.8h
	WORD $0x0f10a6da // sxtl v26.4s, v22.4h
	WORD $0x4f10a6db // sxtl2 v27.4s, v22.8h
	// V28: 32·Σ sc_g·bsum_g in four lanes.
	VLD1.P 32(R11), [V16.H8, V17.H8]
	WORD $0x0e77c21c // smull v28.4s, v16.4h, v23.4h
	WORD $0x4e77821c // smlal2 v28.4s, v16.8h, v23.8h
	WORD $0x0e76823c // smlal v28.4s, v17.4h, v22.4h
	WORD $0x4e76823c // smlal2 v28.4s, v17.8h, v22.8h
	WORD $0x4f25579c // shl v28.4s, v28.4s, #5
	WORD $0x6f00e41d // movi v29.2d, #0
	MOVD R8, R14
	ADD $128, R8, R13
	// Half 0: quants 128·0… from ql (V0-V3) and qh (V4, V5), 0…63.
	VLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R13), [V4.B16, V5.B16]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x4e3e1c06 // and v6.16b, v0.16b, v30.16b
	WORD $0x4f0c5487 // shl v7.16b, v4.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9094c7 // sdot v7.4s, v6.16b, v16.16b
	WORD $0x6f9800fd // mla v29.4s, v7.4s, v24.s[0]
	WORD $0x4e3e1c26 // and v6.16b, v1.16b, v30.16b
	WORD $0x4f0c54a7 // shl v7.16b, v5.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9194c7 // sdot v7.4s, v6.16b, v17.16b
	WORD $0x6fb800fd // mla v29.4s, v7.4s, v24.s[1]
	WORD $0x4e3e1c46 // and v6.16b, v2.16b, v30.16b
	WORD $0x4f0a5487 // shl v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9294c7 // sdot v7.4s, v6.16b, v18.16b
	WORD $0x6f9808fd // mla v29.4s, v7.4s, v24.s[2]
	WORD $0x4e3e1c66 // and v6.16b, v3.16b, v30.16b
	WORD $0x4f0a54a7 // shl v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9394c7 // sdot v7.4s, v6.16b, v19.16b
	WORD $0x6fb808fd // mla v29.4s, v7.4s, v24.s[3]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x6f0c0406 // ushr v6.16b, v0.16b, #4
	WORD $0x4e3f1c87 // and v7.16b, v4.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9094c7 // sdot v7.4s, v6.16b, v16.16b
	WORD $0x6f9900fd // mla v29.4s, v7.4s, v25.s[0]
	WORD $0x6f0c0426 // ushr v6.16b, v1.16b, #4
	WORD $0x4e3f1ca7 // and v7.16b, v5.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9194c7 // sdot v7.4s, v6.16b, v17.16b
	WORD $0x6fb900fd // mla v29.4s, v7.4s, v25.s[1]
	WORD $0x6f0c0446 // ushr v6.16b, v2.16b, #4
	WORD $0x6f0e0487 // ushr v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9294c7 // sdot v7.4s, v6.16b, v18.16b
	WORD $0x6f9908fd // mla v29.4s, v7.4s, v25.s[2]
	WORD $0x6f0c0466 // ushr v6.16b, v3.16b, #4
	WORD $0x6f0e04a7 // ushr v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9394c7 // sdot v7.4s, v6.16b, v19.16b
	WORD $0x6fb908fd // mla v29.4s, v7.4s, v25.s[3]
	// Half 1: quants 128·1… from ql (V0-V3) and qh (V4, V5), 0…63.
	VLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R13), [V4.B16, V5.B16]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x4e3e1c06 // and v6.16b, v0.16b, v30.16b
	WORD $0x4f0c5487 // shl v7.16b, v4.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9094c7 // sdot v7.4s, v6.16b, v16.16b
	WORD $0x6f9a00fd // mla v29.4s, v7.4s, v26.s[0]
	WORD $0x4e3e1c26 // and v6.16b, v1.16b, v30.16b
	WORD $0x4f0c54a7 // shl v7.16b, v5.16b, #4
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9194c7 // sdot v7.4s, v6.16b, v17.16b
	WORD $0x6fba00fd // mla v29.4s, v7.4s, v26.s[1]
	WORD $0x4e3e1c46 // and v6.16b, v2.16b, v30.16b
	WORD $0x4f0a5487 // shl v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9294c7 // sdot v7.4s, v6.16b, v18.16b
	WORD $0x6f9a08fd // mla v29.4s, v7.4s, v26.s[2]
	WORD $0x4e3e1c66 // and v6.16b, v3.16b, v30.16b
	WORD $0x4f0a54a7 // shl v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9394c7 // sdot v7.4s, v6.16b, v19.16b
	WORD $0x6fba08fd // mla v29.4s, v7.4s, v26.s[3]
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]
	WORD $0x6f0c0406 // ushr v6.16b, v0.16b, #4
	WORD $0x4e3f1c87 // and v7.16b, v4.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9094c7 // sdot v7.4s, v6.16b, v16.16b
	WORD $0x6f9b00fd // mla v29.4s, v7.4s, v27.s[0]
	WORD $0x6f0c0426 // ushr v6.16b, v1.16b, #4
	WORD $0x4e3f1ca7 // and v7.16b, v5.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9194c7 // sdot v7.4s, v6.16b, v17.16b
	WORD $0x6fbb00fd // mla v29.4s, v7.4s, v27.s[1]
	WORD $0x6f0c0446 // ushr v6.16b, v2.16b, #4
	WORD $0x6f0e0487 // ushr v7.16b, v4.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9294c7 // sdot v7.4s, v6.16b, v18.16b
	WORD $0x6f9b08fd // mla v29.4s, v7.4s, v27.s[2]
	WORD $0x6f0c0466 // ushr v6.16b, v3.16b, #4
	WORD $0x6f0e04a7 // ushr v7.16b, v5.16b, #2
	WORD $0x4e3f1ce7 // and v7.16b, v7.16b, v31.16b
	WORD $0x4ea71cc6 // orr v6.16b, v6.16b, v7.16b
	WORD $0x6f00e407 // movi v7.2d, #0
	WORD $0x4e9394c7 // sdot v7.4s, v6.16b, v19.16b
	WORD $0x6fbb08fd // mla v29.4s, v7.4s, v27.s[3]
	WORD $0x6ebc87bd // sub v29.4s, v29.4s, v28.4s
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	ADD $210, R8, R8
	SUBS $1, R12, R12
	BNE q6kRows1Dotblock
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE q6kRows1Dotrow
	RET

// func flashScoresF32NEON(q *float32, d int, k unsafe.Pointer, kstride int, s *float32)
// s[j] = Σ_c q[c]·key_j[c] for the tile's 16 keys, stored transposed
// (F32, dimension c's 16 keys kstride bytes after c−1's). d > 0.
TEXT ·flashScoresF32NEON(SB), NOSPLIT, $0-40
	MOVD q+0(FP), R0
	MOVD d+8(FP), R1
	MOVD k+16(FP), R2
	MOVD kstride+24(FP), R3
	MOVD s+32(FP), R4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
scoresF32:
	FMOVS.P 4(R0), F0
	VLD1 (R2), [V4.S4, V5.S4, V6.S4, V7.S4]
	ADD R3, R2, R2
	WORD $0x4f801090 // fmla v16.4s, v4.4s, v0.s[0]
	WORD $0x4f8010b1 // fmla v17.4s, v5.4s, v0.s[0]
	WORD $0x4f8010d2 // fmla v18.4s, v6.4s, v0.s[0]
	WORD $0x4f8010f3 // fmla v19.4s, v7.4s, v0.s[0]
	SUBS $1, R1, R1
	BNE scoresF32
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R4)
	RET

// func flashAccF32NEON(o *float32, d int, alpha float32, p *float32, nk int, v unsafe.Pointer, vstride int)
// o = o·alpha + Σ_{j<nk, p_j≠0} p_j·v_j, sixteen of o's d floats at a
// time (d a positive multiple of 16; v_j F32, vstride bytes apart).
TEXT ·flashAccF32NEON(SB), NOSPLIT, $0-56
	MOVD o+0(FP), R0
	MOVD d+8(FP), R1
	FMOVS alpha+16(FP), F1
	MOVD p+24(FP), R2
	MOVD nk+32(FP), R3
	MOVD v+40(FP), R4
	MOVD vstride+48(FP), R5
	LSR $4, R1, R1
accF32chunk:
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x4f819210 // fmul v16.4s, v16.4s, v1.s[0]
	WORD $0x4f819231 // fmul v17.4s, v17.4s, v1.s[0]
	WORD $0x4f819252 // fmul v18.4s, v18.4s, v1.s[0]
	WORD $0x4f819273 // fmul v19.4s, v19.4s, v1.s[0]
	MOVD R2, R6
	MOVD R4, R7
	MOVD R3, R8
accF32key:
	FMOVS.P 4(R6), F0
	WORD $0x1e202008 // fcmp s0, #0.0
	BEQ accF32skip
	VLD1 (R7), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4f801090 // fmla v16.4s, v4.4s, v0.s[0]
	WORD $0x4f8010b1 // fmla v17.4s, v5.4s, v0.s[0]
	WORD $0x4f8010d2 // fmla v18.4s, v6.4s, v0.s[0]
	WORD $0x4f8010f3 // fmla v19.4s, v7.4s, v0.s[0]
accF32skip:
	ADD R5, R7, R7
	SUBS $1, R8, R8
	BNE accF32key
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	ADD $64, R4, R4
	SUBS $1, R1, R1
	BNE accF32chunk
	RET

// func flashScoresF16NEON(q *float32, d int, k unsafe.Pointer, kstride int, s *float32)
// s[j] = Σ_c q[c]·key_j[c] for the tile's 16 keys, stored transposed
// (F16, dimension c's 16 keys kstride bytes after c−1's). d > 0.
TEXT ·flashScoresF16NEON(SB), NOSPLIT, $0-40
	MOVD q+0(FP), R0
	MOVD d+8(FP), R1
	MOVD k+16(FP), R2
	MOVD kstride+24(FP), R3
	MOVD s+32(FP), R4
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
scoresF16:
	FMOVS.P 4(R0), F0
	VLD1 (R2), [V4.H8, V5.H8]
	WORD $0x0e217886 // fcvtl v6.4s, v4.4h
	WORD $0x4e217887 // fcvtl2 v7.4s, v4.8h
	WORD $0x0e2178b4 // fcvtl v20.4s, v5.4h
	WORD $0x4e2178b5 // fcvtl2 v21.4s, v5.8h
	ADD R3, R2, R2
	WORD $0x4f8010d0 // fmla v16.4s, v6.4s, v0.s[0]
	WORD $0x4f8010f1 // fmla v17.4s, v7.4s, v0.s[0]
	WORD $0x4f801292 // fmla v18.4s, v20.4s, v0.s[0]
	WORD $0x4f8012b3 // fmla v19.4s, v21.4s, v0.s[0]
	SUBS $1, R1, R1
	BNE scoresF16
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R4)
	RET

// func flashAccF16NEON(o *float32, d int, alpha float32, p *float32, nk int, v unsafe.Pointer, vstride int)
// o = o·alpha + Σ_{j<nk, p_j≠0} p_j·v_j, sixteen of o's d floats at a
// time (d a positive multiple of 16; v_j F16, vstride bytes apart).
TEXT ·flashAccF16NEON(SB), NOSPLIT, $0-56
	MOVD o+0(FP), R0
	MOVD d+8(FP), R1
	FMOVS alpha+16(FP), F1
	MOVD p+24(FP), R2
	MOVD nk+32(FP), R3
	MOVD v+40(FP), R4
	MOVD vstride+48(FP), R5
	LSR $4, R1, R1
accF16chunk:
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x4f819210 // fmul v16.4s, v16.4s, v1.s[0]
	WORD $0x4f819231 // fmul v17.4s, v17.4s, v1.s[0]
	WORD $0x4f819252 // fmul v18.4s, v18.4s, v1.s[0]
	WORD $0x4f819273 // fmul v19.4s, v19.4s, v1.s[0]
	MOVD R2, R6
	MOVD R4, R7
	MOVD R3, R8
accF16key:
	FMOVS.P 4(R6), F0
	WORD $0x1e202008 // fcmp s0, #0.0
	BEQ accF16skip
	VLD1 (R7), [V4.H8, V5.H8]
	WORD $0x0e217886 // fcvtl v6.4s, v4.4h
	WORD $0x4e217887 // fcvtl2 v7.4s, v4.8h
	WORD $0x0e2178b4 // fcvtl v20.4s, v5.4h
	WORD $0x4e2178b5 // fcvtl2 v21.4s, v5.8h
	WORD $0x4f8010d0 // fmla v16.4s, v6.4s, v0.s[0]
	WORD $0x4f8010f1 // fmla v17.4s, v7.4s, v0.s[0]
	WORD $0x4f801292 // fmla v18.4s, v20.4s, v0.s[0]
	WORD $0x4f8012b3 // fmla v19.4s, v21.4s, v0.s[0]
accF16skip:
	ADD R5, R7, R7
	SUBS $1, R8, R8
	BNE accF16key
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	ADD $32, R4, R4
	SUBS $1, R1, R1
	BNE accF16chunk
	RET

// func readSumNEON(p *byte, n int) uint64
// The sum of n bytes' 8-byte words (n a positive multiple of 128), four
// accumulators: a read whose only cost is the loads.
TEXT ·readSumNEON(SB), NOSPLIT, $0-24
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	LSR $7, R1, R1
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
readloop:
	VLD1.P 64(R0), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P 64(R0), [V4.D2, V5.D2, V6.D2, V7.D2]
	WORD $0x4ee08610 // add v16.2d, v16.2d, v0.2d
	WORD $0x4ee18631 // add v17.2d, v17.2d, v1.2d
	WORD $0x4ee28652 // add v18.2d, v18.2d, v2.2d
	WORD $0x4ee38673 // add v19.2d, v19.2d, v3.2d
	WORD $0x4ee48610 // add v16.2d, v16.2d, v4.2d
	WORD $0x4ee58631 // add v17.2d, v17.2d, v5.2d
	WORD $0x4ee68652 // add v18.2d, v18.2d, v6.2d
	WORD $0x4ee78673 // add v19.2d, v19.2d, v7.2d
	SUBS $1, R1, R1
	BNE readloop
	WORD $0x4ef18610 // add v16.2d, v16.2d, v17.2d
	WORD $0x4ef38652 // add v18.2d, v18.2d, v19.2d
	WORD $0x4ef28610 // add v16.2d, v16.2d, v18.2d
	WORD $0x5ef1ba10 // addp d16, v16.2d
	FMOVD F16, ret+16(FP)
	RET

// func quantQ8_0NEON(x *float32, nb int, q *int8, d *float32)
// quantQ8_0Blocks's Q8_0 quantisation of nb > 0 blocks of 32: d = amax/127
// rounded to fp16, q = round-half-even(x·(127/amax)).
TEXT ·quantQ8_0NEON(SB), NOSPLIT, $0-32
	MOVD x+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD q+16(FP), R2
	MOVD d+24(FP), R3
	MOVW $0x42fe0000, R4
	WORD $0x1e27009e // fmov s30, w4
	MOVW $0x7f800000, R4
	WORD $0x1e27009d // fmov s29, w4
	WORD $0x6f00e41f // movi v31.2d, #0
quantloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4ea0f810 // fabs v16.4s, v0.4s
	WORD $0x4ea0f831 // fabs v17.4s, v1.4s
	WORD $0x4ea0f852 // fabs v18.4s, v2.4s
	WORD $0x4ea0f873 // fabs v19.4s, v3.4s
	WORD $0x4ea0f894 // fabs v20.4s, v4.4s
	WORD $0x4ea0f8b5 // fabs v21.4s, v5.4s
	WORD $0x4ea0f8d6 // fabs v22.4s, v6.4s
	WORD $0x4ea0f8f7 // fabs v23.4s, v7.4s
	WORD $0x4e31f610 // fmax v16.4s, v16.4s, v17.4s
	WORD $0x4e33f652 // fmax v18.4s, v18.4s, v19.4s
	WORD $0x4e35f694 // fmax v20.4s, v20.4s, v21.4s
	WORD $0x4e37f6d6 // fmax v22.4s, v22.4s, v23.4s
	WORD $0x4e32f610 // fmax v16.4s, v16.4s, v18.4s
	WORD $0x4e36f694 // fmax v20.4s, v20.4s, v22.4s
	WORD $0x4e34f610 // fmax v16.4s, v16.4s, v20.4s
	WORD $0x6e30fa10 // fmaxv s16, v16.4s
	// d = RoundF16(amax/127); id = 127/amax, 0 unless below +Inf.
	WORD $0x1e3e1a11 // fdiv s17, s16, s30
	WORD $0x1e23c231 // fcvt h17, s17
	WORD $0x1ee24231 // fcvt s17, h17
	FMOVS.P F17, 4(R3)
	WORD $0x1e301bd2 // fdiv s18, s30, s16
	WORD $0x1e3d2240 // fcmp s18, s29
	WORD $0x1e3f4e52 // fcsel s18, s18, s31, mi
	WORD $0x4f929000 // fmul v0.4s, v0.4s, v18.s[0]
	WORD $0x4f929021 // fmul v1.4s, v1.4s, v18.s[0]
	WORD $0x4f929042 // fmul v2.4s, v2.4s, v18.s[0]
	WORD $0x4f929063 // fmul v3.4s, v3.4s, v18.s[0]
	WORD $0x4f929084 // fmul v4.4s, v4.4s, v18.s[0]
	WORD $0x4f9290a5 // fmul v5.4s, v5.4s, v18.s[0]
	WORD $0x4f9290c6 // fmul v6.4s, v6.4s, v18.s[0]
	WORD $0x4f9290e7 // fmul v7.4s, v7.4s, v18.s[0]
	WORD $0x4e21a800 // fcvtns v0.4s, v0.4s
	WORD $0x4e21a821 // fcvtns v1.4s, v1.4s
	WORD $0x4e21a842 // fcvtns v2.4s, v2.4s
	WORD $0x4e21a863 // fcvtns v3.4s, v3.4s
	WORD $0x4e21a884 // fcvtns v4.4s, v4.4s
	WORD $0x4e21a8a5 // fcvtns v5.4s, v5.4s
	WORD $0x4e21a8c6 // fcvtns v6.4s, v6.4s
	WORD $0x4e21a8e7 // fcvtns v7.4s, v7.4s
	WORD $0x0e614800 // sqxtn v0.4h, v0.4s
	WORD $0x4e614820 // sqxtn2 v0.8h, v1.4s
	WORD $0x0e614842 // sqxtn v2.4h, v2.4s
	WORD $0x4e614862 // sqxtn2 v2.8h, v3.4s
	WORD $0x0e614884 // sqxtn v4.4h, v4.4s
	WORD $0x4e6148a4 // sqxtn2 v4.8h, v5.4s
	WORD $0x0e6148c6 // sqxtn v6.4h, v6.4s
	WORD $0x4e6148e6 // sqxtn2 v6.8h, v7.4s
	WORD $0x0e214818 // sqxtn v24.8b, v0.8h
	WORD $0x4e214858 // sqxtn2 v24.16b, v2.8h
	WORD $0x0e214899 // sqxtn v25.8b, v4.8h
	WORD $0x4e2148d9 // sqxtn2 v25.16b, v6.8h
	VST1.P [V24.B16, V25.B16], 32(R2)
	SUBS $1, R1, R1
	BNE quantloop
	RET

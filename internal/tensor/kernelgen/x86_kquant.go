// K-quant rows and 4-token tiles over weights in their GGUF layout.

package main

import (
	"bytes"
	"fmt"
	"strings"
)

// hsumInt leaves the sum of the eight int32 lanes of y (using X9) in the
// low lane of its X register; integer sums are exact in any order.
func hsumInt(w *strings.Builder, y string) {
	x := "X" + y[1:]
	fmt.Fprintf(w, "\tVEXTRACTI128 $1, %s, X9\n\tVPADDD X9, %s, %s\n", y, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0x4E, %s, X9\n\tVPADDD X9, %s, %s\n\tVPSHUFD $0xB1, %s, X9\n\tVPADDD X9, %s, %s\n", x, x, x, x, x, x)
}

// kquantKernels: Q4_K and Q6_K rows against Q8_K activations (a, one
// float scale d and sixteen int16 sums bsums per 256), in llama.cpp's
// integer formulation: per super-block an exact int32 Σ sc·Σ q·a, the
// minimums (Q4_K) or the −32 offset (Q6_K) from bsums, then two float
// operations per super-block in the order the pure-Go kernels use.
var kquantKernels = func() string {
	var w strings.Builder
	// Q4_K: func q4kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
	w.WriteString(`// func q4kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
TEXT ·q4kRows1AVX2(SB), NOSPLIT, $32-64
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+56(FP), R9
	VMOVDQU nib<>(SB), Y15
q4krow:
	VXORPS X0, X0, X0
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	MOVQ nb+48(FP), R13
q4kblock:
	MOVL 4(R12), AX
	MOVL 8(R12), CX
	MOVL 12(R12), R8
	MOVL CX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x3f3f3f3f, CX
	VMOVD CX, X8
	MOVL R8, CX
	SHRL $4, CX
	ANDL $0x0f0f0f0f, CX
	ORL R14, CX
	VPINSRD $1, CX, X8, X8
	MOVL AX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x0f0f0f0f, R8
	ORL R14, R8
	ANDL $0x3f3f3f3f, AX
	VMOVD AX, X1
	VPINSRD $1, R8, X1, X1
	VPMOVZXBW X1, X1
	VMOVDQU X1, 16(SP)
	VMOVDQU (DI), Y6
	VEXTRACTI128 $1, Y6, X7
	VPHADDW X7, X6, X6
	VPMOVZXBW X8, X8
	VPMADDWD X6, X8, X8
	VPSHUFD $0x4E, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xB1, X8, X9
	VPADDD X9, X8, X8
	VPXOR Y4, Y4, Y4
`)
	for k := range 4 {
		fmt.Fprintf(&w, "\tVMOVDQU %d(R12), Y1\n\tVPSRLW $4, Y1, Y2\n\tVPAND Y15, Y1, Y1\n\tVPAND Y15, Y2, Y2\n", 16+32*k)
		fmt.Fprintf(&w, "\tVPMADDUBSW %d(BX), Y1, Y1\n\tVPMADDUBSW %d(BX), Y2, Y2\n", 64*k, 64*k+32)
		fmt.Fprintf(&w, "\tVPBROADCASTW %d(SP), Y3\n\tVPMADDWD Y3, Y1, Y1\n\tVPBROADCASTW %d(SP), Y3\n\tVPMADDWD Y3, Y2, Y2\n", 16+4*k, 18+4*k)
		w.WriteString("\tVPADDD Y1, Y4, Y4\n\tVPADDD Y2, Y4, Y4\n")
	}
	hsumInt(&w, "Y4")
	w.WriteString(`	VCVTDQ2PS X4, X4
	VCVTDQ2PS X8, X8
	MOVL (R12), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMOVSS (DX), X11
	VMULSS X11, X10, X12
	VMOVSHDUP X10, X13
	VMULSS X11, X13, X13
	VMULSS X12, X4, X4
	VADDSS X4, X0, X0
	VMULSS X13, X8, X8
	VSUBSS X8, X0, X0
	ADDQ $144, R12
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ q4kblock
	VMOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ q4krow
	VZEROUPPER
	RET

// func q6kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
TEXT ·q6kRows1AVX2(SB), NOSPLIT, $32-64
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+56(FP), R9
	VMOVDQU nib<>(SB), Y15
	VMOVDQU m30<>(SB), Y14
q6krow:
	VXORPS X0, X0, X0
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	MOVQ nb+48(FP), R13
q6kblock:
	VPMOVSXBW 192(R12), Y5
	VMOVDQU Y5, 0(SP)
	VPMADDWD (DI), Y5, Y6
	VPXOR Y4, Y4, Y4
`)
	for n := range 2 {
		fmt.Fprintf(&w, "\tVMOVDQU %d(R12), Y1\n\tVMOVDQU %d(R12), Y2\n\tVMOVDQU %d(R12), Y3\n", 64*n, 64*n+32, 128+32*n)
		for k := range 4 {
			src := []string{"Y1", "Y2", "Y1", "Y2"}[k]
			if k < 2 {
				fmt.Fprintf(&w, "\tVPAND Y15, %s, Y7\n", src)
			} else {
				fmt.Fprintf(&w, "\tVPSRLW $4, %s, Y7\n\tVPAND Y15, Y7, Y7\n", src)
			}
			// high bits 2k, 2k+1 of qh to bits 4 and 5
			switch k {
			case 0:
				w.WriteString("\tVPSLLW $4, Y3, Y8\n")
			case 1:
				w.WriteString("\tVPSLLW $2, Y3, Y8\n")
			case 2:
				w.WriteString("\tVMOVDQA Y3, Y8\n")
			case 3:
				w.WriteString("\tVPSRLW $2, Y3, Y8\n")
			}
			c := 4*n + k
			fmt.Fprintf(&w, "\tVPAND Y14, Y8, Y8\n\tVPOR Y8, Y7, Y7\n\tVPMADDUBSW %d(BX), Y7, Y7\n", 32*c)
			fmt.Fprintf(&w, "\tVPBROADCASTW %d(SP), X9\n\tVPBROADCASTW %d(SP), X10\n\tVINSERTI128 $1, X10, Y9, Y9\n", 4*c, 4*c+2)
			w.WriteString("\tVPMADDWD Y9, Y7, Y7\n\tVPADDD Y7, Y4, Y4\n")
		}
	}
	hsumInt(&w, "Y4")
	hsumInt(&w, "Y6")
	w.WriteString(`	VPSLLD $5, X6, X6
	VPSUBD X6, X4, X4
	VCVTDQ2PS X4, X4
	MOVWLZX 208(R12), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMULSS (DX), X10, X10
	VMULSS X10, X4, X4
	VADDSS X4, X0, X0
	ADDQ $210, R12
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ q6kblock
	VMOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ q6krow
	VZEROUPPER
	RET
`)
	return w.String()
}()

// kTileBytes is what one Q8_K super-block of one token takes in the tiled
// activation layout of the VNNI K-quant kernels (Q8.KTile): for a tile of
// T tokens, T·256 quants, then T float scales, then T·16 int16 block sums.
const kTileBytes = 256 + 4 + 32

// q4kTile emits q4kRows<T>VNNI(w *byte, rowBytes, nrows int, a *byte, nb
// int, out *float32, ostride int): Q4_K rows against a tile of T tokens'
// Q8_K activations (ostride in bytes). Each super-block's scales and
// quants are unpacked once for all T tokens; per 32 quants and token one
// VPMADDUBSW and one VPDPWSSD with the sub-block scale broadcast from the
// stack. The minimums and the float steps follow dotQ4K's order.
func q4kTile(w *bytes.Buffer, T int) {
	name := fmt.Sprintf("q4kRows%dVNNI", T)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *byte, nb int, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $32-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+40(FP), R9
	MOVQ ostride+48(FP), R8
	LEAQ (R8)(R8*2), DI
	VMOVDQU nib<>(SB), Y15
%[1]srow:
`, name)
	for t := range T {
		fmt.Fprintf(w, "\tVXORPS X%[1]d, X%[1]d, X%[1]d\n", 4+t)
	}
	fmt.Fprintf(w, `	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ nb+32(FP), R13
%[1]sblock:
	MOVL 4(R12), AX
	MOVL 8(R12), CX
	MOVL 12(R12), DX
	MOVL CX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x3f3f3f3f, CX
	VMOVD CX, X8
	MOVL DX, CX
	SHRL $4, CX
	ANDL $0x0f0f0f0f, CX
	ORL R14, CX
	VPINSRD $1, CX, X8, X8
	MOVL AX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x0f0f0f0f, DX
	ORL R14, DX
	ANDL $0x3f3f3f3f, AX
	VMOVD AX, X9
	VPINSRD $1, DX, X9, X9
	VPMOVZXBW X9, X9
	VPUNPCKLWD X9, X9, X10
	VMOVDQU X10, 0(SP)
	VPUNPCKHWD X9, X9, X10
	VMOVDQU X10, 16(SP)
	VPMOVZXBW X8, X8
	VPUNPCKLWD X8, X8, X9
	VPUNPCKHWD X8, X8, X10
	VINSERTI128 $1, X10, Y9, Y14
	MOVL (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
`, name)
	// One token alone gets four accumulators (Y0–Y3, one per 64 quants)
	// so that the VPDPWSSD chains overlap; a tile has one per token.
	accs := T
	if T == 1 {
		accs = 4
	}
	for t := range accs {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", t)
	}
	for k := range 4 {
		fmt.Fprintf(w, "\tVMOVDQU %d(R12), Y11\n\tVPSRLW $4, Y11, Y12\n\tVPAND Y15, Y11, Y11\n\tVPAND Y15, Y12, Y12\n", 16+32*k)
		for t := range T {
			acc := t
			if T == 1 {
				acc = k
			}
			fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y11, Y8\n\tVPDPWSSD.BCST %d(SP), Y8, Y%d\n", 256*t+64*k, 8*k, acc)
			fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y12, Y8\n\tVPDPWSSD.BCST %d(SP), Y8, Y%d\n", 256*t+64*k+32, 8*k+4, acc)
		}
	}
	if T == 1 {
		w.WriteString("\tVPADDD Y1, Y0, Y0\n\tVPADDD Y3, Y2, Y2\n\tVPADDD Y2, Y0, Y0\n")
	}
	for t := range T {
		fmt.Fprintf(w, `	VEXTRACTI128 $1, Y%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPMADDWD %[2]d(BX), Y14, Y10
	VEXTRACTI128 $1, Y10, X9
	VPADDD X9, X10, X10
	VPHADDD X10, X%[1]d, X10
	VPHADDD X10, X10, X10
	VCVTDQ2PS X10, X10
	VBROADCASTSS %[3]d(BX), X9
	VMULPS X9, X13, X9
	VMULPS X9, X10, X10
	VADDSS X10, X%[4]d, X%[4]d
	VMOVSHDUP X10, X10
	VSUBSS X10, X%[4]d, X%[4]d
`, t, 256*T+4*T+32*t, 256*T+4*t, 4+t)
	}
	fmt.Fprintf(w, "\tADDQ $144, R12\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n", kTileBytes*T, name)
	for t := range T {
		addr := []string{"(R9)", "(R9)(R8*1)", "(R9)(R8*2)", "(R9)(DI*1)"}[t]
		fmt.Fprintf(w, "\tVMOVSS X%d, %s\n", 4+t, addr)
	}
	fmt.Fprintf(w, "\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

// q6kTile emits q6kRows<T>VNNI, q4kTile's counterpart for Q6_K: per
// super-block the sixteen int8 scales are widened once and spread by
// VPERMW into eight vectors (Y24–Y31, two 16-quant groups each); the
// 6-bit quants are assembled once per 32 for all T tokens; the −32 offset
// comes from the block sums, as in dotQ6K.
func q6kTile(w *bytes.Buffer, T int) {
	name := fmt.Sprintf("q6kRows%dVNNI", T)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *byte, nb int, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+40(FP), R9
	MOVQ ostride+48(FP), R8
	LEAQ (R8)(R8*2), DI
	VMOVDQU nib<>(SB), Y14
	VMOVDQU m30<>(SB), Y13
`)
	for c := range 8 {
		fmt.Fprintf(w, "\tVMOVDQU64 q6kperm%d<>(SB), Y%d\n", c, 16+c)
	}
	fmt.Fprintf(w, "%srow:\n", name)
	for t := range T {
		fmt.Fprintf(w, "\tVXORPS X%[1]d, X%[1]d, X%[1]d\n", 4+t)
	}
	fmt.Fprintf(w, "\tMOVQ SI, R12\n\tMOVQ a+24(FP), BX\n\tMOVQ nb+32(FP), R13\n%sblock:\n\tVPMOVSXBW 192(R12), Y15\n", name)
	for c := range 8 {
		fmt.Fprintf(w, "\tVPERMW Y15, Y%d, Y%d\n", 16+c, 24+c)
	}
	accs := T
	if T == 1 {
		accs = 4
	}
	for t := range accs {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", t)
	}
	for n := range 2 {
		fmt.Fprintf(w, "\tVMOVDQU %d(R12), Y9\n\tVMOVDQU %d(R12), Y10\n\tVMOVDQU %d(R12), Y11\n", 64*n, 64*n+32, 128+32*n)
		for k := range 4 {
			src := []string{"Y9", "Y10", "Y9", "Y10"}[k]
			if k < 2 {
				fmt.Fprintf(w, "\tVPAND Y14, %s, Y12\n", src)
			} else {
				fmt.Fprintf(w, "\tVPSRLW $4, %s, Y12\n\tVPAND Y14, Y12, Y12\n", src)
			}
			switch k {
			case 0:
				w.WriteString("\tVPSLLW $4, Y11, Y8\n")
			case 1:
				w.WriteString("\tVPSLLW $2, Y11, Y8\n")
			case 2:
				w.WriteString("\tVMOVDQA Y11, Y8\n")
			case 3:
				w.WriteString("\tVPSRLW $2, Y11, Y8\n")
			}
			w.WriteString("\tVPAND Y13, Y8, Y8\n\tVPOR Y8, Y12, Y12\n")
			c := 4*n + k
			for t := range T {
				acc := t
				if T == 1 {
					acc = c % 4
				}
				fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y12, Y8\n\tVPDPWSSD Y%d, Y8, Y%d\n", 256*t+32*c, 24+c, acc)
			}
		}
	}
	if T == 1 {
		w.WriteString("\tVPADDD Y1, Y0, Y0\n\tVPADDD Y3, Y2, Y2\n\tVPADDD Y2, Y0, Y0\n")
	}
	fmt.Fprintf(w, "\tMOVWLZX 208(R12), AX\n\tVMOVD AX, X12\n\tVCVTPH2PS X12, X12\n")
	for t := range T {
		fmt.Fprintf(w, `	VPMADDWD %[2]d(BX), Y15, Y8
	VPSLLD $5, Y8, Y8
	VPSUBD Y8, Y%[1]d, Y%[1]d
	VEXTRACTI128 $1, Y%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPSHUFD $0x4E, X%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPSHUFD $0xB1, X%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VCVTDQ2PS X%[1]d, X%[1]d
	VMULSS %[3]d(BX), X12, X9
	VMULSS X9, X%[1]d, X%[1]d
	VADDSS X%[1]d, X%[4]d, X%[4]d
`, t, 256*T+4*T+32*t, 256*T+4*t, 4+t)
	}
	fmt.Fprintf(w, "\tADDQ $210, R12\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n", kTileBytes*T, name)
	for t := range T {
		addr := []string{"(R9)", "(R9)(R8*1)", "(R9)(R8*2)", "(R9)(DI*1)"}[t]
		fmt.Fprintf(w, "\tVMOVSS X%d, %s\n", 4+t, addr)
	}
	fmt.Fprintf(w, "\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

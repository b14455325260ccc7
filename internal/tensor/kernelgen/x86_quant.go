// Activation quantisers: Q8_0, Q8_K and the X8 records.

package main

import (
	"bytes"
	"fmt"
	"math"
)

// quantKernels emits quantQ8_0AVX2(x *float32, nb int, q *int8, d
// *float32): Q8_0 activation blocks as quantQ8_0Blocks makes them, with
// the same float operations (amax/127 rounded through fp16, 127/amax, the
// products rounded half to even), so the same bits.
func quantKernels(w *bytes.Buffer) {
	data(w, "qabs", rep(0x7fffffff7fffffff))
	dataF32(w, "q127", 127)
	dataF32(w, "fexpinf", float32(math.Inf(1)))
	data(w, "qperm", [4]uint64{4 << 32, 5<<32 | 1, 6<<32 | 2, 7<<32 | 3})
	w.WriteString(`// func quantQ8_0AVX2(x *float32, nb int, q *int8, d *float32)
// (127/amax is taken as 0 where it is not finite: amax 0, or so small that
// the fp16 scale is 0 anyway.)
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	VMOVUPS qabs<>(SB), Y15
	VMOVUPS q127<>(SB), Y14
	VMOVDQU qperm<>(SB), Y13
	VBROADCASTSS fexpinf<>(SB), Y12
quantq80:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VPERM2F128 $1, Y4, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VPERMILPS $0x4E, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VPERMILPS $0xB1, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VDIVSS X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, (DX)
	VDIVPS Y4, Y14, Y5
	VCMPPS $1, Y12, Y5, Y6
	VANDPS Y6, Y5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ quantq80
	VZEROUPPER
	RET

`)
}

// x8RecordsKernel emits x8RecordsAVX2(q *int8, d *float32, nb int, off
// int32, o *byte, ostride int): the X8 record of each Q8_0 block (its 32
// quants, −off·Σq as int32, d) at o, ostride bytes apart.
func x8RecordsKernel(w *bytes.Buffer) {
	w.WriteString(`// func x8RecordsAVX2(q *int8, d *float32, nb int, off int32, o *byte, ostride int)
TEXT ·x8RecordsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ nb+16(FP), CX
	MOVL off+24(FP), R9
	NEGL R9
	MOVQ o+32(FP), DI
	MOVQ ostride+40(FP), R8
	VMOVDQU ones8<>(SB), Y14
	VMOVDQU ones16<>(SB), Y12
x8rec:
	VMOVDQU (SI), Y0
	VMOVDQU Y0, (DI)
	VPMADDUBSW Y0, Y14, Y0
	VPMADDWD Y12, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	IMULL R9, AX
	MOVL AX, 32(DI)
	MOVL (DX), AX
	MOVL AX, 36(DI)
	ADDQ $32, SI
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JNZ x8rec
	VZEROUPPER
	RET

`)
}

// quantQ8KKernel emits quantQ8_KAVX2(x *float32, nb int, q *int8, d
// *float32, bs *int16) int: Q8_K activation blocks of 256 as
// quantQ8_KBlocks makes them (the scale −127/max from the first element
// of largest magnitude, the products rounded half to even, d = 1/scale,
// the sums of each 16 quants), so the same bits. It returns the blocks
// done, stopping before one whose scale is not finite (a tiny max) or
// that holds a NaN or infinity: Go does that one. In decode the Go quantiser took
// 5 % of a TinyLlama Q4_K_M step, with the other thread waiting.
func quantQ8KKernel(w *bytes.Buffer) {
	dataF32(w, "qm127", -127)
	dataF32(w, "fone", 1)
	data(w, "ones8", rep(0x0101010101010101))
	data(w, "c80", rep(0x8080808080808080))
	w.WriteString(`// func quantQ8_KAVX2(x *float32, nb int, q *int8, d *float32, bs *int16) int
TEXT ·quantQ8_KAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bs+32(FP), R8
	XORQ AX, AX
	VMOVUPS qabs<>(SB), Y15
	VMOVDQU ones8<>(SB), Y14
	VMOVDQU qperm<>(SB), Y13
	VMOVDQU ones16<>(SB), Y12
q8kblock:
`)
	for i := range 4 {
		fmt.Fprintf(w, "\tVANDPS %d(SI), Y15, Y%d\n", 32*i, i)
	}
	for i := 4; i < 32; i++ {
		fmt.Fprintf(w, "\tVANDPS %d(SI), Y15, Y4\n\tVMAXPS Y4, Y%d, Y%[2]d\n", 32*i, i%4)
	}
	w.WriteString(`	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VPERM2F128 $1, Y0, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPERMILPS $0x4E, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPERMILPS $0xB1, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPTEST Y0, Y0
	JZ q8kzero
	XORQ BX, BX
q8kfind:
	VANDPS (SI)(BX*1), Y15, Y1
	VCMPPS $0, Y0, Y1, Y1
	VMOVMSKPS Y1, R9
	TESTL R9, R9
	JNZ q8kfound
	ADDQ $32, BX
	CMPQ BX, $1024
	JNE q8kfind
	JMP q8kdone
q8kfound:
	BSFL R9, R9
	LEAQ (BX)(R9*4), BX
	VMOVSS (SI)(BX*1), X1
	VMOVSS qm127<>(SB), X2
	VDIVSS X1, X2, X2
	VMOVD X2, R10
	ANDL $0x7fffffff, R10
	CMPL R10, $0x7f800000
	JAE q8kdone
	VMOVSS fone<>(SB), X3
	VDIVSS X2, X3, X3
	VMOVSS X3, (DX)
	VBROADCASTSS X2, Y2
	VPXOR Y0, Y0, Y0
`)
	for c := range 8 {
		for i := range 4 {
			fmt.Fprintf(w, "\tVMULPS %d(SI), Y2, Y%d\n\tVCVTPS2DQ Y%[2]d, Y%[2]d\n", 128*c+32*i, 4+i)
		}
		// −128 is a NaN product: Go does such a block (Y0 collects them).
		fmt.Fprintf(w, "\tVPACKSSDW Y5, Y4, Y4\n\tVPACKSSDW Y7, Y6, Y6\n\tVPACKSSWB Y6, Y4, Y4\n\tVPERMD Y4, Y13, Y4\n\tVMOVDQU Y4, %d(DI)\n\tVPCMPEQB c80<>(SB), Y4, Y5\n\tVPOR Y5, Y0, Y0\n", 32*c)
		// The sums of four quants, 8 a chunk: groups 2c (low lane) and 2c+1.
		fmt.Fprintf(w, "\tVPMADDUBSW Y4, Y14, Y4\n\tVPMADDWD Y12, Y4, Y%d\n", 8+c%4)
		if c%4 == 3 {
			// Lanes of groups (0 2 4 6 | 1 3 5 7) of these four chunks.
			fmt.Fprintf(w, "\tVPHADDD Y9, Y8, Y8\n\tVPHADDD Y11, Y10, Y10\n\tVPHADDD Y10, Y8, Y%d\n", 1+2*(c/4))
		}
	}
	w.WriteString(`	VPTEST Y0, Y0
	JNZ q8kdone
	VPACKSSDW Y3, Y1, Y1
	VEXTRACTI128 $1, Y1, X3
	VPUNPCKLWD X3, X1, X4
	VPUNPCKHWD X3, X1, X5
	VMOVDQU X4, (R8)
	VMOVDQU X5, 16(R8)
q8knext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	INCQ AX
	DECQ CX
	JNZ q8kblock
q8kdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET
q8kzero:
	VPXOR Y1, Y1, Y1
	MOVL $0, (DX)
	VMOVDQU Y1, (R8)
`)
	for c := range 8 {
		fmt.Fprintf(w, "\tVMOVDQU Y1, %d(DI)\n", 32*c)
	}
	w.WriteString("\tJMP q8knext\n\n")
}

// exp and SiLU over eight floats at a time.

package main

import (
	"bytes"
	"fmt"
	"math"
)

// expKernels emits expShiftAVX2 and siluMulAVX2 over 8 floats at a time,
// Expf's operations in Expf's order (see expf.go), constants broadcast
// from exp<>.
func expKernels(w *bytes.Buffer) {
	consts := []float32{-87, 88, 1.44269504088896341, 0.693359375, -2.12194440e-4, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1, 1}
	for i, c := range consts {
		fmt.Fprintf(w, "DATA expc<>+%d(SB)/4, $0x%08x\n", 4*i, math.Float32bits(c))
	}
	fmt.Fprintf(w, "DATA expc<>+%d(SB)/4, $127\nGLOBL expc<>(SB), RODATA|NOPTR, $%d\n\n", 4*len(consts), 4*len(consts)+4)
	// exp of Y0 into Y0; uses Y1–Y4; Y8 = -87, Y9 = 88, Y10 log2e, Y11 C1,
	// Y12 C2, Y13 1, Y14 127 (int), Y15 zero.
	exp := `	VCMPPS $0x1d, Y8, Y0, Y5
	VMINPS Y9, Y0, Y0
	VMULPS Y10, Y0, Y1
	VROUNDPS $0, Y1, Y1
	VMULPS Y11, Y1, Y2
	VSUBPS Y2, Y0, Y0
	VMULPS Y12, Y1, Y2
	VSUBPS Y2, Y0, Y0
	VMULPS Y0, Y0, Y3
	VBROADCASTSS expc<>+20(SB), Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+24(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+28(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+32(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+36(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+40(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS Y0, Y4, Y4
	VADDPS Y13, Y4, Y4
	VCVTPS2DQ Y1, Y1
	VPADDD Y14, Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y4, Y0
	VANDPS Y5, Y0, Y0
`
	setup := `	VBROADCASTSS expc<>+0(SB), Y8
	VBROADCASTSS expc<>+4(SB), Y9
	VBROADCASTSS expc<>+8(SB), Y10
	VBROADCASTSS expc<>+12(SB), Y11
	VBROADCASTSS expc<>+16(SB), Y12
	VBROADCASTSS expc<>+44(SB), Y13
	VPBROADCASTD expc<>+48(SB), Y14
`
	fmt.Fprintf(w, `// func expShiftAVX2(w *float32, n int, shift, scale float32)
// w[i] = exp((w[i]-shift)·scale), n a positive multiple of 8.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VBROADCASTSS shift+16(FP), Y6
	VBROADCASTSS scale+20(FP), Y7
%sexpshift:
	VMOVUPS (SI), Y0
	VSUBPS Y6, Y0, Y0
	VMULPS Y7, Y0, Y0
%s	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ expshift
	VZEROUPPER
	RET

// func siluMulAVX2(x, u *float32, n int)
// g[i] = g[i]/(1+exp(-g[i]))·u[i], n a positive multiple of 8.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ u+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VXORPS Y15, Y15, Y15
%ssilu:
	VMOVUPS (SI), Y6
	VSUBPS Y6, Y15, Y0
%s	VADDPS Y13, Y0, Y0
	VDIVPS Y0, Y6, Y6
	VMULPS (DI), Y6, Y6
	VMOVUPS Y6, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ silu
	VZEROUPPER
	RET

`, setup, exp, setup, exp)
}

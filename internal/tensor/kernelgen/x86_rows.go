// Row kernels over weights in their GGUF layout (Q8_0, Q4_0, Q5_0 against
// Q8_0 activations, one token or four), and the read-bandwidth probe.

package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

func constants(w *bytes.Buffer, f format, s isa) {
	fmt.Fprintf(w, "\tVMOVDQU ones16<>(SB), Y15\n")
	switch {
	case f.name == "q80" && s.vnni:
		fmt.Fprintf(w, "\tVMOVDQU high80<>(SB), Y13\n")
	case f.name == "q40":
		fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU eights<>(SB), Y13\n")
	case f.name == "q50":
		if s.vnni {
			fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU bit10<>(SB), Y13\n")
		} else {
			fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU highf0<>(SB), Y13\n")
		}
		fmt.Fprintf(w, "\tVMOVDQU bitshuf<>(SB), Y12\n\tVMOVDQU bitmask<>(SB), Y11\n\tVPCMPEQB Y10, Y10, Y10\n")
	}
}

// reduce sums the eight lanes of acc into the low float of acc's X
// register in the fixed order ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), the
// order the pure-Go kernels reproduce.
func reduce(w *bytes.Buffer, acc string) {
	x := "X" + acc[1:]
	fmt.Fprintf(w, "\tVEXTRACTF128 $1, %s, X4\n\tVADDPS X4, %s, %s\n", acc, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0x4E, %s, X4\n\tVADDPS X4, %s, %s\n", x, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0xB1, %s, X4\n\tVADDSS X4, %s, %s\n", x, x, x)
}

// rows1 emits func <f><isa>Rows1(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32):
// out[r] = Σ_b dw(r,b)·d[b]·Σ_j w(r,b,j)·a[32b+j] for r < nrows. The
// loop takes two blocks per pass (then an odd one): decode is bound by
// instructions per block, not by the order of the adds, which stays
// block by block.
func rows1(w *bytes.Buffer, f format, s isa) {
	name := fmt.Sprintf("%sRows1%s", f.name, s.name)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ a+24(FP), DI
	MOVQ d+32(FP), R8
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), R9
`)
	constants(w, f, s)
	fmt.Fprintf(w, "%[1]srow:\n\tVXORPS Y0, Y0, Y0\n\tMOVQ SI, R12\n\tMOVQ DI, BX\n\tMOVQ R8, DX\n\tMOVQ CX, R13\n\tSHRQ $1, R13\n\tJZ %[1]sodd\n%[1]sblock:\n", name)
	block := func(i int) {
		var dec bytes.Buffer
		s.decode(&dec, f)
		w.WriteString(shiftR12(dec.String(), i*f.bytes))
		fmt.Fprintf(w, "\tVPBROADCASTW %d(R12), X2\n\tVCVTPH2PS X2, Y2\n", i*f.bytes)
		if s.vnni {
			fmt.Fprintf(w, "\tVMULPS.BCST %d(DX), Y2, Y2\n", 4*i)
		} else {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(DX), Y9\n\tVMULPS Y9, Y2, Y2\n", 4*i)
		}
		s.dot(w, fmt.Sprintf("%d(BX)", i*s.actStep()))
		w.WriteString("\tVCVTDQ2PS Y4, Y4\n\tVMULPS Y2, Y4, Y4\n\tVADDPS Y4, Y0, Y0\n")
	}
	block(0)
	block(1)
	fmt.Fprintf(w, "\tADDQ $%d, R12\n\tADDQ $%d, BX\n\tADDQ $8, DX\n\tDECQ R13\n\tJNZ %sblock\n", 2*f.bytes, 2*s.actStep(), name)
	fmt.Fprintf(w, "%[1]sodd:\n\tTESTQ $1, CX\n\tJZ %[1]sdone\n", name)
	block(0)
	fmt.Fprintf(w, "%sdone:\n", name)
	reduce(w, "Y0")
	fmt.Fprintf(w, "\tVMOVSS X0, (R9)\n\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

// shiftAddr adds off to the displacement of a memory operand such as
// "(BX)", "64(BX)" or "(BX)(DI*1)".
func shiftAddr(addr string, off int) string {
	i := strings.Index(addr, "(")
	d, _ := strconv.Atoi(addr[:i])
	return fmt.Sprintf("%d%s", d+off, addr[i:])
}

var r12Addr = regexp.MustCompile(`(-?[0-9]*)\(R12\)`)

// shiftR12 adds off to every displacement from R12 in code.
func shiftR12(code string, off int) string {
	return r12Addr.ReplaceAllStringFunc(code, func(m string) string {
		d, _ := strconv.Atoi(r12Addr.FindStringSubmatch(m)[1])
		return fmt.Sprintf("%d(R12)", d+off)
	})
}

// rows4 emits the register tile over four tokens: each weight block is
// decoded once and multiplied into four activation rows (a + t·astride,
// scales d + t·dstride, outputs out + t·ostride, strides in bytes).
func rows4(w *bytes.Buffer, f format, s isa) {
	fmt.Fprintf(w, "// func %sRows4%s(w *byte, rowBytes, nrows int, a *int8, astride int, d *float32, dstride, nb int, out *float32, ostride int)\n", f.name, s.name)
	fmt.Fprintf(w, "TEXT ·%sRows4%s(SB), NOSPLIT, $0-80\n", f.name, s.name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ astride+32(FP), DI
	LEAQ (DI)(DI*2), R8
	MOVQ dstride+48(FP), CX
	LEAQ (CX)(CX*2), R14
	MOVQ out+64(FP), R9
`)
	constants(w, f, s)
	fmt.Fprintf(w, `row4:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+40(FP), DX
	MOVQ nb+56(FP), R13
block4:
`)
	s.decode(w, f)
	fmt.Fprintf(w, "\tMOVWLZX (R12), AX\n\tVMOVD AX, X2\n\tVCVTPH2PS X2, X2\n\tVBROADCASTSS X2, Y2\n")
	for t, acc := range []string{"Y0", "Y5", "Y6", "Y7"} {
		act := []string{"(BX)", "(BX)(DI*1)", "(BX)(DI*2)", "(BX)(R8*1)"}[t]
		sc := []string{"(DX)", "(DX)(CX*1)", "(DX)(CX*2)", "(DX)(R14*1)"}[t]
		s.dot(w, act)
		w.WriteString("\tVCVTDQ2PS Y4, Y4\n")
		if s.vnni {
			fmt.Fprintf(w, "\tVMULPS.BCST %s, Y2, Y9\n", sc)
		} else {
			fmt.Fprintf(w, "\tVBROADCASTSS %s, Y9\n\tVMULPS Y2, Y9, Y9\n", sc)
		}
		fmt.Fprintf(w, "\tVMULPS Y9, Y4, Y4\n\tVADDPS Y4, %s, %s\n", acc, acc)
	}
	fmt.Fprintf(w, "\tADDQ $%d, R12\n\tADDQ $%d, BX\n\tADDQ $4, DX\n\tDECQ R13\n\tJNZ block4\n", f.bytes, s.actStep())
	for _, acc := range []string{"Y0", "Y5", "Y6", "Y7"} {
		reduce(w, acc)
	}
	fmt.Fprintf(w, `	MOVQ ostride+72(FP), AX
	LEAQ (AX)(AX*2), BX
	VMOVSS X0, (R9)
	VMOVSS X5, (R9)(AX*1)
	VMOVSS X6, (R9)(AX*2)
	VMOVSS X7, (R9)(BX*1)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ row4
	VZEROUPPER
	RET

`)
}

// readKernel: the read-bandwidth probe (ReadRate). It sums eight lanes
// of n bytes each (n a positive multiple of 32), lane bytes apart, as
// 64-bit words, so that nothing but the loads limits it, and in eight
// interleaved streams, as the float decode kernels (floatLanes) read their
// rows: one stream per thread reads about half as fast here
// (BenchmarkReadStreams), so it is no ceiling for them.
const readKernel = `// func readSumAVX2(p *byte, lane, n int) uint64
TEXT ·readSumAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ lane+8(FP), R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R13
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
readloop:
	VPADDQ (SI), Y0, Y0
	VPADDQ (SI)(R8*1), Y1, Y1
	VPADDQ (SI)(R8*2), Y2, Y2
	VPADDQ (SI)(R9*1), Y3, Y3
	VPADDQ (R13), Y0, Y0
	VPADDQ (R13)(R8*1), Y1, Y1
	VPADDQ (R13)(R8*2), Y2, Y2
	VPADDQ (R13)(R9*1), Y3, Y3
	ADDQ $32, SI
	ADDQ $32, R13
	DECQ CX
	JNZ readloop
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, ret+24(FP)
	VZEROUPPER
	RET

`

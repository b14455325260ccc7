// Tiled attention (flash) over F32 and F16 keys and values.

package main

import (
	"bytes"
	"fmt"
	"math"
)

// flashKernels emits flashF16AVX2 and flashF32AVX2(q, o, m, l *float32,
// lim *int32, rows, d int, k unsafe.Pointer, kstride int, v
// unsafe.Pointer, vstride, nk int, pk, pv unsafe.Pointer): one step of tiled attention with an
// online softmax (flash.go) for rows query rows (d floats each, d a
// multiple of 16) against a tile of 16 keys: k holds the tile transposed
// (dimension c's 16 keys at k + c·kstride bytes), v the values (key j's d
// values at v + j·vstride bytes), in fp16 or float32. Row r sees the
// first lim[r] keys; only the first nk values are read. Rows go four at a
// time (then 3, 2 or 1) with the same instructions per row whatever the
// tile, so that a row's result does not depend on the rows around it.
// While each row tile's scores are computed, the next tile (pk, pv: its
// keys and values, laid out alike) is prefetched, a line of each per
// dimension: a KV-cache block spans a page or two, and the hardware
// prefetchers stop at pages.
//
// Registers: Y0–Y7 the scores (then probabilities, then outputs) of the
// row tile, two per row; Y8–Y15 keys, values and temporaries. SI, DI the
// tile's q and o rows (R12 bytes apart, R13 = 3·R12), R11 the first row.
func flashKernels(w *bytes.Buffer) {
	dataF32(w, "fneginf", float32(math.Inf(-1)))
	data(w, "fiota0", [4]uint64{1 << 32, 3<<32 | 2, 5<<32 | 4, 7<<32 | 6})
	data(w, "fiota8", [4]uint64{9<<32 | 8, 11<<32 | 10, 13<<32 | 12, 15<<32 | 14})
	for i, c := range []float32{-87, 88, 1.44269504088896341, 0.693359375, -2.12194440e-4, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1, 1} {
		dataF32(w, fmt.Sprintf("fexp%d", i), c)
	}
	data(w, "fexp127", rep(0x0000007f0000007f))
	for _, f16 := range []bool{true, false} {
		flashKernel(w, f16)
	}
}

func dataF32(w *bytes.Buffer, name string, v float32) {
	b := uint64(math.Float32bits(v))
	data(w, name, rep(b<<32|b))
}

// flashExp replaces x by e^x (Cephes' expf as in expf.go, with FMAs; 0
// below -87, so 0 for -∞) using the temporaries t.
func flashExp(w *bytes.Buffer, x string, t [4]string) {
	fmt.Fprintf(w, "\tVCMPPS $0x1d, fexp0<>(SB), %[1]s, %[2]s\n\tVMINPS fexp1<>(SB), %[1]s, %[1]s\n", x, t[0])
	fmt.Fprintf(w, "\tVMULPS fexp2<>(SB), %[1]s, %[2]s\n\tVROUNDPS $0, %[2]s, %[2]s\n", x, t[1])
	fmt.Fprintf(w, "\tVFNMADD231PS fexp3<>(SB), %[2]s, %[1]s\n\tVFNMADD231PS fexp4<>(SB), %[2]s, %[1]s\n", x, t[1])
	fmt.Fprintf(w, "\tVMULPS %[1]s, %[1]s, %[2]s\n\tVMOVUPS fexp5<>(SB), %[3]s\n", x, t[2], t[3])
	for i := 6; i <= 10; i++ {
		fmt.Fprintf(w, "\tVFMADD213PS fexp%d<>(SB), %s, %s\n", i, x, t[3])
	}
	fmt.Fprintf(w, "\tVFMADD213PS %[1]s, %[2]s, %[3]s\n\tVADDPS fexp11<>(SB), %[3]s, %[3]s\n", x, t[2], t[3])
	fmt.Fprintf(w, "\tVCVTPS2DQ %[1]s, %[1]s\n\tVPADDD fexp127<>(SB), %[1]s, %[1]s\n\tVPSLLD $23, %[1]s, %[1]s\n", t[1])
	fmt.Fprintf(w, "\tVMULPS %[1]s, %[2]s, %[3]s\n\tVANDPS %[4]s, %[3]s, %[3]s\n", t[1], t[3], x, t[0])
}

// Stack frame of the flash kernels: the row tile's probabilities (4 rows
// of 16), m_old − m_new per row, then e^that.
const (
	flashP      = 0
	flashDelta  = 256
	flashAlpha  = 272
	flashFrame  = 288
	flashArgLen = 112
)

func flashKernel(w *bytes.Buffer, f16 bool) {
	name, load, half, vstep := "flashF32AVX2", "VMOVUPS", 32, 64
	if f16 {
		name, load, half, vstep = "flashF16AVX2", "VCVTPH2PS", 16, 32
	}
	fmt.Fprintf(w, "// func %s(q, o, m, l *float32, lim *int32, rows, d int, k unsafe.Pointer, kstride int, v unsafe.Pointer, vstride, nk int, pk, pv unsafe.Pointer)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $%d-%d\n", name, flashFrame, flashArgLen)
	fmt.Fprintf(w, `	MOVQ q+0(FP), SI
	MOVQ o+8(FP), DI
	MOVQ d+48(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	XORQ R11, R11
%[1]stile:
	MOVQ rows+40(FP), AX
	SUBQ R11, AX
	CMPQ AX, $4
	JGE %[1]sr4
	CMPQ AX, $3
	JEQ %[1]sr3
	CMPQ AX, $2
	JEQ %[1]sr2
	CMPQ AX, $1
	JEQ %[1]sr1
	JMP %[1]sdone
`, name)
	rowAddr := func(base string, off, r int) string {
		idx := []string{"", "(R12*1)", "(R12*2)", "(R13*1)"}[r]
		return fmt.Sprintf("%d(%s)%s", off, base, idx)
	}
	for _, mr := range []int{4, 3, 2, 1} {
		lbl := fmt.Sprintf("%sr%d", name, mr)
		fmt.Fprintf(w, "%s:\n", lbl)
		// Scores: S[r][j] = Σ_c q[r][c]·k[c][j].
		for i := range 2 * mr {
			fmt.Fprintf(w, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", i)
		}
		fmt.Fprintf(w, "\tMOVQ k+56(FP), AX\n\tMOVQ kstride+64(FP), R14\n\tMOVQ SI, BX\n\tMOVQ d+48(FP), CX\n\tMOVQ pk+96(FP), R9\n\tMOVQ pv+104(FP), R10\n%sqk:\n", lbl)
		fmt.Fprintf(w, "\t%[1]s (AX), Y8\n\t%[1]s %[2]d(AX), Y9\n", load, half)
		fmt.Fprintf(w, "\tPREFETCHT0 (R9)\n\tPREFETCHT0 (R10)\n\tADDQ R14, R9\n\tADDQ $%d, R10\n", 2*half)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %s, Y10\n\tVFMADD231PS Y8, Y10, Y%d\n\tVFMADD231PS Y9, Y10, Y%d\n", rowAddr("BX", 0, r), 2*r, 2*r+1)
		}
		fmt.Fprintf(w, "\tADDQ R14, AX\n\tADDQ $4, BX\n\tDECQ CX\n\tJNZ %sqk\n", lbl)
		// Mask keys a row may not see, new running maxima, shift.
		w.WriteString("\tMOVQ lim+32(FP), AX\n\tMOVQ m+16(FP), BX\n\tVBROADCASTSS fneginf<>(SB), Y12\n")
		for r := range mr {
			fmt.Fprintf(w, "\tVPBROADCASTD %d(AX)(R11*4), Y10\n", 4*r)
			for h := range 2 {
				fmt.Fprintf(w, "\tVPCMPGTD fiota%d<>(SB), Y10, Y11\n\tVBLENDVPS Y11, Y%[2]d, Y12, Y%[2]d\n", 8*h, 2*r+h)
			}
			fmt.Fprintf(w, "\tVMAXPS Y%d, Y%d, Y8\n", 2*r+1, 2*r)
			w.WriteString("\tVPERM2F128 $1, Y8, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n\tVPERMILPS $0x4E, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n\tVPERMILPS $0xB1, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n")
			fmt.Fprintf(w, "\tVBROADCASTSS %[1]d(BX)(R11*4), Y9\n\tVMAXPS Y9, Y8, Y8\n\tVSUBSS X8, X9, X9\n\tVMOVSS X9, %[2]d(SP)\n\tVMOVSS X8, %[1]d(BX)(R11*4)\n", 4*r, flashDelta+4*r)
			fmt.Fprintf(w, "\tVSUBPS Y8, Y%[1]d, Y%[1]d\n\tVSUBPS Y8, Y%[2]d, Y%[2]d\n", 2*r, 2*r+1)
		}
		// Probabilities, the rescaling factors, running sums.
		tmp := [4]string{"Y8", "Y9", "Y10", "Y11"}
		for i := range 2 * mr {
			flashExp(w, fmt.Sprintf("Y%d", i), tmp)
		}
		fmt.Fprintf(w, "\tVMOVUPS %d(SP), X12\n", flashDelta)
		flashExp(w, "Y12", tmp)
		fmt.Fprintf(w, "\tVMOVUPS X12, %d(SP)\n\tMOVQ l+24(FP), BX\n", flashAlpha)
		for r := range mr {
			fmt.Fprintf(w, "\tVMOVUPS Y%d, %d(SP)\n\tVMOVUPS Y%d, %d(SP)\n", 2*r, flashP+64*r, 2*r+1, flashP+64*r+32)
			fmt.Fprintf(w, "\tVADDPS Y%d, Y%d, Y8\n", 2*r+1, 2*r)
			w.WriteString("\tVEXTRACTF128 $1, Y8, X9\n\tVADDPS X9, X8, X8\n\tVPSHUFD $0x4E, X8, X9\n\tVADDPS X9, X8, X8\n\tVPSHUFD $0xB1, X8, X9\n\tVADDSS X9, X8, X8\n")
			fmt.Fprintf(w, "\tVMOVSS %[1]d(BX)(R11*4), X9\n\tVMULSS %[2]d(SP), X9, X9\n\tVADDSS X8, X9, X9\n\tVMOVSS X9, %[1]d(BX)(R11*4)\n", 4*r, flashAlpha+4*r)
		}
		// Outputs, 16 floats of each row at a time: o = o·α + Σ_j p_j·v_j.
		fmt.Fprintf(w, "\tMOVQ v+72(FP), AX\n\tMOVQ vstride+80(FP), R8\n\tMOVQ DI, BX\n\tMOVQ d+48(FP), CX\n\tSHRQ $4, CX\n%spv:\n", lbl)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(SP), Y10\n\tVMULPS %s, Y10, Y%d\n\tVMULPS %s, Y10, Y%d\n", flashAlpha+4*r, rowAddr("BX", 0, r), 2*r, rowAddr("BX", 32, r), 2*r+1)
		}
		fmt.Fprintf(w, "\tMOVQ AX, DX\n\tXORQ R14, R14\n%spvj:\n\t%[2]s (DX), Y8\n\t%[2]s %[3]d(DX), Y9\n", lbl, load, half)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(SP)(R14*4), Y10\n\tVFMADD231PS Y8, Y10, Y%d\n\tVFMADD231PS Y9, Y10, Y%d\n", flashP+64*r, 2*r, 2*r+1)
		}
		fmt.Fprintf(w, "\tADDQ R8, DX\n\tINCQ R14\n\tCMPQ R14, nk+88(FP)\n\tJLT %spvj\n", lbl)
		for r := range mr {
			fmt.Fprintf(w, "\tVMOVUPS Y%d, %s\n\tVMOVUPS Y%d, %s\n", 2*r, rowAddr("BX", 0, r), 2*r+1, rowAddr("BX", 32, r))
		}
		fmt.Fprintf(w, "\tADDQ $%d, AX\n\tADDQ $64, BX\n\tDECQ CX\n\tJNZ %spv\n", vstep, lbl)
		if mr == 4 {
			fmt.Fprintf(w, "\tADDQ $4, R11\n\tLEAQ (SI)(R12*4), SI\n\tLEAQ (DI)(R12*4), DI\n\tJMP %stile\n", name)
		} else {
			fmt.Fprintf(w, "\tJMP %sdone\n", name)
		}
	}
	fmt.Fprintf(w, "%sdone:\n\tVZEROUPPER\n\tRET\n\n", name)
}

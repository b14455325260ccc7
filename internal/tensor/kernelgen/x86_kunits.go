// The register sets and shared steps of the AVX2 kernels over the
// repacked K-quants (x86_kx8avx2.go).

package main

import (
	"bytes"
	"fmt"
)

// kUnits are the register sets of a K-quant AVX2 kernel: T tokens of one
// run of groups (S = 1), or one token of S runs of groups read at once
// (T = 1; the streams of qx8AVX2S). Tokens share each decoded weight
// vector; streams share each broadcast activation.
type kUnits struct{ T, S int }

func (u kUnits) n() int { return max(u.T, u.S) }

// name is the kernel's: q4kx8AVX2T4, q4kx8AVX2S.
func (u kUnits) name(f string) string {
	if u.S > 1 {
		return f + "x8AVX2S"
	}
	return fmt.Sprintf("%sx8AVX2T%d", f, u.T)
}

// w is unit i's weight address at off.
func (u kUnits) w(i, off int) string {
	if u.S > 1 {
		return streamAddr(i, off)
	}
	return fmt.Sprintf("%d(SI)", off)
}

// q, d and bs are unit i's activation quants (plus off), scale and block
// sums (plus off) in the KTile layout, from BX.
func (u kUnits) q(i, off int) string { return fmt.Sprintf("%d(BX)", 256*u.tok(i)+off) }
func (u kUnits) d(i int) string      { return fmt.Sprintf("%d(BX)", 256*u.T+4*u.tok(i)) }
func (u kUnits) bs(i, off int) string {
	return fmt.Sprintf("%d(BX)", 260*u.T+32*u.tok(i)+off)
}

func (u kUnits) tok(i int) int {
	if u.S > 1 {
		return 0
	}
	return i
}

// zero clears each unit's register base+i.
func (u kUnits) zero(w *bytes.Buffer, base int) {
	for i := range u.n() {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", base+i)
	}
}

// mulAdd adds, for each token, the VPMADDUBSW products of the weights that
// decode emits into Y8 (from the address function it is given; it may
// use Y11, never Y10) and the four activation bytes at qoff to the int16
// sums Y4+i.
func (u kUnits) mulAdd(w *bytes.Buffer, decode func(addr func(off int) string), qoff int) {
	decode(func(off int) string { return u.w(0, off) })
	for t := range u.T {
		fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n\tVPMADDUBSW Y10, Y8, Y10\n\tVPADDW Y10, Y%[2]d, Y%[2]d\n", u.q(t, qoff), 4+t)
	}
}

// scaled adds to each token's Y0+i its int16 sums Y4+i times the rows'
// scales that scales emits into Y9 (once for every token; nil: Y9 holds
// them already). The four-run kernels stage theirs (q45kx8AVX2S) or load
// them per run (q6kx8AVX2S).
func (u kUnits) scaled(w *bytes.Buffer, scales func(i int)) {
	for i := range u.n() {
		if scales != nil && i == 0 {
			scales(i)
		}
		fmt.Fprintf(w, "\tVPMADDWD Y9, Y%d, Y10\n\tVPADDD Y10, Y%[2]d, Y%[2]d\n", 4+i, i)
	}
}

// bsums adds to each unit's Y4+i the VPMADDWD of the rows' int16 pairs
// that pairs emits into Y9 (as scaled) with unit i's block sums at off.
func (u kUnits) bsums(w *bytes.Buffer, pairs func(i int), off int) {
	if u.S > 1 {
		fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n", u.bs(0, off))
		for i := range u.S {
			pairs(i)
			fmt.Fprintf(w, "\tVPMADDWD Y10, Y9, Y11\n\tVPADDD Y11, Y%[1]d, Y%[1]d\n", 4+i)
		}
		return
	}
	pairs(0)
	for t := range u.T {
		fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n\tVPMADDWD Y10, Y9, Y10\n\tVPADDD Y10, Y%[2]d, Y%[2]d\n", u.bs(t, off), 4+t)
	}
}

// floats ends a super-block for each unit: Y0+i holds the integer
// Σ sc·Σ q·a, Y4+i the minimums' Σ m·bsum (Q4_K, Q5_K: mins) or nothing;
// the rows' d (and dmin) are fp16 at offsets 0 (and 16) of the weights;
// the running sums wait on the stack at acc. The float steps are
// dotQ4K's and dotQ6K's.
func (u kUnits) floats(w *bytes.Buffer, acc int, mins bool) {
	for i := range u.n() {
		if i == 0 || u.S > 1 {
			fmt.Fprintf(w, "\tVCVTPH2PS %s, Y8\n", u.w(i, 0))
			if mins {
				fmt.Fprintf(w, "\tVCVTPH2PS %s, Y9\n", u.w(i, 16))
			}
		}
		fmt.Fprintf(w, "\tVBROADCASTSS %[2]s, Y10\n\tVMULPS Y10, Y8, Y11\n\tVCVTDQ2PS Y%[1]d, Y%[1]d\n\tVMULPS Y11, Y%[1]d, Y%[1]d\n\tVADDPS %[3]d(SP), Y%[1]d, Y%[1]d\n", i, u.d(i), acc+32*i)
		if mins {
			fmt.Fprintf(w, "\tVMULPS Y10, Y9, Y11\n\tVCVTDQ2PS Y%[1]d, Y%[1]d\n\tVMULPS Y11, Y%[1]d, Y%[1]d\n\tVSUBPS Y%[1]d, Y%[2]d, Y%[2]d\n", 4+i, i)
		}
		fmt.Fprintf(w, "\tVMOVUPS Y%d, %d(SP)\n", i, acc+32*i)
	}
}

// frame opens the kernel: arguments (streams take wstep, the bytes
// between runs, after ostride), the constants consts loads into
// registers (memory operands for them ran Q4_K at half the IPC that
// llvm-mca predicts), the group loop with the units' running sums
// cleared (on the stack at acc), the block label.
func (u kUnits) frame(w *bytes.Buffer, name, consts string, frame, acc int) {
	args, size := "", 48
	if u.S > 1 {
		args, size = ", wstep int", 56
	}
	// NOSPLIT frames may take 800 bytes in all: a bigger one (the staged
	// scales of q45kx8AVX2S) lets Go check the stack.
	flags := "NOSPLIT, "
	if frame > 640 {
		flags = ""
	}
	fmt.Fprintf(w, "// func %s(w *byte, groups, nb int, a *byte, out *float32, ostride int%s)\n", name, args)
	fmt.Fprintf(w, "TEXT ·%s(SB), %s$%d-%d\n", name, flags, frame, size)
	fmt.Fprintf(w, "\tMOVQ w+0(FP), SI\n\tMOVQ groups+8(FP), R11\n\tMOVQ out+32(FP), R9\n\tMOVQ ostride+40(FP), R8\n")
	if u.S > 1 {
		w.WriteString("\tMOVQ wstep+48(FP), R12\n\tLEAQ (R12)(R12*2), R14\n")
	}
	w.WriteString(consts)
	fmt.Fprintf(w, "%sgroup:\n\tVXORPS Y10, Y10, Y10\n", name)
	for i := range u.n() {
		fmt.Fprintf(w, "\tVMOVUPS Y10, %d(SP)\n", acc+32*i)
	}
	fmt.Fprintf(w, "\tMOVQ a+24(FP), BX\n\tMOVQ nb+16(FP), R13\n%sblock:\n", name)
}

// close advances to the next super-block and group and stores the units'
// results, ostride (R8) bytes apart.
func (u kUnits) close(w *bytes.Buffer, name string, blockBytes, acc int) {
	fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n\tMOVQ R9, AX\n", 8*blockBytes, kTileBytes*u.T, name)
	for i := range u.n() {
		fmt.Fprintf(w, "\tVMOVUPS %d(SP), Y10\n\tVMOVUPS Y10, (AX)\n", acc+32*i)
		if i < u.n()-1 {
			w.WriteString("\tADDQ R8, AX\n")
		}
	}
	fmt.Fprintf(w, "\tADDQ $32, R9\n\tDECQ R11\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// kScales stages, for each weight run of u, the rows' 6-bit scales and
// minimums of a Q4_K or Q5_K super-block (12 bytes a row at offset 32,
// four bytes to a row's dword) on the stack at sc + 128·run: sc0–3,
// sc4–7, m0–3, m4–7. kScaleOf leaves value j of the vectors at base
// (both words of each dword) in Y9. Both take kConsts in registers.
func kScales(w *bytes.Buffer, u kUnits, sc int) {
	for s := range u.S {
		fmt.Fprintf(w, `	VMOVDQU %s, Y8
	VMOVDQU %s, Y9
	VMOVDQU %s, Y10
	VPAND c3f<>(SB), Y8, Y11
	VMOVDQU Y11, %d(SP)
	VPAND c3f<>(SB), Y9, Y11
	VMOVDQU Y11, %d(SP)
	VPSRLD $6, Y8, Y8
	VPAND c03<>(SB), Y8, Y8
	VPSLLD $4, Y8, Y8
	VPAND Y12, Y10, Y11
	VPOR Y8, Y11, Y11
	VMOVDQU Y11, %d(SP)
	VPSRLD $6, Y9, Y9
	VPAND c03<>(SB), Y9, Y9
	VPSLLD $4, Y9, Y9
	VPSRLD $4, Y10, Y10
	VPAND Y12, Y10, Y10
	VPOR Y9, Y10, Y10
	VMOVDQU Y10, %d(SP)
`, u.w(s, 32), u.w(s, 64), u.w(s, 96), sc+128*s, sc+128*s+64, sc+128*s+32, sc+128*s+96)
	}
}

// kConsts loads the constants of the Q4_K and Q5_K kernels: Y12 nib, Y13
// cff, Y14 dup01, Y15 bit10.
const kConsts = "\tVMOVDQU nib<>(SB), Y12\n\tVMOVDQU cff<>(SB), Y13\n\tVMOVDQU dup01<>(SB), Y14\n\tVMOVDQU bit10<>(SB), Y15\n"

func kScaleOf(w *bytes.Buffer, base, j int) {
	fmt.Fprintf(w, "\tVMOVDQU %d(SP), Y9\n", base+32*(j/4))
	if s := 8 * (j % 4); s > 0 {
		fmt.Fprintf(w, "\tVPSRLD $%d, Y9, Y9\n", s)
	}
	w.WriteString("\tVPAND Y13, Y9, Y9\n\tVPSHUFB Y14, Y9, Y9\n")
}

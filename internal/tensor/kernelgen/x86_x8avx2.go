// AVX2 kernels over the repacked Q8_0 family.

package main

import (
	"bytes"
	"fmt"
)

// qx8AVX2 emits <f>x8AVX2T<T>(w *byte, groups, nb int, a *byte, astride
// int, out *float32, ostride int), the AVX2 kernels over the Q8_0 family
// repacked eight rows at a time (x8.go). For T tokens (a: token t's block
// b at a + b·astride + 40t, the X8 layout) each group of rows runs its
// blocks:
//
//   - Q8_0 keeps its quants signed: per four quants k, |w| once for the
//     tile, then per token VPSIGNB moves w's signs onto the broadcast
//     activations and VPMADDUBSW, VPMADDWD give the eight rows' sums (|w| ≤
//     128 and |a| ≤ 127 keep the pairs below 2^15).
//   - Q4_0 and Q5_0 multiply their unsigned quants (nibble, or nibble and
//     fifth bit: ≤ 15, ≤ 31) by the signed activations, the VPMADDUBSW
//     pairs summed in int16 over eight k's (Q4_0) or four (Q5_0), then
//     widened by VPMADDWD; the activations' −off·Σa makes the sums signed.
//
// The float steps per block and token are dotX8's. The tile's sums wait
// on the stack.
//
// Registers: Y0–Y3 int16 sums (Q4_0, Q5_0), Y4–Y7 the tokens' integer
// sums, Y8 the weights, Y9 |w| or the fifth bits, Y10 and Y11
// temporaries, Y12 the rows' scales, Y13–Y15 x8Consts.
func qx8AVX2(w *bytes.Buffer, f format, T int) {
	name := fmt.Sprintf("%sx8AVX2T%d", f.name, T)
	fmt.Fprintf(w, "// func %s(w *byte, groups, nb int, a *byte, astride int, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $%d-56\n", name, 32*T)
	fmt.Fprintf(w, "\tMOVQ w+0(FP), SI\n\tMOVQ groups+8(FP), R11\n\tMOVQ astride+32(FP), R10\n\tMOVQ out+40(FP), R9\n\tMOVQ ostride+48(FP), R8\n%s%sgroup:\n\tVXORPS Y10, Y10, Y10\n", x8Consts, name)
	for t := range T {
		fmt.Fprintf(w, "\tVMOVUPS Y10, %d(SP)\n", 32*t)
	}
	fmt.Fprintf(w, "\tMOVQ a+24(FP), BX\n\tMOVQ nb+16(FP), R13\n%sblock:\n\tVCVTPH2PS (SI), Y12\n", name)
	for t := range T {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", 4+t)
	}
	act := func(t, k int) string { return fmt.Sprintf("%d(BX)", x8ActBytes*t+4*k) }
	switch f.name {
	case "q80":
		for k := range 8 {
			fmt.Fprintf(w, "\tVMOVDQU %d(SI), Y8\n\tVPABSB Y8, Y9\n", 16+32*k)
			for t := range T {
				fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n\tVPSIGNB Y8, Y10, Y10\n\tVPMADDUBSW Y10, Y9, Y10\n\tVPMADDWD Y15, Y10, Y10\n\tVPADDD Y10, Y%[2]d, Y%[2]d\n", act(t, k), 4+t)
			}
		}
	default:
		quants, phase := 16, 8 // where the nibbles start; k's per int16 phase
		if f.name == "q50" {
			quants, phase = 48, 4
		}
		for k := range 8 {
			if k%phase == 0 {
				for t := range T {
					fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", t)
				}
			}
			g, hi := k%4, k/4
			fmt.Fprintf(w, "\tVMOVDQU %d(SI), Y8\n", quants+32*g)
			x8Nibbles(w, f, k, hi, "16(SI)", "Y9")
			for t := range T {
				fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n\tVPMADDUBSW Y10, Y8, Y10\n\tVPADDW Y10, Y%[2]d, Y%[2]d\n", act(t, k), t)
			}
			if k%phase == phase-1 {
				for t := range T {
					fmt.Fprintf(w, "\tVPMADDWD Y15, Y%d, Y10\n\tVPADDD Y10, Y%[2]d, Y%[2]d\n", t, 4+t)
				}
			}
		}
		for t := range T {
			fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), Y10\n\tVPADDD Y10, Y%[2]d, Y%[2]d\n", x8ActBytes*t+32, 4+t)
		}
	}
	for t := range T {
		fmt.Fprintf(w, "\tVCVTDQ2PS Y%[1]d, Y%[1]d\n\tVBROADCASTSS %[2]d(BX), Y10\n\tVMULPS Y12, Y10, Y10\n\tVMULPS Y10, Y%[1]d, Y%[1]d\n\tVADDPS %[3]d(SP), Y%[1]d, Y%[1]d\n\tVMOVUPS Y%[1]d, %[3]d(SP)\n", 4+t, x8ActBytes*t+36, 32*t)
	}
	fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ R10, BX\n\tDECQ R13\n\tJNZ %sblock\n\tMOVQ R9, AX\n", 8*f.bytes, name)
	for t := range T {
		fmt.Fprintf(w, "\tVMOVUPS %d(SP), Y10\n\tVMOVUPS Y10, (AX)\n", 32*t)
		if t < T-1 {
			w.WriteString("\tADDQ R8, AX\n")
		}
	}
	fmt.Fprintf(w, "\tADDQ $32, R9\n\tDECQ R11\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// x8Consts loads the constants of the AVX2 Q8_0-family kernels: Y13 nib,
// Y14 bit10, Y15 ones16.
const x8Consts = "\tVMOVDQU nib<>(SB), Y13\n\tVMOVDQU bit10<>(SB), Y14\n\tVMOVDQU ones16<>(SB), Y15\n"

// x8Nibbles turns the Q4_0 or Q5_0 weight bytes in Y8 into step k's
// quants (low nibbles, or high ones: hi): Q5_0's fifth bits come from the
// rows' qh dwords at qh, laid out as q5hPacked has them so that one shift by
// k−4 puts them at bit 4, through the temporary t.
func x8Nibbles(w *bytes.Buffer, f format, k, hi int, qh, t string) {
	if hi == 1 {
		w.WriteString("\tVPSRLW $4, Y8, Y8\n")
	}
	w.WriteString("\tVPAND Y13, Y8, Y8\n")
	if f.name != "q50" {
		return
	}
	code, _ := q5Shift(k, t, t)
	fmt.Fprintf(w, "\tVMOVDQU %s, %s\n%s\tVPAND Y14, %[2]s, %[2]s\n\tVPOR %[2]s, Y8, Y8\n", qh, t, code)
}

// q5Shift moves step k's fifth bits of Q5_0 or Q5_K (the qh dwords in
// src, laid out as q5hPacked has them) to bit 4 of each byte, with other
// bits around them for a mask to clear: the code, and the register that
// holds them (dst, or src itself for k = 4).
func q5Shift(k int, src, dst string) (string, string) {
	switch {
	case k > 4:
		return fmt.Sprintf("\tVPSRLD $%d, %s, %s\n", k-4, src, dst), dst
	case k < 4:
		return fmt.Sprintf("\tVPSLLD $%d, %s, %s\n", 4-k, src, dst), dst
	}
	return "", src
}

// x8Streams is how many runs of groups the one-token kernels of the
// repacked formats read at once (<f>x8AVX2S): a run of groups is one
// sequential stream, and one stream per thread read memory at half the
// rate of eight interleaved ones here (BenchmarkReadStreams).
const x8Streams = 4

// streamAddr is stream s's address at off from SI, streams R12 bytes
// apart (R14 = 3·R12).
func streamAddr(s, off int) string {
	return fmt.Sprintf("%d(SI)%s", off, [...]string{"", "(R12*1)", "(R12*2)", "(R14*1)"}[s])
}

// qx8AVX2S emits <f>x8AVX2S(w *byte, groups, nb int, a *byte, wstep int,
// out *float32, ostep int): qx8AVX2's one-token kernel over x8Streams
// runs of groups at once, run s at w + s·wstep writing out + s·ostep
// (bytes). The activation broadcasts serve every run; each run's sums
// are those of the one-token kernel.
//
// Registers: Y0–Y3 int16 sums (Q4_0, Q5_0), Y4–Y7 the runs' integer
// sums, Y8 the weights, Y9 |w| or the fifth bits, Y10 the broadcast
// activations (then their scale), Y11 a temporary, Y12 the rows' scales,
// Y13–Y15 x8Consts.
func qx8AVX2S(w *bytes.Buffer, f format) {
	const S = x8Streams
	name := fmt.Sprintf("%sx8AVX2S", f.name)
	fmt.Fprintf(w, "// func %s(w *byte, groups, nb int, a *byte, wstep int, out *float32, ostep int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $%d-56\n", name, 32*S)
	fmt.Fprintf(w, "\tMOVQ w+0(FP), SI\n\tMOVQ groups+8(FP), R11\n\tMOVQ wstep+32(FP), R12\n\tLEAQ (R12)(R12*2), R14\n\tMOVQ out+40(FP), R9\n\tMOVQ ostep+48(FP), R8\n%s%sgroup:\n\tVXORPS Y10, Y10, Y10\n", x8Consts, name)
	for s := range S {
		fmt.Fprintf(w, "\tVMOVUPS Y10, %d(SP)\n", 32*s)
	}
	fmt.Fprintf(w, "\tMOVQ a+24(FP), BX\n\tMOVQ nb+16(FP), R13\n%sblock:\n", name)
	for s := range S {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", 4+s)
	}
	switch f.name {
	case "q80":
		for k := range 8 {
			fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), Y10\n", 4*k)
			for s := range S {
				fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n\tVPABSB Y8, Y9\n\tVPSIGNB Y8, Y10, Y11\n\tVPMADDUBSW Y11, Y9, Y11\n\tVPMADDWD Y15, Y11, Y11\n\tVPADDD Y11, Y%d, Y%[2]d\n", streamAddr(s, 16+32*k), 4+s)
			}
		}
	default:
		quants, phase := 16, 8
		if f.name == "q50" {
			quants, phase = 48, 4
		}
		for k := range 8 {
			if k%phase == 0 {
				for s := range S {
					fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", s)
				}
			}
			g, hi := k%4, k/4
			fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), Y10\n", 4*k)
			for s := range S {
				fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n", streamAddr(s, quants+32*g))
				x8Nibbles(w, f, k, hi, streamAddr(s, 16), "Y9")
				fmt.Fprintf(w, "\tVPMADDUBSW Y10, Y8, Y11\n\tVPADDW Y11, Y%[1]d, Y%[1]d\n", s)
			}
			if k%phase == phase-1 {
				for s := range S {
					fmt.Fprintf(w, "\tVPMADDWD Y15, Y%d, Y11\n\tVPADDD Y11, Y%[2]d, Y%[2]d\n", s, 4+s)
				}
			}
		}
		w.WriteString("\tVPBROADCASTD 32(BX), Y10\n")
		for s := range S {
			fmt.Fprintf(w, "\tVPADDD Y10, Y%[1]d, Y%[1]d\n", 4+s)
		}
	}
	w.WriteString("\tVBROADCASTSS 36(BX), Y10\n")
	for s := range S {
		fmt.Fprintf(w, "\tVCVTPH2PS %s, Y12\n\tVCVTDQ2PS Y%[2]d, Y%[2]d\n\tVMULPS Y12, Y10, Y12\n\tVMULPS Y12, Y%[2]d, Y%[2]d\n\tVADDPS %[3]d(SP), Y%[2]d, Y%[2]d\n\tVMOVUPS Y%[2]d, %[3]d(SP)\n", streamAddr(s, 0), 4+s, 32*s)
	}
	fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n\tMOVQ R9, AX\n", 8*f.bytes, x8ActBytes, name)
	for s := range S {
		fmt.Fprintf(w, "\tVMOVUPS %d(SP), Y10\n\tVMOVUPS Y10, (AX)\n", 32*s)
		if s < S-1 {
			w.WriteString("\tADDQ R8, AX\n")
		}
	}
	fmt.Fprintf(w, "\tADDQ $32, R9\n\tDECQ R11\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

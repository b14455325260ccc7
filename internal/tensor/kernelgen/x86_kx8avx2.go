// AVX2 kernels over the repacked K-quants (Q4_K, Q5_K, Q6_K).

package main

import (
	"bytes"
	"fmt"
	"strings"
)

// q4kx8AVX2 emits Q4_K repacked eight rows at a time (x8.go) against
// Q8_K activations in the KTile layout, on AVX2, for the units u: per
// sub-block, the eight k's VPMADDUBSW sums (nibble ≤ 15, |a| ≤ 127: at
// most 8·3810 < 2^15) stay in int16, then one VPMADDWD by the rows'
// scales (both words of each row's dword) makes them int32; the minimums
// likewise from the block sums. Integer sums are exact and the float
// steps are dotQ4K's, so the bits are the row kernels'.
//
// Registers: Y0–Y3 per unit Σ sc·Σ q·a, Y4–Y7 per unit int16 sums (then
// Σ m·bsum), Y8 weights, Y9 scales, Y10–Y11 temporaries, Y12–Y15
// kConsts.
func q4kx8AVX2(w *bytes.Buffer, u kUnits) {
	name := u.name("q4k")
	sc, acc := 0, 128*u.S // stack: each run's scales (kScales); the running sums
	u.frame(w, name, kConsts, acc+32*u.n(), acc)
	kScales(w, u, sc)
	u.zero(w, 0)
	for j := range 8 {
		p, hi := j/2, j%2
		u.zero(w, 4)
		for k := range 8 {
			u.mulAdd(w, func(addr func(int) string) {
				fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n", addr(128+256*p+32*k))
				if hi == 1 {
					w.WriteString("\tVPSRLW $4, Y8, Y8\n")
				}
				w.WriteString("\tVPAND Y12, Y8, Y8\n")
			}, 64*p+32*hi+4*k)
		}
		u.scaled(w, func(s int) { kScaleOf(w, sc+128*s, j) })
	}
	// Minimums: Σ_j m_j·(bsum_2j + bsum_2j+1).
	u.zero(w, 4)
	for j := range 8 {
		u.bsums(w, func(s int) { kScaleOf(w, sc+128*s+64, j) }, 4*j)
	}
	u.floats(w, acc, true)
	u.close(w, name, 144, acc)
}

// q45kx8AVX2S emits q4kx8AVX2's (q5 false) or q5kx8AVX2's kernel for one
// token over x8Streams runs of groups (u.S > 1) as a loop over the four
// pairs of sub-blocks: the unrolled super-blocks (1,763 and 2,971
// instructions, front-end bound on Zen 3) ran slower in cache than the
// one-run kernels; the loops are 12–25 % faster in cache. Each run's scales and minimums are staged once per
// super-block, each already in both words of its rows' dwords, so that the
// loop takes them as memory operands of VPMADDWD (stack: sc_0–7 then
// m_0–7, 32 bytes each, 512 a run). Q5_K's fifth bits (bit j of each qh
// byte for sub-block j) reach bit 4 by one shift, counted in X13 and X14
// for the pair's two sub-blocks. Same integer sums, same float steps: the
// bits of the unrolled kernels.
//
// Registers: Y0–Y3 per run Σ sc·Σ q·a, Y4–Y7 per run int16 sums (then
// Σ m·bsum), Y8 quants, Y10–Y11 temporaries, Y12 nib, Y15 bit10 (Q5_K); SI, BX
// and DI walk the pairs' quants, activations and scales, DX stays on the
// super-block (Q5_K's qh), CX counts the pairs and AX is the shift.
func q45kx8AVX2S(w *bytes.Buffer, u kUnits, q5 bool) {
	f, ql, kstep, bb := "q4k", 128, 8, 144
	if q5 {
		f, ql, kstep, bb = "q5k", 384, 4, 176
	}
	name := u.name(f)
	sc, acc := 0, 512*u.S
	consts := "\tVMOVDQU nib<>(SB), Y12\n"
	if q5 {
		consts += "\tVMOVDQU bit10<>(SB), Y15\n"
	}
	u.frame(w, name, consts, acc+32*u.n(), acc)
	for s := range u.S {
		// Y0 sc0–3, Y1 sc4–7, Y2 m0–3, Y3 m4–7: byte b of each row's dword
		// (as kScales has them), then each byte to both words of the dword.
		fmt.Fprintf(w, `	VMOVDQU %s, Y8
	VMOVDQU %s, Y9
	VMOVDQU %s, Y10
	VPAND c3f<>(SB), Y8, Y0
	VPAND c3f<>(SB), Y9, Y2
	VPSRLD $6, Y8, Y8
	VPAND c03<>(SB), Y8, Y8
	VPSLLD $4, Y8, Y8
	VPAND Y12, Y10, Y1
	VPOR Y8, Y1, Y1
	VPSRLD $6, Y9, Y9
	VPAND c03<>(SB), Y9, Y9
	VPSLLD $4, Y9, Y9
	VPSRLD $4, Y10, Y10
	VPAND Y12, Y10, Y3
	VPOR Y9, Y3, Y3
`, u.w(s, 32), u.w(s, 64), u.w(s, 96))
		for v := range 4 {
			for b := range 4 {
				src := fmt.Sprintf("Y%d", v)
				if b > 0 {
					fmt.Fprintf(w, "\tVPSRLD $%d, Y%d, Y8\n", 8*b, v)
					src = "Y8"
				}
				fmt.Fprintf(w, "\tVPAND cff<>(SB), %s, Y8\n\tVPSHUFB dup01<>(SB), Y8, Y8\n\tVMOVDQU Y8, %d(SP)\n", src, sc+512*s+128*v+32*b)
			}
		}
	}
	u.zero(w, 0)
	// Q5_K's pairs 0–1 shift the fifth bits left (by 4−j), 2–3 right (by
	// j−4): two loops, so that each shift is one instruction.
	type pairLoop struct {
		label, shift string
		pairs, count int // pairs in the loop, the shift for its first
	}
	loops := []pairLoop{{"pair", "", 4, 0}}
	if q5 {
		loops = []pairLoop{{"pairl", "VPSLLW", 2, 4}, {"pairr", "VPSRLW", 2, 0}}
		w.WriteString("\tMOVQ SI, DX\n")
	}
	fmt.Fprintf(w, "\tLEAQ %d(SP), DI\n", sc)
	for _, l := range loops {
		step := 2 // the count for sub-block j = 2·pair (X13), +1 for the next (X14)
		if l.shift == "VPSLLW" {
			step = -2
		}
		fmt.Fprintf(w, "\tMOVQ $%d, CX\n", l.pairs)
		if q5 {
			fmt.Fprintf(w, "\tMOVQ $%d, AX\n", l.count)
		}
		fmt.Fprintf(w, "%s%s:\n", name, l.label)
		if q5 {
			fmt.Fprintf(w, "\tVMOVQ AX, X13\n\tLEAQ %d(AX), R10\n\tVMOVQ R10, X14\n", step/2)
		}
		for hi := range 2 {
			for k0 := 0; k0 < 8; k0 += kstep {
				u.zero(w, 4)
				for k := k0; k < k0+kstep; k++ {
					fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), Y10\n", 32*hi+4*k)
					for s := range u.S {
						fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n", u.w(s, ql+32*k))
						if hi == 1 {
							w.WriteString("\tVPSRLW $4, Y8, Y8\n")
						}
						w.WriteString("\tVPAND Y12, Y8, Y8\n")
						if q5 {
							fmt.Fprintf(w, "\tVMOVDQU %s, Y11\n\t%s X%d, Y11, Y11\n\tVPAND Y15, Y11, Y11\n\tVPOR Y11, Y8, Y8\n",
								strings.Replace(u.w(s, 128+32*k), "(SI)", "(DX)", 1), l.shift, 13+hi)
						}
						fmt.Fprintf(w, "\tVPMADDUBSW Y10, Y8, Y11\n\tVPADDW Y11, Y%[1]d, Y%[1]d\n", 4+s)
					}
				}
				for s := range u.S {
					fmt.Fprintf(w, "\tVPMADDWD %d(DI), Y%d, Y10\n\tVPADDD Y10, Y%d, Y%[3]d\n", 32*hi+512*s, 4+s, s)
				}
			}
		}
		fmt.Fprintf(w, "\tADDQ $256, SI\n\tADDQ $64, BX\n\tADDQ $64, DI\n")
		if q5 {
			fmt.Fprintf(w, "\tADDQ $%d, AX\n", step)
		}
		fmt.Fprintf(w, "\tDECQ CX\n\tJNZ %s%s\n", name, l.label)
	}
	w.WriteString("\tSUBQ $1024, SI\n\tSUBQ $256, BX\n")
	// Minimums: Σ_j m_j·(bsum_2j + bsum_2j+1).
	u.zero(w, 4)
	for j := range 8 {
		fmt.Fprintf(w, "\tVPBROADCASTD %s, Y10\n", u.bs(0, 4*j))
		for s := range u.S {
			fmt.Fprintf(w, "\tVPMADDWD %d(SP), Y10, Y11\n\tVPADDD Y11, Y%[2]d, Y%[2]d\n", sc+512*s+256+32*j, 4+s)
		}
	}
	u.floats(w, acc, true)
	u.close(w, name, bb, acc)
}

// q6kx8AVX2 is q4kx8AVX2's counterpart for Q6_K repacked eight rows at a
// time: the 6-bit quants (≤ 63) of two k's at a time stay in int16
// (2·2·63·127 < 2^15) before one VPMADDWD by the rows' int8 scale of
// their 16-quant group; the −32 offset comes from the block sums against
// pairs of group scales. The bits are dotQ6K's.
//
// Registers: Y0–Y3 per unit Σ sc·Σ q·a, Y4–Y7 per unit int16 sums (then
// Σ sc·bsum), Y8 quants, Y9 scales, Y10–Y11 temporaries, Y12 nib, Y13
// m30, Y14 dup01.
func q6kx8AVX2(w *bytes.Buffer, u kUnits) {
	name := u.name("q6k")
	const acc = 0
	u.frame(w, name, "\tVMOVDQU nib<>(SB), Y12\n\tVMOVDQU m30<>(SB), Y13\n\tVMOVDQU dup01<>(SB), Y14\n", acc+32*u.n(), acc)
	u.zero(w, 0)
	for n := range 2 {
		for m := range 4 {
			for kh := range 2 {
				g := 8*n + 2*m + kh
				for kp := range 2 {
					u.zero(w, 4)
					for k := 4*kh + 2*kp; k < 4*kh+2*kp+2; k++ {
						base := 144 + 96*(8*n+k)
						ql := base
						if m%2 == 1 {
							ql += 32
						}
						u.mulAdd(w, func(addr func(int) string) { q6kQuants(w, m, addr(ql), addr(base+64)) }, 128*n+32*m+4*k)
					}
					u.scaled(w, func(s int) {
						fmt.Fprintf(w, "\tVPMOVSXBD %s, Y9\n\tVPSHUFB Y14, Y9, Y9\n", u.w(s, 16+8*g))
					})
				}
			}
		}
	}
	q6kEnd(w, u, name, acc)
}

// q6kQuants emits the 6-bit quants of quarter m of a Q6_K k into Y8: the
// nibbles at ql (low for m < 2, high above), the two bits of m from the
// qh bytes at qh put at bits 4–5 (Y12 nib, Y13 m30; uses Y11).
func q6kQuants(w *bytes.Buffer, m int, ql, qh string) {
	fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n", ql)
	if m >= 2 {
		w.WriteString("\tVPSRLW $4, Y8, Y8\n")
	}
	fmt.Fprintf(w, "\tVPAND Y12, Y8, Y8\n\tVMOVDQU %s, Y11\n", qh)
	switch m {
	case 0:
		w.WriteString("\tVPSLLW $4, Y11, Y11\n")
	case 1:
		w.WriteString("\tVPSLLW $2, Y11, Y11\n")
	case 3:
		w.WriteString("\tVPSRLW $2, Y11, Y11\n")
	}
	w.WriteString("\tVPAND Y13, Y11, Y11\n\tVPOR Y11, Y8, Y8\n")
}

// q6kEnd ends a Q6_K super-block for q6kx8AVX2 and q6kx8AVX2S: the −32
// offset, Σ_g sc_g·bsum_g two groups per VPMADDWD, then the float steps,
// and the loops' close.
func q6kEnd(w *bytes.Buffer, u kUnits, name string, acc int) {
	u.zero(w, 4)
	for i := range 8 {
		u.bsums(w, func(s int) {
			fmt.Fprintf(w, "\tVMOVQ %s, X9\n\tVMOVQ %s, X11\n\tVPUNPCKLBW X11, X9, X9\n\tVPMOVSXBW X9, Y9\n", u.w(s, 16+16*i), u.w(s, 24+16*i))
		}, 4*i)
	}
	for i := range u.n() {
		fmt.Fprintf(w, "\tVPSLLD $5, Y%[1]d, Y%[1]d\n\tVPSUBD Y%[1]d, Y%[2]d, Y%[2]d\n", 4+i, i)
	}
	u.floats(w, acc, false)
	u.close(w, name, 210, acc)
}

// q6kx8AVX2S emits q6kx8AVX2's kernel for one token over x8Streams runs
// of groups (u.S > 1) as two nested loops, over the super-block's halves
// (n) and within each over its two kh's: one pass is an eighth of the
// unrolled 3,063 instructions (front-end bound on Zen 3). SI, BX
// and DI walk the weights, activations and scales (DX, CX count the
// loops); the sums and float steps are q6kx8AVX2's, so are the bits.
func q6kx8AVX2S(w *bytes.Buffer, u kUnits) {
	name := u.name("q6k")
	const acc = 0
	u.frame(w, name, "\tVMOVDQU nib<>(SB), Y12\n\tVMOVDQU m30<>(SB), Y13\n\tVMOVDQU dup01<>(SB), Y14\n", acc+32*u.n(), acc)
	u.zero(w, 0)
	fmt.Fprintf(w, "\tLEAQ 16(SI), DI\n\tMOVQ $2, DX\n%shalf:\n\tMOVQ $2, CX\n%skh:\n", name, name)
	scale := func(s, off int) string { // stream s's scale byte at off from DI
		return strings.Replace(u.w(s, off), "(SI)", "(DI)", 1)
	}
	for m := range 4 {
		for kp := range 2 {
			u.zero(w, 4)
			for k := 2 * kp; k < 2*kp+2; k++ {
				ql := 144 + 96*k
				if m%2 == 1 {
					ql += 32
				}
				fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), Y10\n", 32*m+4*k)
				for s := range u.S {
					q6kQuants(w, m, u.w(s, ql), u.w(s, 144+96*k+64))
					fmt.Fprintf(w, "\tVPMADDUBSW Y10, Y8, Y11\n\tVPADDW Y11, Y%[1]d, Y%[1]d\n", 4+s)
				}
			}
			for s := range u.S {
				fmt.Fprintf(w, "\tVPMOVSXBD %s, Y9\n\tVPSHUFB Y14, Y9, Y9\n\tVPMADDWD Y9, Y%d, Y10\n\tVPADDD Y10, Y%d, Y%[3]d\n", scale(s, 16*m), 4+s, s)
			}
		}
	}
	// A kh is four k's (384 bytes of weights), 16 activation bytes and the
	// next group's scales; a half is 128 activations and 8 groups.
	fmt.Fprintf(w, "\tADDQ $384, SI\n\tADDQ $16, BX\n\tADDQ $8, DI\n\tDECQ CX\n\tJNZ %skh\n", name)
	fmt.Fprintf(w, "\tADDQ $96, BX\n\tADDQ $48, DI\n\tDECQ DX\n\tJNZ %shalf\n\tSUBQ $1536, SI\n\tSUBQ $256, BX\n", name)
	q6kEnd(w, u, name, acc)
}

// q5kx8AVX2 is q4kx8AVX2's counterpart for Q5_K repacked eight rows at a
// time (x8.go): each quant gets its fifth bit from the rows' qh dwords
// (bit j of byte l for sub-block j), and, the quants reaching 31, the
// int16 sums take four k's (4·7874 < 2^15) before each VPMADDWD by the
// rows' scales. The bits are dotQ5K's.
func q5kx8AVX2(w *bytes.Buffer, u kUnits) {
	name := u.name("q5k")
	sc, acc := 0, 128*u.S
	u.frame(w, name, kConsts, acc+32*u.n(), acc)
	kScales(w, u, sc)
	u.zero(w, 0)
	for j := range 8 {
		p, hi := j/2, j%2
		kScaleOf(w, sc, j) // the scales serve both halves
		for kh := range 2 {
			u.zero(w, 4)
			for k := 4 * kh; k < 4*kh+4; k++ {
				u.mulAdd(w, func(addr func(int) string) {
					fmt.Fprintf(w, "\tVMOVDQU %s, Y8\n", addr(384+256*p+32*k))
					if hi == 1 {
						w.WriteString("\tVPSRLW $4, Y8, Y8\n")
					}
					fmt.Fprintf(w, "\tVPAND Y12, Y8, Y8\n\tVMOVDQU %s, Y11\n", addr(128+32*k))
					switch {
					case j < 4:
						fmt.Fprintf(w, "\tVPSLLW $%d, Y11, Y11\n", 4-j)
					case j > 4:
						fmt.Fprintf(w, "\tVPSRLW $%d, Y11, Y11\n", j-4)
					}
					w.WriteString("\tVPAND Y15, Y11, Y11\n\tVPOR Y11, Y8, Y8\n")
				}, 64*p+32*hi+4*k)
			}
			u.scaled(w, nil)
		}
	}
	u.zero(w, 4)
	for j := range 8 {
		u.bsums(w, func(s int) { kScaleOf(w, sc+128*s+64, j) }, 4*j)
	}
	u.floats(w, acc, true)
	u.close(w, name, 176, acc)
}

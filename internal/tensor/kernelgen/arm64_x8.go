// The arm64 dot-product kernels over the repacked layouts (x8_arm64.s).
//
// One SDOT by element (Vd.4S += Vn.16B · Vm.4B[i]) takes four rows' four
// quants (a 16-byte piece of the layout) against one token's four
// activations, so the rows are the lanes and no horizontal sum is needed;
// each weight load serves the T tokens of a tile. Registers: V0–V6 the
// weights and scratch, V7 a constant, then per token two activation
// vectors (the block's 32 quants), two int32 sums (rows 0–3, 4–7) and two
// float32 sums.

package main

import "fmt"

// x8Format is one weight format: the constant in V7, and the body that sums one block's integer products
// (the weight pointer R0 at the block's scales on entry, at the next
// block on exit) by calling dot for each piece.
type x8Format struct {
	name  string
	konst int // V7's bytes, or -1
	body  func(g *gen, dot func(lo, hi, e0 int))
}

var x8Formats = []x8Format{
	{"q80", -1, func(g *gen, dot func(lo, hi, e0 int)) {
		g.op("ADD $16, R0")
		for k := 0; k < 8; k += 2 { // steps k, k+1: quants 4k…4k+3 of rows 0–3, 4–7
			g.op("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
			dot(0, 1, 4*k)
			dot(2, 3, 4*k+4)
		}
	}},
	{"q40", 0x0f, func(g *gen, dot func(lo, hi, e0 int)) {
		g.op("ADD $16, R0")
		for p := 0; p < 4; p += 2 { // nibble bytes 4p…4p+3: elements 4p+i (low), 16+4p+i (high)
			g.op("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
			for j := range 2 {
				g.and(4, 2*j, 7)
				g.and(5, 2*j+1, 7)
				dot(4, 5, 4*(p+j))
				g.ushr(4, 2*j, 4)
				g.ushr(5, 2*j+1, 4)
				dot(4, 5, 16+4*(p+j))
			}
		}
	}},
	// Q5_0's fifth bits (q5hPacked): byte i, bit k of a row's qh dword is
	// step k's (element 16·(k/4) + 4·(k%4) + i); BIT inserts it as bit 4.
	{"q50", 0x10, func(g *gen, dot func(lo, hi, e0 int)) {
		g.op("ADD $16, R0")
		g.op("VLD1.P 32(R0), [V5.B16, V6.B16]")
		hbits := func(dst, qh, k int) {
			src := qh
			switch {
			case k < 4:
				g.shl(4, qh, 4-k)
				src = 4
			case k > 4:
				g.ushr(4, qh, k-4)
				src = 4
			}
			g.bit(dst, src, 7)
		}
		for p := range 4 {
			g.op("VLD1.P 32(R0), [V0.B16, V1.B16]")
			for hi := range 2 {
				for r := range 2 {
					if hi == 0 {
						g.shl(2+r, r, 4)
						g.ushr(2+r, 2+r, 4)
					} else {
						g.ushr(2+r, r, 4)
					}
					hbits(2+r, 5+r, 4*hi+p)
				}
				dot(2, 3, 16*hi+4*p)
			}
		}
	}},
}

// x8Kernel writes <f>x8T<T>Dot(w *byte, groups, nb int, a *byte, astride
// int, out *float32, ostride int): groups of eight rows of w against T
// tokens whose 40-byte X8 blocks are at a + b·astride + 40t, into out +
// t·ostride (bytes) + 32g. Per row, block and token: the exact integer
// Σ w·a plus the activations' correction, then sum += float32(Σ)·(dw·da)
// by FMUL and FADD (never fused), which are dotX8's bits.
func x8Kernel(g *gen, f x8Format, T int) {
	act := func(t, h int) int { return 8 + 2*t + h }
	isum := func(t, r int) int { return 8 + 2*T + 2*t + r }
	fsum := func(t, r int) int { return 8 + 4*T + 2*t + r }
	name := fmt.Sprintf("%sx8T%dDot", f.name, T)
	fmt.Fprintf(g, "\n// func %s(w *byte, groups, nb int, a *byte, astride int, out *float32, ostride int)\n", name)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	for i, a := range []string{"w", "groups", "nb", "a", "astride", "out", "ostride"} {
		g.op("MOVD %s+%d(FP), R%d", a, 8*i, i)
	}
	if f.konst >= 0 {
		g.movi8(7, uint8(f.konst))
	}
	fmt.Fprintf(g, "%sgroup:\n", name)
	for t := range T {
		g.zero(fsum(t, 0))
		g.zero(fsum(t, 1))
	}
	g.op("MOVD R3, R8")
	g.op("MOVD R2, R7")
	fmt.Fprintf(g, "%sblock:\n", name)
	g.op("MOVD R0, R9")
	for t := range T {
		src := "R8"
		if t > 0 {
			g.op("ADD $%d, R8, R10", 40*t)
			src = "R10"
		}
		g.op("VLD1 (%s), [V%d.B16, V%d.B16]", src, act(t, 0), act(t, 1))
		g.zero(isum(t, 0))
		g.zero(isum(t, 1))
	}
	f.body(g, func(lo, hi, e0 int) {
		for t := range T {
			g.sdot(isum(t, 0), lo, act(t, e0/16), e0%16/4)
			g.sdot(isum(t, 1), hi, act(t, e0/16), e0%16/4)
		}
	})
	// The rows' scales, then per token: Σ + correction, × (dw·da), added.
	g.op("VLD1 (R9), [V0.H8]")
	g.fcvtl(1, 0)
	g.fcvtl2(2, 0)
	for t := range T {
		g.op("MOVWU %d(R8), R11", 40*t+32)
		g.dupW(3, 11)
		g.op("FMOVS %d(R8), F4", 40*t+36)
		for r := range 2 {
			g.add4s(isum(t, r), isum(t, r), 3)
			g.scvtf(isum(t, r), isum(t, r))
			g.fmulElem(5, 1+r, 4, 0)
			g.fmul(isum(t, r), isum(t, r), 5)
			g.fadd(fsum(t, r), fsum(t, r), isum(t, r))
		}
	}
	g.op("ADD R4, R8")
	g.op("SUBS $1, R7")
	g.op("BNE %sblock", name)
	g.op("MOVD R5, R10")
	for t := range T {
		g.op("VST1 [V%d.S4, V%d.S4], (R10)", fsum(t, 0), fsum(t, 1))
		if t < T-1 {
			g.op("ADD R6, R10")
		}
	}
	g.op("ADD $32, R5")
	g.op("SUBS $1, R1")
	g.op("BNE %sgroup", name)
	g.op("RET")
}

// kHead writes a K-quant kernel's frame (q4k's arguments in R0–R6), its
// constants, the group loop's head (the float sums Vf, Vf+1 zeroed; R8, R9,
// R10 the token's quants, scales and block sums; R7 the blocks left) and
// the block loop's (R11 the block's start).
func (g *gen) kHead(name string, f int, consts func()) {
	fmt.Fprintf(g, "\n// func %s(w *byte, groups, nb int, q *int8, d *float32, bsums *int16, out *float32)\n", name)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	for i, a := range []string{"w", "groups", "nb", "q", "d", "bsums", "out"} {
		g.op("MOVD %s+%d(FP), R%d", a, 8*i, i)
	}
	consts()
	fmt.Fprintf(g, "%sgroup:\n", name)
	g.zero(f)
	g.zero(f + 1)
	g.op("MOVD R3, R8")
	g.op("MOVD R4, R9")
	g.op("MOVD R5, R10")
	g.op("MOVD R2, R7")
	fmt.Fprintf(g, "%sblock:\n", name)
	g.op("MOVD R0, R11")
}

// kTail closes kHead's loops, storing Vf, Vf+1 to out + 32g.
func (g *gen) kTail(name string, f int) {
	g.op("SUBS $1, R7")
	g.op("BNE %sblock", name)
	g.op("VST1.P [V%d.S4, V%d.S4], 32(R6)", f, f+1)
	g.op("SUBS $1, R1")
	g.op("BNE %sgroup", name)
	g.op("RET")
}

// q4k writes q4kx8Dot(w *byte, groups, nb int, q *int8, d *float32, bsums
// *int16, out *float32), or with q5 q5kx8Dot: groups of eight rows of a
// repacked Q4_K (Q5_K) matrix against one token's Q8_K activations (q, d,
// bsums in their plain layout), into out + 32g. Per row and super-block it
// forms dotQ4K's (dotQ5K's) exact integers (sumi = Σ_j sc_j·Σ q·a by SDOT
// and MLA, summ = Σ_j m_j·(the pair of block sums) by MLA by element),
// then kSuperBlock's float steps. Registers: V0–V5 weights, V6 scratch,
// V7 0x0f bytes, V8–V11 the activations of one 64-element step p,
// V12–V15 its two sub-blocks' sums, V16–V19 sumi and summ, V20–V21 the
// float sums, V22–V27 the rows' scale bytes 0–3, 4–7, 8–11, V28–V29 the
// block-sum pairs, V30–V31 (Q5_K) a step's qh dwords.
func q4k(g *gen, q5 bool) {
	name := "q4kx8Dot"
	if q5 {
		name = "q5kx8Dot"
	}
	g.kHead(name, 20, func() { g.movi8(7, 0x0f) })
	g.op("ADD $32, R0")
	g.op("VLD1.P 64(R0), [V22.B16, V23.B16, V24.B16, V25.B16]")
	g.op("VLD1.P 32(R0), [V26.B16, V27.B16]")
	if q5 {
		g.op("ADD $256, R0") // past the qh dwords, read through R12
	}
	g.op("VLD1.P 32(R10), [V28.H8, V29.H8]")
	g.addp8h(28, 28, 29)
	g.sxtl2(29, 28)
	g.sxtl(28, 28)
	for _, v := range []int{16, 17, 18, 19} {
		g.zero(v)
	}
	// bits leaves n bits of each 32-bit lane of src from bit lo in dst.
	bits := func(dst, src, lo, n int) {
		g.shl4s(dst, src, 32-lo-n)
		g.ushr4s(dst, dst, 32-n)
	}
	// scaleMin leaves sub-block j's scale (min) of rows 4r…4r+3 in V4
	// (V5): scaleMinK4 on 32-bit lanes of scale bytes 0–3 (A), 4–7 (B),
	// 8–11 (C).
	scaleMin := func(j, r int) {
		a, b, c := 22+r, 24+r, 26+r
		if j < 4 {
			bits(4, a, 8*j, 6)
			bits(5, b, 8*j, 6)
			return
		}
		j -= 4
		bits(4, c, 8*j, 4)   // low four bits of the scale: byte j of C
		bits(6, a, 8*j+6, 2) // its high two: bits 6–7 of byte j of A
		g.sli4s(4, 6, 4)
		bits(5, c, 8*j+4, 4) // the min's: C's high nibble, B's bits 6–7
		bits(6, b, 8*j+6, 2)
		g.sli4s(5, 6, 4)
	}
	// fifth inserts bit b of each qh byte (V30+r) as bit 4 of V4+r.
	fifth := func(r, b int) {
		g.shl(6, 30+r, 7-b)
		g.ushr(6, 6, 7)
		g.sli(4+r, 6, 4)
	}
	for p := range 4 {
		g.op("VLD1.P 64(R8), [V8.B16, V9.B16, V10.B16, V11.B16]")
		if q5 {
			g.op("ADD $128, R11, R12")
		}
		for _, v := range []int{12, 13, 14, 15} {
			g.zero(v)
		}
		for k := 0; k < 8; k += 2 {
			g.op("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
			for s := range 2 {
				kk := k + s
				if q5 {
					g.op("VLD1.P 32(R12), [V30.B16, V31.B16]")
				}
				for r := range 2 {
					g.and(4+r, 2*s+r, 7)
					if q5 {
						fifth(r, 2*p)
					}
				}
				g.sdot(12, 4, 8+kk/4, kk%4)
				g.sdot(13, 5, 8+kk/4, kk%4)
				for r := range 2 {
					g.ushr(4+r, 2*s+r, 4)
					if q5 {
						fifth(r, 2*p+1)
					}
				}
				g.sdot(14, 4, 10+kk/4, kk%4)
				g.sdot(15, 5, 10+kk/4, kk%4)
			}
		}
		for h := range 2 {
			j := 2*p + h
			for r := range 2 {
				scaleMin(j, r)
				g.mla(16+r, 12+2*h+r, 4)
				g.mlaElem(18+r, 5, 28+j/4, j%4)
			}
		}
	}
	g.op("VLD1 (R11), [V0.H8, V1.H8]")
	g.fcvtl(2, 0)
	g.fcvtl2(3, 0)
	g.fcvtl(4, 1)
	g.fcvtl2(5, 1)
	g.op("FMOVS.P 4(R9), F6")
	for r := range 2 {
		g.scvtf(16+r, 16+r)
		g.scvtf(18+r, 18+r)
		g.fmulElem(0, 2+r, 6, 0)
		g.fmul(16+r, 16+r, 0)
		g.fadd(20+r, 20+r, 16+r)
		g.fmulElem(0, 4+r, 6, 0)
		g.fmul(18+r, 18+r, 0)
		g.fsub(20+r, 20+r, 18+r)
	}
	g.kTail(name, 20)
}

// q6k writes q6kx8Dot (q4k's arguments) for a repacked Q6_K matrix:
// dotQ6K's integers, Σ_g sc_g·(Σ q·a − 32·bsum_g) over the 16 groups of
// 16 elements, each group's sum starting at −32·bsum_g (so the offset
// costs no multiply), then sum += float32(Σ)·(d·da). Per step (half n,
// k) the layout gives the rows' ql bytes 64n+4k…, 64n+32+4k… and qh bytes
// 32n+4k…: quants of elements 128n + 32c + 4k + i (c = 0…3, group 8n + 2c
// + k/4), the low or high nibbles with qh's bits 2c, 2c+1 inserted as
// bits 4–5 by BIT. Registers: V0–V5 a step's bytes, V6–V7 and V30–V31
// scratch, V8–V15 the half's 128 activations, V16–V23 four groups' sums,
// V24–V25 Σ, V26–V27 the float sums, V28 0x0f and V29 0x30 bytes.
func q6k(g *gen) {
	const name = "q6kx8Dot"
	g.kHead(name, 26, func() {
		g.movi8(28, 0x0f)
		g.movi8(29, 0x30)
	})
	g.op("ADD $144, R0")
	g.zero(24)
	g.zero(25)
	for n := range 2 {
		g.op("VLD1.P 64(R8), [V8.B16, V9.B16, V10.B16, V11.B16]")
		g.op("VLD1.P 64(R8), [V12.B16, V13.B16, V14.B16, V15.B16]")
		for kh := range 2 {
			for c := range 4 { // group 8n+2c+kh's sums start at −32·bsum
				g.op("MOVH %d(R10), R12", 2*(8*n+2*c+kh))
				g.op("LSL $5, R12, R12")
				g.op("NEG R12, R12")
				g.dupW(16+2*c, 12)
				g.dupW(17+2*c, 12)
			}
			for k := 4 * kh; k < 4*kh+4; k++ {
				g.op("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
				g.op("VLD1.P 32(R0), [V4.B16, V5.B16]")
				for c := range 4 {
					for r := range 2 { // rows 4r…4r+3: quant in V6+r, scratch V30+r
						q, tmp, ql, qh := 6+r, 30+r, 2*(c%2)+r, 4+r
						if c < 2 {
							g.and(q, ql, 28)
						} else {
							g.ushr(q, ql, 4)
						}
						src := qh
						switch c {
						case 0:
							g.shl(tmp, qh, 4)
							src = tmp
						case 1:
							g.shl(tmp, qh, 2)
							src = tmp
						case 3:
							g.ushr(tmp, qh, 2)
							src = tmp
						}
						g.bit(q, src, 29)
						g.sdot(16+2*c+r, q, 8+2*c+kh, k%4)
					}
				}
			}
			for c := range 4 { // Σ += sc_g · the group's sum
				g.op("ADD $%d, R11, R13", 16+8*(8*n+2*c+kh))
				g.op("VLD1 (R13), [V6.B8]")
				g.sxtl8(6, 6)
				g.sxtl2(7, 6)
				g.sxtl(6, 6)
				g.mla(24, 16+2*c, 6)
				g.mla(25, 17+2*c, 7)
			}
		}
	}
	g.op("VLD1 (R11), [V6.H8]")
	g.fcvtl(30, 6)
	g.fcvtl2(31, 6)
	g.op("FMOVS.P 4(R9), F6")
	for r := range 2 {
		g.scvtf(24+r, 24+r)
		g.fmulElem(30+r, 30+r, 6, 0)
		g.fmul(24+r, 24+r, 30+r)
		g.fadd(26+r, 26+r, 24+r)
	}
	g.op("ADD $32, R10")
	g.kTail(name, 26)
}

// x8File is x8_arm64.s.
func x8File() []byte {
	var g gen
	g.WriteString(generated + `

// The arm64 dot-product kernels over the repacked Q8_0, Q4_0 and Q5_0
// layouts (x8.go): SDOT by element, eight rows × tiles of 4, 2 and 1
// tokens. Each WORD's mnemonic is checked by TestARM64Encodings.

//go:build !purego

#include "textflag.h"
`)
	for _, f := range x8Formats {
		for _, T := range []int{4, 2, 1} {
			x8Kernel(&g, f, T)
		}
	}
	q4k(&g, false)
	q4k(&g, true)
	q6k(&g)
	return g.Bytes()
}

// The arm64 K-quant row kernels (kernels_arm64.s): Q4_K and Q5_K from one
// template, Q6_K, each in a NEON and a dot-product variant.

package main

import "fmt"

// kRowsHead writes a K-quant row kernel's frame: its arguments in R0–R7,
// the constants V30 = 0x0f and V31 = hi bytes, and the row loop's head (the
// float sum S20 zeroed; R8–R12 the row's weights, the token's quants,
// scales and block sums, and the blocks left).
func (g *gen) kRowsHead(name string, hi uint8) {
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-64\n", name)
	g.args("w", "rowBytes", "nrows", "a", "d", "bsums", "nb", "out")
	g.word(movi8Bits(30, 0x0f), "movi v30.16b, #0x0f")
	g.word(movi8Bits(31, hi), "movi v31.16b, #0x%x", hi)
	g.raw(name, `{name}row:
	MOVD R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R5, R11
	MOVD R6, R12
	WORD $0x6f00e414 // movi v20.2d, #0
{name}block:
`)
}

// kRowsTail closes kRowsHead's loops, storing S20 to out.
func (g *gen) kRowsTail(name string) {
	g.raw(name, `	SUBS $1, R12, R12
	BNE {name}block
	FMOVS.P F20, 4(R7)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE {name}row
	RET

`)
}

// q45kRows1 writes q4kRows1<v>, or with q5 q5kRows1<v>(w *byte, rowBytes,
// nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32):
// dotQ4K's (dotQ5K's) bits. Each of the four 64-quant steps j sums
// sub-blocks 2j (low nibbles) and 2j+1 (high) in V16 and V17; Q5_K's fifth
// bits, qh's bits 2j and 2j+1 of each byte, are shifted to bit 4 and ORed
// in.
func q45kRows1(g *gen, q5 bool, v variant) {
	name, desc, fn := "q4kRows1"+v.name, "Q4_K", "dotQ4K"
	if q5 {
		name, desc, fn = "q5kRows1"+v.name, "Q5_K (a fifth bit per quant from qh)", "dotQ5K"
	}
	fmt.Fprintf(g, "// func %s(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)\n", name)
	fmt.Fprintf(g, "// %s rows against one token's Q8_K activations, %s's bits: per\n", desc, fn)
	g.WriteString(`// super-block the exact integers sumi = Σ_j sc_j·Σ q·a and
// summ = Σ_j m_j·(bsum_2j + bsum_2j+1), then
// sum = (sum + float32(sumi)·(d·da)) − float32(summ)·(dmin·da).
// nrows, nb > 0.
`)
	g.kRowsHead(name, 0x10)
	g.WriteString(`	// F21 = d·da, F22 = dmin·da.
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
`)
	if q5 {
		g.WriteString("\t// Q5_K's high bits: qh, one byte per lane l of the four steps.\n\tVLD1.P 32(R8), [V26.B16, V27.B16]\n")
	}
	for j := range 4 {
		fmt.Fprintf(g, "\t// sub-blocks %d (low nibbles) and %d (high): V16, V17 their sums in four lanes.\n", 2*j, 2*j+1)
		g.WriteString(`	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	WORD $0x4e3e1c02 // and v2.16b, v0.16b, v30.16b
	WORD $0x4e3e1c23 // and v3.16b, v1.16b, v30.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
`)
		if q5 {
			for _, q := range [][3]int{{2, 26, 2 * j}, {3, 27, 2 * j}, {0, 26, 2*j + 1}, {1, 27, 2*j + 1}} {
				dst, qh, bit := q[0], q[1], q[2]
				switch {
				case bit < 4:
					g.shl(18, qh, 4-bit)
				case bit > 4:
					g.ushr(18, qh, bit-4)
				default:
					g.mov16b(18, qh)
				}
				g.and(18, 18, 31)
				g.orr(dst, dst, 18)
			}
		}
		g.intSums(v, intSum{16, 18, [][2]int{{2, 4}, {3, 5}}}, intSum{17, 19, [][2]int{{0, 6}, {1, 7}}})
		g.mlaElem(29, 16, 24+j/2, 2*(j%2))
		g.mlaElem(29, 17, 24+j/2, 2*(j%2)+1)
	}
	g.WriteString(`	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x5e21db9c // scvtf s28, s28
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e360b9c // fmul s28, s28, s22
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	WORD $0x1e3c3a94 // fsub s20, s20, s28
`)
	g.kRowsTail(name)
}

// q6kRows1 writes q6kRows1<v>(w *byte, rowBytes, nrows int, a *int8, d
// *float32, bsums *int16, nb int, out *float32): dotQ6K's bits. Each half
// of a super-block takes 64 bytes of ql (V0–V3: quants' low nibbles, then
// high nibbles) and 32 of qh (V4, V5: two bits per quant for each of four
// groups), one 16-quant group sum in V7 at a time.
func q6kRows1(g *gen, v variant) {
	name := "q6kRows1" + v.name
	fmt.Fprintf(g, "// func %s(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)\n", name)
	g.WriteString(`// Q6_K rows against one token's Q8_K activations, dotQ6K's bits: per
// super-block the exact sumi = Σ_g sc_g·(Σ q·a − 32·bsum_g) over the 16
// groups of 16, then sum += float32(sumi)·(d·da). nrows, nb > 0.
`)
	g.kRowsHead(name, 0x30)
	g.WriteString(`	// F21 = d·da.
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
`)
	for h := range 2 {
		fmt.Fprintf(g, "\t// Half %d: quants 128·%d… from ql (V0-V3) and qh (V4, V5), 0…63.\n", h, h)
		g.WriteString("\tVLD1.P 64(R14), [V0.B16, V1.B16, V2.B16, V3.B16]\n\tVLD1.P 32(R13), [V4.B16, V5.B16]\n")
		for high := range 2 {
			g.op("VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]")
			for i := range 4 {
				qh := 4 + i%2
				// The quant's two high bits are qh's bits 2·(2·high + i/2)
				// and the next, moved to bits 4 and 5.
				shift := 4 - 2*(2*high+i/2)
				if high == 0 {
					g.and(6, i, 30)
				} else {
					g.ushr(6, i, 4)
				}
				switch {
				case shift > 0:
					g.shl(7, qh, shift)
					g.and(7, 7, 31)
				case shift < 0:
					g.ushr(7, qh, -shift)
					g.and(7, 7, 31)
				default:
					g.and(7, qh, 31)
				}
				g.orr(6, 6, 7)
				g.intSums(v, intSum{7, 6, [][2]int{{6, 16 + i}}})
				g.mlaElem(29, 7, 24+2*h+high, i)
			}
		}
	}
	g.WriteString(`	WORD $0x6ebc87bd // sub v29.4s, v29.4s, v28.4s
	WORD $0x4eb1bbbd // addv s29, v29.4s
	WORD $0x5e21dbbd // scvtf s29, s29
	WORD $0x1e350bbd // fmul s29, s29, s21
	WORD $0x1e3d2a94 // fadd s20, s20, s29
	ADD $210, R8, R8
`)
	g.kRowsTail(name)
}

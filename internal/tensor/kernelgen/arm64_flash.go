// The arm64 tiled attention (flash) over F32 and F16 keys and values, the
// read-bandwidth probe and the Q8_0 activation quantiser (kernels_arm64.s).

package main

import "fmt"

// flashKind is a key and value format of the flash kernels: how 16 of a
// key's or value's elements are loaded into four float32 vectors.
type flashKind struct {
	name  string // F32, F16
	bytes int    // 16 elements' bytes
	lanes [4]int // the four vectors
}

func flashKindOf(f16 bool) flashKind {
	if f16 {
		return flashKind{"F16", 32, [4]int{6, 7, 20, 21}}
	}
	return flashKind{"F32", 64, [4]int{4, 5, 6, 7}}
}

// load loads 16 elements at (R) into k.lanes.
func (k flashKind) load(g *gen, r string) {
	if k.name == "F32" {
		g.op("VLD1 (%s), [V4.S4, V5.S4, V6.S4, V7.S4]", r)
		return
	}
	g.op("VLD1 (%s), [V4.H8, V5.H8]", r)
	g.fcvtl(6, 4)
	g.fcvtl2(7, 4)
	g.fcvtl(20, 5)
	g.fcvtl2(21, 5)
}

// fmla adds V0.s[0] times k.lanes to V16–V19.
func (k flashKind) fmla(g *gen) {
	for i, l := range k.lanes {
		g.fmlaElem(16+i, l, 0, 0)
	}
}

// flashScores writes flashScores<K>NEON(q *float32, d int, k
// unsafe.Pointer, kstride int, s *float32).
func flashScores(g *gen, f16 bool) {
	k := flashKindOf(f16)
	name := "flashScores" + k.name + "NEON"
	fmt.Fprintf(g, "// func %s(q *float32, d int, k unsafe.Pointer, kstride int, s *float32)\n", name)
	fmt.Fprintf(g, `// s[j] = Σ_c q[c]·key_j[c] for the tile's 16 keys, stored transposed
// (%s, dimension c's 16 keys kstride bytes after c−1's). d > 0.
TEXT ·%s(SB), NOSPLIT, $0-40
`, k.name, name)
	g.args("q", "d", "k", "kstride", "s")
	for i := range 4 {
		g.zero(16 + i)
	}
	fmt.Fprintf(g, "scores%s:\n", k.name)
	g.op("FMOVS.P 4(R0), F0")
	if f16 {
		k.load(g, "R2")
		g.op("ADD R3, R2, R2")
	} else {
		g.op("VLD1 (R2), [V4.S4, V5.S4, V6.S4, V7.S4]")
		g.op("ADD R3, R2, R2")
	}
	k.fmla(g)
	g.op("SUBS $1, R1, R1")
	g.op("BNE scores%s", k.name)
	g.op("VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R4)")
	g.op("RET")
	g.WriteString("\n")
}

// flashAcc writes flashAcc<K>NEON(o *float32, d int, alpha float32, p
// *float32, nk int, v unsafe.Pointer, vstride int).
func flashAcc(g *gen, f16 bool) {
	k := flashKindOf(f16)
	name, l := "flashAcc"+k.name+"NEON", "acc"+k.name
	fmt.Fprintf(g, "// func %s(o *float32, d int, alpha float32, p *float32, nk int, v unsafe.Pointer, vstride int)\n", name)
	fmt.Fprintf(g, `// o = o·alpha + Σ_{j<nk, p_j≠0} p_j·v_j, sixteen of o's d floats at a
// time (d a positive multiple of 16; v_j %s, vstride bytes apart).
TEXT ·%s(SB), NOSPLIT, $0-56
	MOVD o+0(FP), R0
	MOVD d+8(FP), R1
	FMOVS alpha+16(FP), F1
	MOVD p+24(FP), R2
	MOVD nk+32(FP), R3
	MOVD v+40(FP), R4
	MOVD vstride+48(FP), R5
	LSR $4, R1, R1
%schunk:
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
`, k.name, name, l)
	for i := range 4 {
		g.fmulElem(16+i, 16+i, 1, 0)
	}
	fmt.Fprintf(g, `	MOVD R2, R6
	MOVD R4, R7
	MOVD R3, R8
%skey:
	FMOVS.P 4(R6), F0
	WORD $0x1e202008 // fcmp s0, #0.0
	BEQ %sskip
`, l, l)
	k.load(g, "R7")
	k.fmla(g)
	fmt.Fprintf(g, `%sskip:
	ADD R5, R7, R7
	SUBS $1, R8, R8
	BNE %skey
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	ADD $%d, R4, R4
	SUBS $1, R1, R1
	BNE %schunk
	RET

`, l, l, k.bytes, l)
}

// readSum is the read-bandwidth probe (ReadRate).
const readSum = `// func readSumNEON(p *byte, n int) uint64
// The sum of n bytes' 8-byte words (n a positive multiple of 128), four
// accumulators: a read whose only cost is the loads.
TEXT ·readSumNEON(SB), NOSPLIT, $0-24
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	LSR $7, R1, R1
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
	WORD $0x6f00e412 // movi v18.2d, #0
	WORD $0x6f00e413 // movi v19.2d, #0
readloop:
	VLD1.P 64(R0), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P 64(R0), [V4.D2, V5.D2, V6.D2, V7.D2]
	WORD $0x4ee08610 // add v16.2d, v16.2d, v0.2d
	WORD $0x4ee18631 // add v17.2d, v17.2d, v1.2d
	WORD $0x4ee28652 // add v18.2d, v18.2d, v2.2d
	WORD $0x4ee38673 // add v19.2d, v19.2d, v3.2d
	WORD $0x4ee48610 // add v16.2d, v16.2d, v4.2d
	WORD $0x4ee58631 // add v17.2d, v17.2d, v5.2d
	WORD $0x4ee68652 // add v18.2d, v18.2d, v6.2d
	WORD $0x4ee78673 // add v19.2d, v19.2d, v7.2d
	SUBS $1, R1, R1
	BNE readloop
	WORD $0x4ef18610 // add v16.2d, v16.2d, v17.2d
	WORD $0x4ef38652 // add v18.2d, v18.2d, v19.2d
	WORD $0x4ef28610 // add v16.2d, v16.2d, v18.2d
	WORD $0x5ef1ba10 // addp d16, v16.2d
	FMOVD F16, ret+16(FP)
	RET

`

// quantQ80 is the Q8_0 activation quantiser: quantQ8_0Blocks's bits.
const quantQ80 = `// func quantQ8_0NEON(x *float32, nb int, q *int8, d *float32)
// quantQ8_0Blocks's Q8_0 quantisation of nb > 0 blocks of 32: d = amax/127
// rounded to fp16, q = round-half-even(x·(127/amax)).
TEXT ·quantQ8_0NEON(SB), NOSPLIT, $0-32
	MOVD x+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD q+16(FP), R2
	MOVD d+24(FP), R3
	MOVW $0x42fe0000, R4
	WORD $0x1e27009e // fmov s30, w4
	MOVW $0x7f800000, R4
	WORD $0x1e27009d // fmov s29, w4
	WORD $0x6f00e41f // movi v31.2d, #0
quantloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4ea0f810 // fabs v16.4s, v0.4s
	WORD $0x4ea0f831 // fabs v17.4s, v1.4s
	WORD $0x4ea0f852 // fabs v18.4s, v2.4s
	WORD $0x4ea0f873 // fabs v19.4s, v3.4s
	WORD $0x4ea0f894 // fabs v20.4s, v4.4s
	WORD $0x4ea0f8b5 // fabs v21.4s, v5.4s
	WORD $0x4ea0f8d6 // fabs v22.4s, v6.4s
	WORD $0x4ea0f8f7 // fabs v23.4s, v7.4s
	WORD $0x4e31f610 // fmax v16.4s, v16.4s, v17.4s
	WORD $0x4e33f652 // fmax v18.4s, v18.4s, v19.4s
	WORD $0x4e35f694 // fmax v20.4s, v20.4s, v21.4s
	WORD $0x4e37f6d6 // fmax v22.4s, v22.4s, v23.4s
	WORD $0x4e32f610 // fmax v16.4s, v16.4s, v18.4s
	WORD $0x4e36f694 // fmax v20.4s, v20.4s, v22.4s
	WORD $0x4e34f610 // fmax v16.4s, v16.4s, v20.4s
	WORD $0x6e30fa10 // fmaxv s16, v16.4s
	// d = RoundF16(amax/127); id = 127/amax, 0 unless below +Inf.
	WORD $0x1e3e1a11 // fdiv s17, s16, s30
	WORD $0x1e23c231 // fcvt h17, s17
	WORD $0x1ee24231 // fcvt s17, h17
	FMOVS.P F17, 4(R3)
	WORD $0x1e301bd2 // fdiv s18, s30, s16
	WORD $0x1e3d2240 // fcmp s18, s29
	WORD $0x1e3f4e52 // fcsel s18, s18, s31, mi
	WORD $0x4f929000 // fmul v0.4s, v0.4s, v18.s[0]
	WORD $0x4f929021 // fmul v1.4s, v1.4s, v18.s[0]
	WORD $0x4f929042 // fmul v2.4s, v2.4s, v18.s[0]
	WORD $0x4f929063 // fmul v3.4s, v3.4s, v18.s[0]
	WORD $0x4f929084 // fmul v4.4s, v4.4s, v18.s[0]
	WORD $0x4f9290a5 // fmul v5.4s, v5.4s, v18.s[0]
	WORD $0x4f9290c6 // fmul v6.4s, v6.4s, v18.s[0]
	WORD $0x4f9290e7 // fmul v7.4s, v7.4s, v18.s[0]
	WORD $0x4e21a800 // fcvtns v0.4s, v0.4s
	WORD $0x4e21a821 // fcvtns v1.4s, v1.4s
	WORD $0x4e21a842 // fcvtns v2.4s, v2.4s
	WORD $0x4e21a863 // fcvtns v3.4s, v3.4s
	WORD $0x4e21a884 // fcvtns v4.4s, v4.4s
	WORD $0x4e21a8a5 // fcvtns v5.4s, v5.4s
	WORD $0x4e21a8c6 // fcvtns v6.4s, v6.4s
	WORD $0x4e21a8e7 // fcvtns v7.4s, v7.4s
	WORD $0x0e614800 // sqxtn v0.4h, v0.4s
	WORD $0x4e614820 // sqxtn2 v0.8h, v1.4s
	WORD $0x0e614842 // sqxtn v2.4h, v2.4s
	WORD $0x4e614862 // sqxtn2 v2.8h, v3.4s
	WORD $0x0e614884 // sqxtn v4.4h, v4.4s
	WORD $0x4e6148a4 // sqxtn2 v4.8h, v5.4s
	WORD $0x0e6148c6 // sqxtn v6.4h, v6.4s
	WORD $0x4e6148e6 // sqxtn2 v6.8h, v7.4s
	WORD $0x0e214818 // sqxtn v24.8b, v0.8h
	WORD $0x4e214858 // sqxtn2 v24.16b, v2.8h
	WORD $0x0e214899 // sqxtn v25.8b, v4.8h
	WORD $0x4e2148d9 // sqxtn2 v25.16b, v6.8h
	VST1.P [V24.B16, V25.B16], 32(R2)
	SUBS $1, R1, R1
	BNE quantloop
	RET
`

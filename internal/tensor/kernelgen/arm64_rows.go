// The arm64 NEON kernels over weights in their GGUF layout
// (kernels_arm64.s): float dot products, the Q8_0 family's rows, and the
// file's order. The K-quant rows are in arm64_krows.go, tiled attention,
// the read probe and the quantiser in arm64_flash.go.

package main

import (
	"fmt"
	"strings"
)

// variant is how a row kernel sums int8 products: plain NEON (SMULL into
// int16, pairs widened and added into int32) or the dot product (SDOT,
// FEAT_DotProd). The two variants of a kernel differ in nothing else.
type variant struct {
	name string // the kernel's suffix: NEON, Dot
	dot  bool
}

var variants = []variant{{"NEON", false}, {"Dot", true}}

// intSum is one int32 accumulator of a row kernel: acc.4S = the products
// of each pair's bytes, four consecutive products to a lane; tmp is the
// plain NEON variant's scratch.
type intSum struct {
	acc, tmp int
	pairs    [][2]int
}

// intSums sums the products of each accumulator's pairs. The dot product
// zeroes every accumulator before its SDOTs.
func (g *gen) intSums(v variant, sums ...intSum) {
	if v.dot {
		for _, s := range sums {
			g.zero(s.acc)
		}
		for _, s := range sums {
			for _, p := range s.pairs {
				g.sdotV(s.acc, p[0], p[1])
			}
		}
		return
	}
	for _, s := range sums {
		for i, p := range s.pairs {
			if i == 0 {
				g.smull(s.acc, p[0], p[1])
				g.smull2(s.tmp, p[0], p[1])
				g.saddlp(s.acc, s.acc)
				g.sadalp(s.acc, s.tmp)
				continue
			}
			g.smull(s.tmp, p[0], p[1])
			g.sadalp(s.acc, s.tmp)
			g.smull2(s.tmp, p[0], p[1])
			g.sadalp(s.acc, s.tmp)
		}
	}
}

// raw writes asm verbatim, with {name} replaced by the kernel's name.
func (g *gen) raw(name, asm string) { g.WriteString(strings.ReplaceAll(asm, "{name}", name)) }

// args loads a kernel's arguments, 8 bytes apart, into R0, R1, …
func (g *gen) args(names ...string) {
	for i, a := range names {
		g.op("MOVD %s+%d(FP), R%d", a, 8*i, i)
	}
}

// floatDot is a float format of dotF32NEON and its kin: how its 16
// weights of a step are loaded and widened into four float32 vectors.
type floatDot struct {
	name, params, note string
	load               string
	widen              func(g *gen) // V0, V1 → V2, V3, V20, V21
	lanes              [4]int       // the four vectors of weights
}

var floatDots = []floatDot{
	{"F32", "a, b *float32", " (the caller passes whole 32-element groups)", "VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]", nil, [4]int{0, 1, 2, 3}},
	{"F16", "w *uint16, x *float32", "", "VLD1.P 32(R0), [V0.H8, V1.H8]", func(g *gen) {
		g.fcvtl(2, 0)
		g.fcvtl2(3, 0)
		g.fcvtl(20, 1)
		g.fcvtl2(21, 1)
	}, [4]int{2, 3, 20, 21}},
	{"BF16", "w *uint16, x *float32", ". dotF16NEON with BF16 widened by a shift", "VLD1.P 32(R0), [V0.H8, V1.H8]", func(g *gen) {
		g.shll(2, 0)
		g.shll2(3, 0)
		g.shll(20, 1)
		g.shll2(21, 1)
	}, [4]int{2, 3, 20, 21}},
}

// dotFloat writes dot<F>NEON: Σ w·x over n floats, four accumulators
// added pairwise at the end.
func dotFloat(g *gen, f floatDot) {
	name := "dot" + f.name + "NEON"
	fmt.Fprintf(g, "// func %s(%s, n int) float32\n// n: a positive multiple of 16%s.\n", name, f.params, f.note)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-28\n", name)
	g.args(strings.Fields(strings.NewReplacer(",", "", "*float32", "", "*uint16", "").Replace(f.params))...)
	g.op("MOVD n+16(FP), R2")
	g.op("LSR $4, R2, R2")
	for i := range 4 {
		g.zero(16 + i)
	}
	fmt.Fprintf(g, "%sloop:\n", strings.ToLower(f.name))
	g.op(f.load)
	g.op("VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]")
	if f.widen != nil {
		f.widen(g)
	}
	for i, l := range f.lanes {
		g.fmla(16+i, l, 4+i)
	}
	g.op("SUBS $1, R2, R2")
	g.op("BNE %sloop", strings.ToLower(f.name))
	g.raw(name, `	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS F16, ret+24(FP)
	RET

`)
}

// q8Format is a Q8_0-family weight format for the row kernels: its
// constants, and the decode of one block (R7 past its fp16 scale) into
// V0, V1 as 32 signed bytes.
type q8Format struct {
	name, desc, consts, decode string
}

var q8Formats = []q8Format{
	{"q80", "Q8_0 (34-byte blocks: fp16 scale, 32 int8)", "", "\tVLD1.P 32(R7), [V0.B16, V1.B16]\n"},
	{"q40", "Q4_0 (18-byte blocks: fp16 scale, 16 nibble bytes, quants 0-15 low nibbles, 16-31 high, minus 8)", `	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e51f // movi v31.16b, #8
`, `	VLD1.P 16(R7), [V0.B16]
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
`},
	{"q50", "Q5_0 (22-byte blocks: fp16 scale, 32 high bits, 16 nibble bytes; minus 16)", `	WORD $0x4f00e5fe // movi v30.16b, #0x0f
	WORD $0x4f00e61f // movi v31.16b, #16
	WORD $0x4f00e617 // movi v23.16b, #0x10
	MOVD $·q50Consts(SB), R13
	VLD1 (R13), [V27.B16, V28.B16, V29.B16]
`, `	MOVWU.P 4(R7), R12
	VLD1.P 16(R7), [V0.B16]
	WORD $0x4e040d98 // dup v24.4s, w12
	WORD $0x4e1c0319 // tbl v25.16b, {v24.16b}, v28.16b
	WORD $0x4e1d031a // tbl v26.16b, {v24.16b}, v29.16b
	WORD $0x4e3b8f39 // cmtst v25.16b, v25.16b, v27.16b
	WORD $0x4e3b8f5a // cmtst v26.16b, v26.16b, v27.16b
	WORD $0x6f0c0401 // ushr v1.16b, v0.16b, #4
	WORD $0x4e3e1c00 // and v0.16b, v0.16b, v30.16b
	WORD $0x4e371f39 // and v25.16b, v25.16b, v23.16b
	WORD $0x4e371f5a // and v26.16b, v26.16b, v23.16b
	WORD $0x4eb91c00 // orr v0.16b, v0.16b, v25.16b
	WORD $0x4eba1c21 // orr v1.16b, v1.16b, v26.16b
	WORD $0x6e3f8400 // sub v0.16b, v0.16b, v31.16b
	WORD $0x6e3f8421 // sub v1.16b, v1.16b, v31.16b
`},
}

// q50Consts: the bit of each byte lane (1, 2, ... 128, twice), then the
// TBL indices that spread qh's bytes 0-1 and 2-3 over sixteen lanes.
const q50Consts = `// q50Consts: the bit of each byte lane (1, 2, ... 128, twice), then the
// TBL indices that spread qh's bytes 0-1 and 2-3 over sixteen lanes.
DATA ·q50Consts+0(SB)/8, $0x8040201008040201
DATA ·q50Consts+8(SB)/8, $0x8040201008040201
DATA ·q50Consts+16(SB)/8, $0x0000000000000000
DATA ·q50Consts+24(SB)/8, $0x0101010101010101
DATA ·q50Consts+32(SB)/8, $0x0202020202020202
DATA ·q50Consts+40(SB)/8, $0x0303030303030303
GLOBL ·q50Consts(SB), RODATA|NOPTR, $48

`

// q8Rows1 writes <f>Rows1<v>(w *byte, rowBytes, nrows int, a *int8, d
// *float32, nb int, out *float32): dotQ8Lanes's bits.
func q8Rows1(g *gen, f q8Format, v variant) {
	name := f.name + "Rows1" + v.name
	fmt.Fprintf(g, "// func %s(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)\n", name)
	fmt.Fprintf(g, "// %s rows against one token's Q8_0 activations: dotQ8Lanes's eight\n", f.desc)
	g.raw(name, `// lanes (V16: 0-3, V17: 4-7), block by block float32(Σ)·(dw·da) added, then
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so that the bits are the Go ones.
// nrows, nb > 0.
TEXT ·{name}(SB), NOSPLIT, $0-56
`)
	g.args("w", "rowBytes", "nrows", "a", "d", "nb", "out")
	g.WriteString(f.consts)
	g.raw(name, `{name}row:
	MOVD R0, R7
	MOVD R3, R8
	MOVD R4, R9
	MOVD R5, R10
	WORD $0x6f00e410 // movi v16.2d, #0
	WORD $0x6f00e411 // movi v17.2d, #0
{name}block:
	MOVHU.P 2(R7), R11
`)
	g.WriteString(f.decode)
	g.raw(name, `	VLD1.P 32(R8), [V2.B16, V3.B16]
	FMOVS.P 4(R9), F4
	FMOVS R11, F5
	WORD $0x1ee240a5 // fcvt s5, h5
	FMULS F4, F5, F5
`)
	if v.dot {
		g.WriteString("\t// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3.\n")
		g.intSums(v, intSum{acc: 6, pairs: [][2]int{{0, 2}}}, intSum{acc: 7, pairs: [][2]int{{1, 3}}})
	} else {
		g.WriteString("\t// V6, V7: lane l the sum of products 4l..4l+3 of V0·V2, V1·V3\n\t// (int16 products, pairs widened to int32, then pairs of pairs).\n")
		g.smull(6, 0, 2)
		g.smull2(18, 0, 2)
		g.smull(7, 1, 3)
		g.smull2(19, 1, 3)
		for _, r := range []int{6, 18, 7, 19} {
			g.saddlp(r, r)
		}
		g.addp4s(6, 6, 18)
		g.addp4s(7, 7, 19)
	}
	g.raw(name, `	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4e21d8e7 // scvtf v7.4s, v7.4s
	WORD $0x4f8590c6 // fmul v6.4s, v6.4s, v5.s[0]
	WORD $0x4f8590e7 // fmul v7.4s, v7.4s, v5.s[0]
	WORD $0x4e26d610 // fadd v16.4s, v16.4s, v6.4s
	WORD $0x4e27d631 // fadd v17.4s, v17.4s, v7.4s
	SUBS $1, R10, R10
	BNE {name}block
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x6e104212 // ext v18.16b, v16.16b, v16.16b, #8
	WORD $0x0e32d610 // fadd v16.2s, v16.2s, v18.2s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R6)
	ADD R1, R0, R0
	SUBS $1, R2, R2
	BNE {name}row
	RET

`)
}

// arm64File is kernels_arm64.s.
func arm64File() []byte {
	var g gen
	g.WriteString(generated + `

// NEON kernels for arm64 (kernels_arm64.go chooses them). Each WORD is an
// instruction Go's arm64 assembler does not spell (most of Advanced SIMD's
// arithmetic), with its GNU mnemonic beside it; TestARM64Encodings checks
// every one. To encode a new one:
//
//	echo 'sdot v6.4s, v0.16b, v2.16b' | aarch64-linux-gnu-as -march=armv8.2-a+dotprod -o /tmp/w.o
//	aarch64-linux-gnu-objdump -d /tmp/w.o
//
// The NEON and dot-product variants of a kernel differ only in how the
// int8 products are summed.

//go:build arm64 && !purego

#include "textflag.h"

`)
	for _, f := range floatDots {
		dotFloat(&g, f)
	}
	for _, f := range q8Formats {
		for _, v := range variants {
			q8Rows1(&g, f, v)
		}
	}
	g.WriteString(q50Consts)
	for _, q5 := range []bool{false, true} {
		for _, v := range variants {
			q45kRows1(&g, q5, v)
		}
	}
	for _, v := range variants {
		q6kRows1(&g, v)
	}
	for _, f16 := range []bool{false, true} {
		flashScores(&g, f16)
		flashAcc(&g, f16)
	}
	g.WriteString(readSum)
	g.WriteString(quantQ80)
	return g.Bytes()
}

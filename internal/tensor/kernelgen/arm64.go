// The arm64 encoder: Go's assembler spells few NEON instructions, so each is
// a WORD encoded here with its GNU mnemonic beside it, and
// TestARM64Encodings re-assembles every mnemonic with GNU as.

package main

import (
	"bytes"
	"fmt"
)

type gen struct{ bytes.Buffer }

func (g *gen) word(w uint32, mnemonic string, args ...any) {
	fmt.Fprintf(g, "\tWORD $0x%08x // %s\n", w, fmt.Sprintf(mnemonic, args...))
}

func (g *gen) op(s string, args ...any) { fmt.Fprintf(g, "\t"+s+"\n", args...) }

func rdn(d, n int) uint32 { return uint32(n)<<5 | uint32(d) }

func rdnm(d, n, m int) uint32 { return uint32(m)<<16 | rdn(d, n) }

// elem encodes the H:L index bits of a by-element instruction on 32-bit
// elements.
func elem(i int) uint32 { return uint32(i&1)<<21 | uint32(i>>1)<<11 }

func (g *gen) sdot(d, n, m, i int) {
	g.word(0x4f80e000|elem(i)|rdnm(d, n, m), "sdot v%d.4s, v%d.16b, v%d.4b[%d]", d, n, m, i)
}
func (g *gen) fmulElem(d, n, m, i int) {
	g.word(0x4f809000|elem(i)|rdnm(d, n, m), "fmul v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}
func (g *gen) add4s(d, n, m int) {
	g.word(0x4ea08400|rdnm(d, n, m), "add v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmul(d, n, m int) {
	g.word(0x6e20dc00|rdnm(d, n, m), "fmul v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fadd(d, n, m int) {
	g.word(0x4e20d400|rdnm(d, n, m), "fadd v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) and(d, n, m int) {
	g.word(0x4e201c00|rdnm(d, n, m), "and v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) bit(d, n, m int) {
	g.word(0x6ea01c00|rdnm(d, n, m), "bit v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) scvtf(d, n int)  { g.word(0x4e21d800|rdn(d, n), "scvtf v%d.4s, v%d.4s", d, n) }
func (g *gen) fcvtl(d, n int)  { g.word(0x0e217800|rdn(d, n), "fcvtl v%d.4s, v%d.4h", d, n) }
func (g *gen) fcvtl2(d, n int) { g.word(0x4e217800|rdn(d, n), "fcvtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) dupW(d, wn int)  { g.word(0x4e040c00|rdn(d, wn), "dup v%d.4s, w%d", d, wn) }
func (g *gen) fsub(d, n, m int) {
	g.word(0x4ea0d400|rdnm(d, n, m), "fsub v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) mla(d, n, m int) {
	g.word(0x4ea09400|rdnm(d, n, m), "mla v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) mlaElem(d, n, m, i int) {
	g.word(0x6f800000|elem(i)|rdnm(d, n, m), "mla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}
func (g *gen) addp8h(d, n, m int) {
	g.word(0x4e60bc00|rdnm(d, n, m), "addp v%d.8h, v%d.8h, v%d.8h", d, n, m)
}
func (g *gen) sxtl(d, n int)  { g.word(0x0f10a400|rdn(d, n), "sxtl v%d.4s, v%d.4h", d, n) }
func (g *gen) sxtl2(d, n int) { g.word(0x4f10a400|rdn(d, n), "sxtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) sxtl8(d, n int) { g.word(0x0f08a400|rdn(d, n), "sxtl v%d.8h, v%d.8b", d, n) }
func (g *gen) shl4s(d, n, s int) {
	g.word(0x4f005400|uint32(32+s)<<16|rdn(d, n), "shl v%d.4s, v%d.4s, #%d", d, n, s)
}
func (g *gen) ushr4s(d, n, s int) {
	g.word(0x6f000400|uint32(64-s)<<16|rdn(d, n), "ushr v%d.4s, v%d.4s, #%d", d, n, s)
}
func (g *gen) sli4s(d, n, s int) {
	g.word(0x6f005400|uint32(32+s)<<16|rdn(d, n), "sli v%d.4s, v%d.4s, #%d", d, n, s)
}
func (g *gen) sli(d, n, s int) {
	g.word(0x6f005400|uint32(8+s)<<16|rdn(d, n), "sli v%d.16b, v%d.16b, #%d", d, n, s)
}
func (g *gen) zero(d int) { g.word(0x6f00e400|uint32(d), "movi v%d.2d, #0", d) }
func (g *gen) ushr(d, n, s int) {
	g.word(0x6f000400|uint32(16-s)<<16|rdn(d, n), "ushr v%d.16b, v%d.16b, #%d", d, n, s)
}
func (g *gen) shl(d, n, s int) {
	g.word(0x4f005400|uint32(8+s)<<16|rdn(d, n), "shl v%d.16b, v%d.16b, #%d", d, n, s)
}
func (g *gen) movi8(d int, imm uint8) { g.word(movi8Bits(d, imm), "movi v%d.16b, #0x%x", d, imm) }

// movi8Bits encodes MOVI Vd.16B, #imm.
func movi8Bits(d int, imm uint8) uint32 {
	return 0x4f00e400 | uint32(imm>>5)<<16 | uint32(imm&31)<<5 | uint32(d)
}

// The row kernels' (kernels_arm64.s) NEON encoders.

func (g *gen) smull(d, n, m int) {
	g.word(0x0e20c000|rdnm(d, n, m), "smull v%d.8h, v%d.8b, v%d.8b", d, n, m)
}
func (g *gen) smull2(d, n, m int) {
	g.word(0x4e20c000|rdnm(d, n, m), "smull2 v%d.8h, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) saddlp(d, n int) { g.word(0x4e602800|rdn(d, n), "saddlp v%d.4s, v%d.8h", d, n) }
func (g *gen) sadalp(d, n int) { g.word(0x4e606800|rdn(d, n), "sadalp v%d.4s, v%d.8h", d, n) }
func (g *gen) addp4s(d, n, m int) {
	g.word(0x4ea0bc00|rdnm(d, n, m), "addp v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) sdotV(d, n, m int) {
	g.word(0x4e809400|rdnm(d, n, m), "sdot v%d.4s, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) fmla(d, n, m int) {
	g.word(0x4e20cc00|rdnm(d, n, m), "fmla v%d.4s, v%d.4s, v%d.4s", d, n, m)
}
func (g *gen) fmlaElem(d, n, m, i int) {
	g.word(0x4f801000|elem(i)|rdnm(d, n, m), "fmla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i)
}
func (g *gen) shll(d, n int)  { g.word(0x2e613800|rdn(d, n), "shll v%d.4s, v%d.4h, #16", d, n) }
func (g *gen) shll2(d, n int) { g.word(0x6e613800|rdn(d, n), "shll2 v%d.4s, v%d.8h, #16", d, n) }
func (g *gen) orr(d, n, m int) {
	g.word(0x4ea01c00|rdnm(d, n, m), "orr v%d.16b, v%d.16b, v%d.16b", d, n, m)
}
func (g *gen) mov16b(d, n int) { g.word(0x4ea01c00|rdnm(d, n, n), "mov v%d.16b, v%d.16b", d, n) }

// AVX-512 BF16 dot-product tiles and BF16 rounding of activations.

package main

import (
	"bytes"
	"fmt"
)

// bf16Tiles are the (rows, tokens) shapes of the VDPBF16PS kernels: eight
// lanes of rows for one token (decode), four for two to six tokens, and
// one row at a time for the rows left over.
var bf16Tiles = [][2]int{{8, 1}, {1, 1}, {4, 2}, {1, 2}, {4, 3}, {1, 3}, {4, 4}, {1, 4}, {4, 5}, {1, 5}, {4, 6}, {1, 6}}

// bf16DP emits func bf16DP<R>x<T>(w unsafe.Pointer, laneStride, groups
// int, x *uint16, xstride, cols int, out *float32, ostride, rowBytes,
// outLane int) for AVX512_BF16: R lanes of BF16 rows as floatTile's
// (lane r's row i at w + r·laneStride + i·rowBytes, to out + t·ostride +
// r·outLane + 4i) against T tokens of BF16 activations (xstride bytes
// apart), whole rows of cols. Every (row, token) pair has one 16-lane
// accumulator to which each VDPBF16PS adds, per 32 columns, the products
// of columns 2l+1 and then 2l to lane l (the products are exact in
// float32; each add rounds to nearest even, and the instruction flushes
// subnormal inputs and results to zero). The last cols mod 32 columns are
// loaded under the mask K1, zeros past the row's end. Then the upper
// eight lanes are added to the lower and floatSum reduces those: the bits
// depend on the row and the token only, whatever the tile.
//
// Registers: accumulators Z0–Z23 (row r, token t in Z<rT+t>), weights
// from Z24, the token's activations in Z<24+R> (Z16 when R is 8); SI the
// group's first row, R12 it walking the columns, R13 lane 4's, BX the
// tokens' x and R14 token 3's, CX the steps left, DI cols mod 32.
func bf16DP(w *bytes.Buffer, R, T int) {
	name := fmt.Sprintf("bf16DP%dx%d", R, T)
	act := 24 + R
	if R == 8 {
		act = 16
	}
	if R*T > 24 || R > 8 || T > 6 || R == 8 && T > 1 {
		panic("bf16DP: registers")
	}
	fmt.Fprintf(w, "// func %s(w unsafe.Pointer, laneStride, groups int, x *uint16, xstride, cols int, out *float32, ostride, rowBytes, outLane int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	w.WriteString("\tMOVQ w+0(FP), SI\n\tMOVQ laneStride+8(FP), R8\n\tLEAQ (R8)(R8*2), R9\n\tMOVQ groups+16(FP), DX\n\tMOVQ out+48(FP), AX\n\tMOVQ xstride+32(FP), R10\n")
	w.WriteString("\tMOVQ cols+40(FP), DI\n\tANDQ $31, DI\n\tMOVQ DI, CX\n\tMOVL $1, BX\n\tSHLL CX, BX\n\tDECL BX\n\tKMOVD BX, K1\n")
	idx := [...]string{"(R12)", "(R12)(R8*1)", "(R12)(R8*2)", "(R12)(R9*1)", "(R13)", "(R13)(R8*1)", "(R13)(R8*2)", "(R13)(R9*1)"}
	xidx := [...]string{"(BX)", "(BX)(R10*1)", "(BX)(R10*2)", "(R14)", "(R14)(R10*1)", "(R14)(R10*2)"}
	acc := func(r, t int) int { return r*T + t }
	step := func(load string) {
		for r := range R {
			fmt.Fprintf(w, "\t%s %s, %sZ%d\n", load, idx[r], map[bool]string{true: "K1, ", false: ""}[load != "VMOVDQU16"], 24+r)
		}
		for t := range T {
			fmt.Fprintf(w, "\t%s %s, %sZ%d\n", load, xidx[t], map[bool]string{true: "K1, ", false: ""}[load != "VMOVDQU16"], act)
			for r := range R {
				dpbf16(w, act, 24+r, acc(r, t))
			}
		}
	}
	fmt.Fprintf(w, "%sgroup:\n", name)
	for i := range R * T {
		fmt.Fprintf(w, "\tVPXORD Z%[1]d, Z%[1]d, Z%[1]d\n", i)
	}
	w.WriteString("\tMOVQ SI, R12\n\tLEAQ (SI)(R8*4), R13\n\tMOVQ x+24(FP), BX\n\tLEAQ (R10)(R10*2), R14\n\tADDQ BX, R14\n")
	fmt.Fprintf(w, "\tMOVQ cols+40(FP), CX\n\tSHRQ $5, CX\n\tJZ %stail\n%[1]sloop:\n", name)
	step("VMOVDQU16")
	fmt.Fprintf(w, "\tADDQ $64, R12\n\tADDQ $64, R13\n\tADDQ $64, BX\n\tADDQ $64, R14\n\tDECQ CX\n\tJNZ %sloop\n%[1]stail:\n\tTESTQ DI, DI\n\tJZ %[1]ssum\n", name)
	step("VMOVDQU16.Z")
	fmt.Fprintf(w, "%ssum:\n", name)
	w.WriteString("\tMOVQ ostride+56(FP), CX\n\tLEAQ (CX)(CX*2), R12\n\tLEAQ (CX)(CX*4), R13\n\tMOVQ outLane+72(FP), R11\n\tMOVQ AX, BX\n")
	oidx := [...]string{"(BX)", "(BX)(CX*1)", "(BX)(CX*2)", "(BX)(R12*1)", "(BX)(CX*4)", "(BX)(R13*1)"}
	for r := range R {
		if r > 0 {
			w.WriteString("\tADDQ R11, BX\n")
		}
		for t := range T {
			a := acc(r, t)
			fmt.Fprintf(w, "\tVEXTRACTF64X4 $1, Z%d, Y24\n\tVADDPS Y24, Y%[1]d, Y%[1]d\n", a)
			floatSumT(w, a, 25, oidx[t])
		}
	}
	fmt.Fprintf(w, "\tADDQ rowBytes+64(FP), SI\n\tADDQ $4, AX\n\tDECQ DX\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// dpbf16 emits VDPBF16PS Z<a>, Z<b>, Z<dst> (Go's operand order: dst +=
// the pairwise products of a and b), which Go's assembler does not know,
// as its EVEX bytes: 62, P1 (R, X, B, R' inverted; map 0F38), P2 (W0,
// vvvv = b inverted, pp F3), P3 (512 bits, V' inverted), opcode 52, ModRM
// (register form: reg dst, rm a). TestX86Encodings checks them with GNU as.
func dpbf16(w *bytes.Buffer, a, b, dst int) {
	p1 := 0x02
	for _, f := range []struct {
		bit  int
		zero bool
	}{{0x80, dst&8 == 0}, {0x40, a&16 == 0}, {0x20, a&8 == 0}, {0x10, dst&16 == 0}} {
		if f.zero {
			p1 |= f.bit
		}
	}
	p2 := (^b&15)<<3 | 0x04 | 0x02
	p3 := 0x40
	if b&16 == 0 {
		p3 |= 0x08
	}
	modrm := 0xc0 | (dst&7)<<3 | a&7
	fmt.Fprintf(w, "\tBYTE $0x62; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x52; BYTE $0x%02x // VDPBF16PS Z%d, Z%d, Z%d\n", p1, p2, p3, modrm, a, b, dst)
}

// bf16Round emits roundBF16AVX2(x, dst *float32, n int) (pack false) or
// packBF16AVX512(x *float32, dst *uint16, n int) (pack: the BF16 bits the
// VDPBF16PS kernels read), n a positive multiple of 8: F32ToBF16's
// integer rounding to nearest even, NaNs made quiet.
func bf16Round(w *bytes.Buffer, pack bool) {
	name, sig, dstStep, store := "roundBF16AVX2", "x, dst *float32, n int", 32, "\tVPAND Y12, Y2, Y2\n\tVMOVDQU Y2, (DI)\n"
	if pack {
		name, sig, dstStep, store = "packBF16AVX512", "x *float32, dst *uint16, n int", 16, "\tVPSRLD $16, Y2, Y2\n\tVPMOVDW Y2, (DI)\n"
	}
	fmt.Fprintf(w, "// func %s(%s)\nTEXT ·%[1]s(SB), NOSPLIT, $0-24\n", name, sig)
	w.WriteString("\tMOVQ x+0(FP), SI\n\tMOVQ dst+8(FP), DI\n\tMOVQ n+16(FP), CX\n\tSHRQ $3, CX\n")
	w.WriteString("\tVMOVDQU bf16rnd<>(SB), Y10\n\tVMOVDQU bf16one<>(SB), Y11\n\tVMOVDQU bf16hi<>(SB), Y12\n\tVMOVDQU f32abs<>(SB), Y13\n\tVMOVDQU f32inf<>(SB), Y14\n\tVMOVDQU f32quiet<>(SB), Y15\n")
	fmt.Fprintf(w, "%sloop:\n", name)
	w.WriteString("\tVMOVDQU (SI), Y0\n\tVPSRLD $16, Y0, Y1\n\tVPAND Y11, Y1, Y1\n\tVPADDD Y10, Y0, Y2\n\tVPADDD Y1, Y2, Y2\n\tVPAND Y13, Y0, Y3\n\tVPCMPGTD Y14, Y3, Y3\n\tVPOR Y15, Y0, Y4\n\tVPBLENDVB Y3, Y4, Y2, Y2\n")
	fmt.Fprintf(w, "%s\tADDQ $32, SI\n\tADDQ $%d, DI\n\tDECQ CX\n\tJNZ %sloop\n\tVZEROUPPER\n\tRET\n\n", store, dstStep, name)
}

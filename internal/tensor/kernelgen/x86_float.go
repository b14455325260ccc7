// Tiles of float rows × tokens (F16, BF16, F32) and float decode lanes.

package main

import (
	"bytes"
	"fmt"
)

// floatTiles are the (rows, tokens) tiles of the F16, BF16 and F32
// kernels for batches: three rows × two to four tokens (up to twelve
// accumulators, each weight vector loaded or converted once for every
// token), and one row for the rows left over (and one token's).
var floatTiles = [][2]int{{1, 1}, {3, 2}, {1, 2}, {3, 3}, {1, 3}, {3, 4}, {1, 4}}

// floatBytes is the size of one weight of each float kind.
var floatBytes = map[string]int{"f16": 2, "bf16": 2, "f32": 4}

// floatLoad emits 8 weights at addr widened to float32 in Y<y>.
func floatLoad(w *bytes.Buffer, kind, addr string, y int) {
	switch kind {
	case "f16":
		fmt.Fprintf(w, "\tVCVTPH2PS %s, Y%d\n", addr, y)
	case "bf16":
		fmt.Fprintf(w, "\tVPMOVZXWD %s, Y%d\n\tVPSLLD $16, Y%[2]d, Y%[2]d\n", addr, y)
	default:
		fmt.Fprintf(w, "\tVMOVUPS %s, Y%d\n", addr, y)
	}
}

// floatSum emits the float kernels' one reduction of accumulator Y<a>,
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), stored at addr (uses X15).
func floatSum(w *bytes.Buffer, a int, addr string) { floatSumT(w, a, 15, addr) }

// floatLoop emits the column loop shared by the float kernels: steps
// (from the frame) steps of 8 columns, two per iteration, step(k)
// emitting columns 8k..8k+7 from the walking pointers, which advance by
// the byte counts in adv.
func floatLoop(w *bytes.Buffer, name string, step func(k int), adv map[string]int) {
	fmt.Fprintf(w, "\tMOVQ steps+40(FP), CX\n\tSHRQ $1, CX\n\tJZ %sodd\n%[1]sloop:\n", name)
	step(0)
	step(1)
	for _, reg := range []string{"R12", "R13", "BX"} {
		if adv[reg] != 0 {
			fmt.Fprintf(w, "\tADDQ $%d, %s\n", 2*adv[reg], reg)
		}
	}
	fmt.Fprintf(w, "\tDECQ CX\n\tJNZ %sloop\n%[1]sodd:\n\tMOVQ steps+40(FP), CX\n\tANDQ $1, CX\n\tJZ %[1]ssum\n", name)
	step(0)
	fmt.Fprintf(w, "%ssum:\n", name)
}

// floatTile emits func <f16|bf16|f32>Tile<R>x<T>AVX2(w unsafe.Pointer,
// laneStride, groups int, x *float32, xstride, steps int, out *float32,
// ostride, rowBytes, outLane int): R lanes of rows laneStride bytes apart,
// each a run of groups consecutive rows (rowBytes apart), against T tokens
// (xstride bytes apart); lane r's row i and token t go to out +
// t·ostride + r·outLane + 4i, the dot product of the first 8·steps
// elements. Lanes give each of the R rows read together its own long
// stream, as floatLanes does. Every (row, token) pair has one accumulator
// whose lane l sums, by FMA, elements 8i+l in order of i, then floatSum:
// every tile, floatLanes, and F32 rows widened from F16 ones give the
// same bits for a row and a token. Registers: accumulators from Y0,
// weights from Y12, x in Y15; SI the group's first row, R12 it walking the
// columns, BX the tokens' x, R8 = laneStride, R9 = 3·laneStride, R10 =
// xstride, R11 = 3·xstride, DX the groups left, AX out.
func floatTile(w *bytes.Buffer, kind string, R, T int) {
	name := fmt.Sprintf("%sTile%dx%dAVX2", kind, R, T)
	if R*T+R+1 > 16 || R > 3 {
		panic("floatTile: registers")
	}
	eb := floatBytes[kind]
	fmt.Fprintf(w, "// func %s(w unsafe.Pointer, laneStride, groups int, x *float32, xstride, steps int, out *float32, ostride, rowBytes, outLane int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	w.WriteString("\tMOVQ w+0(FP), SI\n\tMOVQ laneStride+8(FP), R8\n\tLEAQ (R8)(R8*2), R9\n\tMOVQ groups+16(FP), DX\n\tMOVQ out+48(FP), AX\n")
	w.WriteString("\tMOVQ xstride+32(FP), R10\n\tLEAQ (R10)(R10*2), R11\n")
	idx := [...]string{"", "(R8*1)", "(R8*2)", "(R9*1)"}
	xidx := [...]string{"", "(R10*1)", "(R10*2)", "(R11*1)"}
	acc := func(r, t int) int { return r*T + t }
	fmt.Fprintf(w, "%sgroup:\n", name)
	for i := range R * T {
		fmt.Fprintf(w, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", i)
	}
	w.WriteString("\tMOVQ SI, R12\n\tMOVQ x+24(FP), BX\n")
	floatLoop(w, name, func(k int) {
		for r := range R {
			floatLoad(w, kind, fmt.Sprintf("%d(R12)%s", 8*eb*k, idx[r]), 12+r)
		}
		for t := range T {
			fmt.Fprintf(w, "\tVMOVUPS %d(BX)%s, Y15\n", 32*k, xidx[t])
			for r := range R {
				fmt.Fprintf(w, "\tVFMADD231PS Y15, Y%d, Y%d\n", 12+r, acc(r, t))
			}
		}
	}, map[string]int{"R12": 8 * eb, "BX": 32})
	w.WriteString("\tMOVQ ostride+56(FP), CX\n\tLEAQ (CX)(CX*2), R12\n\tMOVQ outLane+72(FP), R13\n")
	for r := range R {
		base := "AX"
		if r > 0 {
			fmt.Fprintf(w, "\tLEAQ (AX)(R13*%d), BX\n", r)
			base = "BX"
		}
		for t := range T {
			floatSum(w, acc(r, t), fmt.Sprintf("(%s)%s", base, [...]string{"", "(CX*1)", "(CX*2)", "(R12*1)"}[t]))
		}
	}
	fmt.Fprintf(w, "\tADDQ rowBytes+64(FP), SI\n\tADDQ $4, AX\n\tDECQ DX\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// floatLanes emits func <kind>Lanes8AVX2(w unsafe.Pointer, laneStride,
// groups int, x *float32, rowBytes, steps int, out *float32, outLane int),
// decode's kernel: eight lanes of rows laneStride bytes apart, each a run
// of groups consecutive rows (rowBytes apart), against one token; lane
// j's row i goes to out + j·outLane + 4i. The eight accumulators hide the
// FMA latency, and each lane reads one long stream: eight consecutive
// rows instead, as short as Qwen2.5-0.5B's 896 columns (1.8 KB), end
// before the hardware prefetcher has learnt them (F16 at 20 GB/s against
// 34 here, on two threads). The sums are floatTile's, bit for bit.
// Registers as floatTile's, with R13 the fifth lane walking the columns,
// DX = rowBytes and R10 the groups left.
func floatLanes(w *bytes.Buffer, kind string) {
	name := kind + "Lanes8AVX2"
	eb := floatBytes[kind]
	fmt.Fprintf(w, "// func %s(w unsafe.Pointer, laneStride, groups int, x *float32, rowBytes, steps int, out *float32, outLane int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-64\n", name)
	w.WriteString("\tMOVQ w+0(FP), SI\n\tMOVQ laneStride+8(FP), R8\n\tLEAQ (R8)(R8*2), R9\n\tMOVQ groups+16(FP), R10\n\tMOVQ rowBytes+32(FP), DX\n\tMOVQ out+48(FP), AX\n")
	idx := [...]string{"", "(R8*1)", "(R8*2)", "(R9*1)"}
	fmt.Fprintf(w, "%sgroup:\n", name)
	for i := range 8 {
		fmt.Fprintf(w, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", i)
	}
	w.WriteString("\tMOVQ SI, R12\n\tLEAQ (SI)(R8*4), R13\n\tMOVQ x+24(FP), BX\n")
	floatLoop(w, name, func(k int) {
		fmt.Fprintf(w, "\tVMOVUPS %d(BX), Y15\n", 32*k)
		for r := range 8 {
			base := "R12"
			if r >= 4 {
				base = "R13"
			}
			y := 8 + r%6
			floatLoad(w, kind, fmt.Sprintf("%d(%s)%s", 8*eb*k, base, idx[r%4]), y)
			fmt.Fprintf(w, "\tVFMADD231PS Y15, Y%d, Y%d\n", y, r)
		}
	}, map[string]int{"R12": 8 * eb, "R13": 8 * eb, "BX": 32})
	w.WriteString("\tMOVQ outLane+56(FP), CX\n\tLEAQ (CX)(CX*2), R12\n\tLEAQ (AX)(CX*4), BX\n")
	for r := range 8 {
		base := "AX"
		if r >= 4 {
			base = "BX"
		}
		floatSum(w, r, fmt.Sprintf("(%s)%s", base, [...]string{"", "(CX*1)", "(CX*2)", "(R12*1)"}[r%4]))
	}
	fmt.Fprintf(w, "\tADDQ DX, SI\n\tADDQ $4, AX\n\tDECQ R10\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// floatTileZ emits f32TileZ4x8(w unsafe.Pointer, laneStride, groups int,
// x *float32, xstride, steps int, out *float32, ostride, rowBytes,
// outLane int): floatTile's F32 tile on 512-bit registers (AVX-512F) for
// four lanes of rows and eight tokens. Each register holds two tokens'
// 8-lane accumulators of one row side by side (the row's eight weights
// broadcast to both halves, the two tokens' activations one per half, as
// pairTokens lays them out: pair p at x + p·xstride bytes, 64 bytes per
// step), so every (row, token) pair runs floatTile's FMAs in floatTile's
// order and is reduced by floatSum: the same bits, at twice the FMA width.
//
// Registers: Z0–Z15 the accumulators (row r, tokens 2p and 2p+1 in
// Z<4r+p>), Z16–Z19 the rows' weights, Z20–Z23 the token pairs'
// activations, Y24 and X25 the reduction's.
func floatTileZ(w *bytes.Buffer) {
	const R, P = 4, 4
	name := "f32TileZ4x8"
	fmt.Fprintf(w, "// func %s(w unsafe.Pointer, laneStride, groups int, x *float32, xstride, steps int, out *float32, ostride, rowBytes, outLane int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	w.WriteString("\tMOVQ w+0(FP), SI\n\tMOVQ laneStride+8(FP), R8\n\tLEAQ (R8)(R8*2), R9\n\tMOVQ groups+16(FP), DX\n\tMOVQ out+48(FP), AX\n")
	w.WriteString("\tMOVQ xstride+32(FP), R10\n\tLEAQ (R10)(R10*2), R11\n")
	idx := [...]string{"", "(R8*1)", "(R8*2)", "(R9*1)"}
	xidx := [...]string{"", "(R10*1)", "(R10*2)", "(R11*1)"}
	fmt.Fprintf(w, "%sgroup:\n", name)
	for i := range R * P {
		fmt.Fprintf(w, "\tVPXORD Z%[1]d, Z%[1]d, Z%[1]d\n", i)
	}
	w.WriteString("\tMOVQ SI, R12\n\tMOVQ x+24(FP), BX\n")
	floatLoop(w, name, func(k int) {
		for r := range R {
			fmt.Fprintf(w, "\tVBROADCASTF64X4 %d(R12)%s, Z%d\n", 32*k, idx[r], 16+r)
		}
		for p := range P {
			fmt.Fprintf(w, "\tVMOVUPS %d(BX)%s, Z%d\n", 64*k, xidx[p], 20+p)
			for r := range R {
				fmt.Fprintf(w, "\tVFMADD231PS Z%d, Z%d, Z%d\n", 20+p, 16+r, 4*r+p)
			}
		}
	}, map[string]int{"R12": 32, "BX": 64})
	w.WriteString("\tMOVQ ostride+56(FP), CX\n\tLEAQ (CX)(CX*2), R12\n\tLEAQ (AX)(CX*4), R14\n\tMOVQ outLane+72(FP), R13\n")
	oidx := [...]string{"", "(CX*1)", "(CX*2)", "(R12*1)"}
	for r := range R {
		for p := range P {
			a := 4*r + p
			fmt.Fprintf(w, "\tVEXTRACTF64X4 $1, Z%d, Y24\n", a)
			for i, y := range []int{a, 24} {
				t := 2*p + i
				base := "AX"
				if t >= 4 {
					base = "R14"
				}
				switch r {
				case 1, 2:
					fmt.Fprintf(w, "\tLEAQ (%s)(R13*%d), BX\n", base, r)
					base = "BX"
				case 3:
					fmt.Fprintf(w, "\tLEAQ (%s)(R13*2), BX\n\tADDQ R13, BX\n", base)
					base = "BX"
				}
				floatSumT(w, y, 25, fmt.Sprintf("(%s)%s", base, oidx[t%4]))
			}
		}
	}
	fmt.Fprintf(w, "\tADDQ rowBytes+64(FP), SI\n\tADDQ $4, AX\n\tDECQ DX\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", name)
}

// floatSumT is floatSum with the temporary X<t> (past 15, the extract's
// EVEX form; the rest take either register file).
func floatSumT(w *bytes.Buffer, a, t int, addr string) {
	extract := "VEXTRACTF128"
	if a > 15 || t > 15 {
		extract = "VEXTRACTF32X4"
	}
	fmt.Fprintf(w, "\t%[4]s $1, Y%[1]d, X%[2]d\n\tVADDPS X%[2]d, X%[1]d, X%[1]d\n\tVPERMILPS $0x4E, X%[1]d, X%[2]d\n\tVADDPS X%[2]d, X%[1]d, X%[1]d\n\tVPERMILPS $0xB1, X%[1]d, X%[2]d\n\tVADDSS X%[2]d, X%[1]d, X%[1]d\n\tVMOVSS X%[1]d, %[3]s\n", a, t, addr, extract)
}

// roundActs: activations rounded through F16 (F16C, to nearest even:
// RoundF16's bits, NaN payloads aside), n a positive multiple of 8; BF16's
// are bf16Round's.
const roundActs = `// func roundF16AVX2(x, dst *float32, n int)
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
roundf16loop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VCVTPH2PS X0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ roundf16loop
	VZEROUPPER
	RET

`

// widenKernel emits func <kind>ToF32AVX2(src *uint16, dst *float32, n
// int), n a positive multiple of 8: F16 or BF16 rows widened (exactly)
// once for a batch's F32 tiles.
func widenKernel(w *bytes.Buffer, kind string) {
	name := kind + "ToF32AVX2"
	fmt.Fprintf(w, "// func %s(src *uint16, dst *float32, n int)\nTEXT ·%[1]s(SB), NOSPLIT, $0-24\n\tMOVQ src+0(FP), SI\n\tMOVQ dst+8(FP), DI\n\tMOVQ n+16(FP), CX\n\tSHRQ $3, CX\n%stof32loop:\n", name, kind)
	floatLoad(w, kind, "(SI)", 0)
	fmt.Fprintf(w, "\tVMOVUPS Y0, (DI)\n\tADDQ $16, SI\n\tADDQ $32, DI\n\tDECQ CX\n\tJNZ %stof32loop\n\tVZEROUPPER\n\tRET\n\n", kind)
}

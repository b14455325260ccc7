//go:build ignore

// gen_kernels writes kernels_amd64.s, the amd64 SIMD kernels of package
// tensor: `go generate ./internal/tensor` (the output is committed, so a
// plain go build needs nothing; TestKernelsGenerated checks it is current).
// Each kernel is emitted from one template per weight format and one per
// instruction set (AVX2, AVX-512 VNNI), which keeps the near-identical
// functions in step. The families: row kernels and 4-token tiles over
// weights in their GGUF layout (rows1, rows4, q4kTile, q6kTile), kernels
// over repacked weights whose SIMD lanes are rows (q80x8, q4kxR, q6kxR),
// tiles of float rows × tokens (floatTile), tiled attention (flash), and
// exp.
//
// In the row kernels register use is fixed: Y10–Y15 hold constants, Y0
// and Y5–Y7 the per-token accumulators, Y1 the decoded signed weights, Y3
// their magnitudes, Y2 the weight scale; the other families say theirs.
package main

import (
	"bytes"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

type format struct {
	name    string // Go suffix: q80, q40, q50
	bytes   int    // block bytes
	decode  string // weight block at (R12) → Y1 as 32 signed bytes; may use Y3
	udecode string // the same as unsigned bytes w+off (off 128, 8, 16), for VNNI
}

var formats = []format{
	{"q80", 34, "\tVMOVDQU 2(R12), Y1\n", "\tVPXOR 2(R12), Y13, Y1\n"},
	{"q40", 18, `	VMOVDQU 2(R12), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND Y14, Y1, Y1
	VPSUBB Y13, Y1, Y1
`, `	VMOVDQU 2(R12), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND Y14, Y1, Y1
`},
	// Q5_0: nibble | (high bit ? 0 : 0xF0) is the signed value q-16.
	{"q50", 22, `	VMOVDQU 6(R12), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND Y14, Y1, Y1
	VPBROADCASTD 2(R12), Y3
	VPSHUFB Y12, Y3, Y3
	VPOR Y11, Y3, Y3
	VPCMPEQB Y10, Y3, Y3
	VPANDN Y13, Y3, Y3
	VPOR Y3, Y1, Y1
`, `	VMOVDQU 6(R12), X1
	VPSRLW $4, X1, X3
	VINSERTI128 $1, X3, Y1, Y1
	VPAND Y14, Y1, Y1
	VPBROADCASTD 2(R12), Y3
	VPSHUFB Y12, Y3, Y3
	VPOR Y11, Y3, Y3
	VPCMPEQB Y10, Y3, Y3
	VPAND Y13, Y3, Y3
	VPOR Y3, Y1, Y1
`},
}

type isa struct {
	name string // AVX2, VNNI
	vnni bool
}

// decode emits the weight block decode: signed quants and their magnitudes
// (Y3) for AVX2, unsigned w+off for VNNI.
func (s isa) decode(w *bytes.Buffer, f format) {
	if s.vnni {
		w.WriteString(f.udecode)
		return
	}
	w.WriteString(f.decode)
	w.WriteString("\tVPSIGNB Y1, Y1, Y3\n")
}

// dot emits, for the activation block at address act, the eight int32
// sums of four products Σ w·a into Y4. AVX2 multiplies |w| by a·sign(w);
// VNNI multiplies w+off by a, starting from the activation block's
// precomputed -off·Σa lanes, stored 32 bytes after its quants.
func (s isa) dot(w *bytes.Buffer, act string) {
	if s.vnni {
		fmt.Fprintf(w, "\tVMOVDQU %s, Y4\n\tVPDPBUSD %s, Y1, Y4\n", shiftAddr(act, 32), act)
		return
	}
	fmt.Fprintf(w, "\tVMOVDQU %s, Y4\n\tVPSIGNB Y1, Y4, Y4\n\tVPMADDUBSW Y4, Y3, Y4\n\tVPMADDWD Y15, Y4, Y4\n", act)
}

// actStep is the bytes per activation block: quants, plus the correction
// lanes for VNNI.
func (s isa) actStep() int {
	if s.vnni {
		return 64
	}
	return 32
}

var isas = []isa{{"AVX2", false}, {"VNNI", true}}

func constants(w *bytes.Buffer, f format, s isa) {
	fmt.Fprintf(w, "\tVMOVDQU ones16<>(SB), Y15\n")
	switch {
	case f.name == "q80" && s.vnni:
		fmt.Fprintf(w, "\tVMOVDQU high80<>(SB), Y13\n")
	case f.name == "q40":
		fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU eights<>(SB), Y13\n")
	case f.name == "q50":
		if s.vnni {
			fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU bit10<>(SB), Y13\n")
		} else {
			fmt.Fprintf(w, "\tVMOVDQU nib<>(SB), Y14\n\tVMOVDQU highf0<>(SB), Y13\n")
		}
		fmt.Fprintf(w, "\tVMOVDQU bitshuf<>(SB), Y12\n\tVMOVDQU bitmask<>(SB), Y11\n\tVPCMPEQB Y10, Y10, Y10\n")
	}
}

// reduce sums the eight lanes of acc into the low float of acc's X
// register in the fixed order ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), the
// order the pure-Go kernels reproduce.
func reduce(w *bytes.Buffer, acc string) {
	x := "X" + acc[1:]
	fmt.Fprintf(w, "\tVEXTRACTF128 $1, %s, X4\n\tVADDPS X4, %s, %s\n", acc, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0x4E, %s, X4\n\tVADDPS X4, %s, %s\n", x, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0xB1, %s, X4\n\tVADDSS X4, %s, %s\n", x, x, x)
}

// rows1 emits func <f><isa>Rows1(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32):
// out[r] = Σ_b dw(r,b)·d[b]·Σ_j w(r,b,j)·a[32b+j] for r < nrows. The
// loop takes two blocks per pass (then an odd one): decode is bound by
// instructions per block, not by the order of the adds, which stays
// block by block.
func rows1(w *bytes.Buffer, f format, s isa) {
	name := fmt.Sprintf("%sRows1%s", f.name, s.name)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *int8, d *float32, nb int, out *float32)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ a+24(FP), DI
	MOVQ d+32(FP), R8
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), R9
`)
	constants(w, f, s)
	fmt.Fprintf(w, "%[1]srow:\n\tVXORPS Y0, Y0, Y0\n\tMOVQ SI, R12\n\tMOVQ DI, BX\n\tMOVQ R8, DX\n\tMOVQ CX, R13\n\tSHRQ $1, R13\n\tJZ %[1]sodd\n%[1]sblock:\n", name)
	block := func(i int) {
		var dec bytes.Buffer
		s.decode(&dec, f)
		w.WriteString(shiftR12(dec.String(), i*f.bytes))
		fmt.Fprintf(w, "\tVPBROADCASTW %d(R12), X2\n\tVCVTPH2PS X2, Y2\n", i*f.bytes)
		if s.vnni {
			fmt.Fprintf(w, "\tVMULPS.BCST %d(DX), Y2, Y2\n", 4*i)
		} else {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(DX), Y9\n\tVMULPS Y9, Y2, Y2\n", 4*i)
		}
		s.dot(w, fmt.Sprintf("%d(BX)", i*s.actStep()))
		w.WriteString("\tVCVTDQ2PS Y4, Y4\n\tVMULPS Y2, Y4, Y4\n\tVADDPS Y4, Y0, Y0\n")
	}
	block(0)
	block(1)
	fmt.Fprintf(w, "\tADDQ $%d, R12\n\tADDQ $%d, BX\n\tADDQ $8, DX\n\tDECQ R13\n\tJNZ %sblock\n", 2*f.bytes, 2*s.actStep(), name)
	fmt.Fprintf(w, "%[1]sodd:\n\tTESTQ $1, CX\n\tJZ %[1]sdone\n", name)
	block(0)
	fmt.Fprintf(w, "%sdone:\n", name)
	reduce(w, "Y0")
	fmt.Fprintf(w, "\tVMOVSS X0, (R9)\n\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

// shiftAddr adds off to the displacement of a memory operand such as
// "(BX)", "64(BX)" or "(BX)(DI*1)".
func shiftAddr(addr string, off int) string {
	i := strings.Index(addr, "(")
	d, _ := strconv.Atoi(addr[:i])
	return fmt.Sprintf("%d%s", d+off, addr[i:])
}

var r12Addr = regexp.MustCompile(`(-?[0-9]*)\(R12\)`)

// shiftR12 adds off to every displacement from R12 in code.
func shiftR12(code string, off int) string {
	return r12Addr.ReplaceAllStringFunc(code, func(m string) string {
		d, _ := strconv.Atoi(r12Addr.FindStringSubmatch(m)[1])
		return fmt.Sprintf("%d(R12)", d+off)
	})
}

// rows4 emits the register tile over four tokens: each weight block is
// decoded once and multiplied into four activation rows (a + t·astride,
// scales d + t·dstride, outputs out + t·ostride, strides in bytes).
func rows4(w *bytes.Buffer, f format, s isa) {
	fmt.Fprintf(w, "// func %sRows4%s(w *byte, rowBytes, nrows int, a *int8, astride int, d *float32, dstride, nb int, out *float32, ostride int)\n", f.name, s.name)
	fmt.Fprintf(w, "TEXT ·%sRows4%s(SB), NOSPLIT, $0-80\n", f.name, s.name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ astride+32(FP), DI
	LEAQ (DI)(DI*2), R8
	MOVQ dstride+48(FP), CX
	LEAQ (CX)(CX*2), R14
	MOVQ out+64(FP), R9
`)
	constants(w, f, s)
	fmt.Fprintf(w, `row4:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+40(FP), DX
	MOVQ nb+56(FP), R13
block4:
`)
	s.decode(w, f)
	fmt.Fprintf(w, "\tMOVWLZX (R12), AX\n\tVMOVD AX, X2\n\tVCVTPH2PS X2, X2\n\tVBROADCASTSS X2, Y2\n")
	for t, acc := range []string{"Y0", "Y5", "Y6", "Y7"} {
		act := []string{"(BX)", "(BX)(DI*1)", "(BX)(DI*2)", "(BX)(R8*1)"}[t]
		sc := []string{"(DX)", "(DX)(CX*1)", "(DX)(CX*2)", "(DX)(R14*1)"}[t]
		s.dot(w, act)
		w.WriteString("\tVCVTDQ2PS Y4, Y4\n")
		if s.vnni {
			fmt.Fprintf(w, "\tVMULPS.BCST %s, Y2, Y9\n", sc)
		} else {
			fmt.Fprintf(w, "\tVBROADCASTSS %s, Y9\n\tVMULPS Y2, Y9, Y9\n", sc)
		}
		fmt.Fprintf(w, "\tVMULPS Y9, Y4, Y4\n\tVADDPS Y4, %s, %s\n", acc, acc)
	}
	fmt.Fprintf(w, "\tADDQ $%d, R12\n\tADDQ $%d, BX\n\tADDQ $4, DX\n\tDECQ R13\n\tJNZ block4\n", f.bytes, s.actStep())
	for _, acc := range []string{"Y0", "Y5", "Y6", "Y7"} {
		reduce(w, acc)
	}
	fmt.Fprintf(w, `	MOVQ ostride+72(FP), AX
	LEAQ (AX)(AX*2), BX
	VMOVSS X0, (R9)
	VMOVSS X5, (R9)(AX*1)
	VMOVSS X6, (R9)(AX*2)
	VMOVSS X7, (R9)(BX*1)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ row4
	VZEROUPPER
	RET

`)
}

func data(w *bytes.Buffer, name string, qwords [4]uint64) {
	for i, q := range qwords {
		fmt.Fprintf(w, "DATA %s<>+%d(SB)/8, $0x%016x\n", name, i*8, q)
	}
	fmt.Fprintf(w, "GLOBL %s<>(SB), RODATA|NOPTR, $32\n\n", name)
}

func rep(q uint64) [4]uint64 { return [4]uint64{q, q, q, q} }

func main() {
	var w bytes.Buffer
	w.WriteString("// Code generated by gen_kernels.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	data(&w, "ones16", rep(0x0001000100010001))
	data(&w, "nib", rep(0x0f0f0f0f0f0f0f0f))
	data(&w, "eights", rep(0x0808080808080808))
	data(&w, "highf0", rep(0xf0f0f0f0f0f0f0f0))
	data(&w, "bitshuf", [4]uint64{0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303})
	data(&w, "bitmask", rep(0x7fbfdfeff7fbfdfe))
	data(&w, "m30", rep(0x3030303030303030))
	data(&w, "high80", rep(0x8080808080808080))
	data(&w, "bit10", rep(0x1010101010101010))
	data(&w, "c3f", rep(0x3f3f3f3f3f3f3f3f))
	data(&w, "c03", rep(0x0303030303030303))
	data(&w, "cff", rep(0x000000ff000000ff))
	for _, f := range formats {
		for _, s := range isas {
			rows1(&w, f, s)
			rows4(&w, f, s)
		}
	}
	w.WriteString(readKernel)
	expKernels(&w)
	w.WriteString(kquantKernels)
	for i := range 8 {
		c := uint64(2 * i)
		lo, hi := c*0x0001000100010001, (c+1)*0x0001000100010001
		data(&w, fmt.Sprintf("q6kperm%d", i), [4]uint64{lo, lo, hi, hi})
	}
	for _, f := range formats {
		for _, R := range []int{8, 16} {
			for _, tokens := range x8Tiles {
				qx8(&w, f, tokens, R)
			}
		}
	}
	for _, q5 := range []bool{false, true} {
		q4kxR(&w, 8, q5)
		q4kxR(&w, 16, q5)
	}
	q6kxR(&w, 8)
	q6kxR(&w, 16)
	for _, tokens := range []int{1, 4} {
		q4kTile(&w, tokens)
		q6kTile(&w, tokens)
	}
	flashKernels(&w)
	quantKernels(&w)
	quantQ8KKernel(&w)
	x8RecordsKernel(&w)
	for _, kind := range []string{"f16", "bf16", "f32"} {
		floatLanes(&w, kind)
		for _, rt := range floatTiles {
			floatTile(&w, kind, rt[0], rt[1])
		}
	}
	widenKernel(&w, "f16")
	widenKernel(&w, "bf16")
	floatTileZ(&w)
	data(&w, "bf16rnd", rep(0x00007fff00007fff))
	data(&w, "bf16one", rep(0x0000000100000001))
	data(&w, "bf16hi", rep(0xffff0000ffff0000))
	data(&w, "f32abs", rep(0x7fffffff7fffffff))
	data(&w, "f32inf", rep(0x7f8000007f800000))
	data(&w, "f32quiet", rep(0x0040000000400000))
	w.WriteString(roundActs)
	bf16Round(&w, false)
	bf16Round(&w, true)
	for _, rt := range bf16Tiles {
		bf16DP(&w, rt[0], rt[1])
	}
	for _, f := range formats {
		for _, tokens := range []int{4, 2, 1} {
			qx8AVX2(&w, f, tokens)
		}
		qx8AVX2S(&w, f)
	}
	data(&w, "dup01", [4]uint64{0x0504050401000100, 0x0d0c0d0c09080908, 0x0504050401000100, 0x0d0c0d0c09080908})
	for _, u := range []kUnits{{4, 1}, {1, 1}} {
		q4kx8AVX2(&w, u)
		q5kx8AVX2(&w, u)
		q6kx8AVX2(&w, u)
	}
	streams := kUnits{1, x8Streams}
	q45kx8AVX2S(&w, streams, false)
	q45kx8AVX2S(&w, streams, true)
	q6kx8AVX2S(&w, streams)
	out := strings.ReplaceAll(w.String(), "\n\n\n", "\n\n")
	path := "kernels_amd64.s"
	if len(os.Args) > 1 {
		path = os.Args[1] // for TestKernelsGenerated
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		log.Fatal(err)
	}
}

// readKernel: the read-bandwidth probe (ReadRate). It sums eight lanes
// of n bytes each (n a positive multiple of 32), lane bytes apart, as
// 64-bit words, so that nothing but the loads limits it, and in eight
// interleaved streams, as the float decode kernels (floatLanes) read their
// rows: one stream per thread reads about half as fast here
// (BenchmarkReadStreams), so it is no ceiling for them.
const readKernel = `// func readSumAVX2(p *byte, lane, n int) uint64
TEXT ·readSumAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ lane+8(FP), R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R13
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
readloop:
	VPADDQ (SI), Y0, Y0
	VPADDQ (SI)(R8*1), Y1, Y1
	VPADDQ (SI)(R8*2), Y2, Y2
	VPADDQ (SI)(R9*1), Y3, Y3
	VPADDQ (R13), Y0, Y0
	VPADDQ (R13)(R8*1), Y1, Y1
	VPADDQ (R13)(R8*2), Y2, Y2
	VPADDQ (R13)(R9*1), Y3, Y3
	ADDQ $32, SI
	ADDQ $32, R13
	DECQ CX
	JNZ readloop
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, ret+24(FP)
	VZEROUPPER
	RET

`

// hsumInt leaves the sum of the eight int32 lanes of y (using X9) in the
// low lane of its X register; integer sums are exact in any order.
func hsumInt(w *strings.Builder, y string) {
	x := "X" + y[1:]
	fmt.Fprintf(w, "\tVEXTRACTI128 $1, %s, X9\n\tVPADDD X9, %s, %s\n", y, x, x)
	fmt.Fprintf(w, "\tVPSHUFD $0x4E, %s, X9\n\tVPADDD X9, %s, %s\n\tVPSHUFD $0xB1, %s, X9\n\tVPADDD X9, %s, %s\n", x, x, x, x, x, x)
}

// kquantKernels: Q4_K and Q6_K rows against Q8_K activations (a, one
// float scale d and sixteen int16 sums bsums per 256), in llama.cpp's
// integer formulation: per super-block an exact int32 Σ sc·Σ q·a, the
// minimums (Q4_K) or the −32 offset (Q6_K) from bsums, then two float
// operations per super-block in the order the pure-Go kernels use.
var kquantKernels = func() string {
	var w strings.Builder
	// Q4_K: func q4kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
	w.WriteString(`// func q4kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
TEXT ·q4kRows1AVX2(SB), NOSPLIT, $32-64
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+56(FP), R9
	VMOVDQU nib<>(SB), Y15
q4krow:
	VXORPS X0, X0, X0
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	MOVQ nb+48(FP), R13
q4kblock:
	MOVL 4(R12), AX
	MOVL 8(R12), CX
	MOVL 12(R12), R8
	MOVL CX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x3f3f3f3f, CX
	VMOVD CX, X8
	MOVL R8, CX
	SHRL $4, CX
	ANDL $0x0f0f0f0f, CX
	ORL R14, CX
	VPINSRD $1, CX, X8, X8
	MOVL AX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x0f0f0f0f, R8
	ORL R14, R8
	ANDL $0x3f3f3f3f, AX
	VMOVD AX, X1
	VPINSRD $1, R8, X1, X1
	VPMOVZXBW X1, X1
	VMOVDQU X1, 16(SP)
	VMOVDQU (DI), Y6
	VEXTRACTI128 $1, Y6, X7
	VPHADDW X7, X6, X6
	VPMOVZXBW X8, X8
	VPMADDWD X6, X8, X8
	VPSHUFD $0x4E, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xB1, X8, X9
	VPADDD X9, X8, X8
	VPXOR Y4, Y4, Y4
`)
	for k := range 4 {
		fmt.Fprintf(&w, "\tVMOVDQU %d(R12), Y1\n\tVPSRLW $4, Y1, Y2\n\tVPAND Y15, Y1, Y1\n\tVPAND Y15, Y2, Y2\n", 16+32*k)
		fmt.Fprintf(&w, "\tVPMADDUBSW %d(BX), Y1, Y1\n\tVPMADDUBSW %d(BX), Y2, Y2\n", 64*k, 64*k+32)
		fmt.Fprintf(&w, "\tVPBROADCASTW %d(SP), Y3\n\tVPMADDWD Y3, Y1, Y1\n\tVPBROADCASTW %d(SP), Y3\n\tVPMADDWD Y3, Y2, Y2\n", 16+4*k, 18+4*k)
		w.WriteString("\tVPADDD Y1, Y4, Y4\n\tVPADDD Y2, Y4, Y4\n")
	}
	hsumInt(&w, "Y4")
	w.WriteString(`	VCVTDQ2PS X4, X4
	VCVTDQ2PS X8, X8
	MOVL (R12), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMOVSS (DX), X11
	VMULSS X11, X10, X12
	VMOVSHDUP X10, X13
	VMULSS X11, X13, X13
	VMULSS X12, X4, X4
	VADDSS X4, X0, X0
	VMULSS X13, X8, X8
	VSUBSS X8, X0, X0
	ADDQ $144, R12
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ q4kblock
	VMOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ q4krow
	VZEROUPPER
	RET

// func q6kRows1AVX2(w *byte, rowBytes, nrows int, a *int8, d *float32, bsums *int16, nb int, out *float32)
TEXT ·q6kRows1AVX2(SB), NOSPLIT, $32-64
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+56(FP), R9
	VMOVDQU nib<>(SB), Y15
	VMOVDQU m30<>(SB), Y14
q6krow:
	VXORPS X0, X0, X0
	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	MOVQ nb+48(FP), R13
q6kblock:
	VPMOVSXBW 192(R12), Y5
	VMOVDQU Y5, 0(SP)
	VPMADDWD (DI), Y5, Y6
	VPXOR Y4, Y4, Y4
`)
	for n := range 2 {
		fmt.Fprintf(&w, "\tVMOVDQU %d(R12), Y1\n\tVMOVDQU %d(R12), Y2\n\tVMOVDQU %d(R12), Y3\n", 64*n, 64*n+32, 128+32*n)
		for k := range 4 {
			src := []string{"Y1", "Y2", "Y1", "Y2"}[k]
			if k < 2 {
				fmt.Fprintf(&w, "\tVPAND Y15, %s, Y7\n", src)
			} else {
				fmt.Fprintf(&w, "\tVPSRLW $4, %s, Y7\n\tVPAND Y15, Y7, Y7\n", src)
			}
			// high bits 2k, 2k+1 of qh to bits 4 and 5
			switch k {
			case 0:
				w.WriteString("\tVPSLLW $4, Y3, Y8\n")
			case 1:
				w.WriteString("\tVPSLLW $2, Y3, Y8\n")
			case 2:
				w.WriteString("\tVMOVDQA Y3, Y8\n")
			case 3:
				w.WriteString("\tVPSRLW $2, Y3, Y8\n")
			}
			c := 4*n + k
			fmt.Fprintf(&w, "\tVPAND Y14, Y8, Y8\n\tVPOR Y8, Y7, Y7\n\tVPMADDUBSW %d(BX), Y7, Y7\n", 32*c)
			fmt.Fprintf(&w, "\tVPBROADCASTW %d(SP), X9\n\tVPBROADCASTW %d(SP), X10\n\tVINSERTI128 $1, X10, Y9, Y9\n", 4*c, 4*c+2)
			w.WriteString("\tVPMADDWD Y9, Y7, Y7\n\tVPADDD Y7, Y4, Y4\n")
		}
	}
	hsumInt(&w, "Y4")
	hsumInt(&w, "Y6")
	w.WriteString(`	VPSLLD $5, X6, X6
	VPSUBD X6, X4, X4
	VCVTDQ2PS X4, X4
	MOVWLZX 208(R12), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VMULSS (DX), X10, X10
	VMULSS X10, X4, X4
	VADDSS X4, X0, X0
	ADDQ $210, R12
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ q6kblock
	VMOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ R10, SI
	DECQ R11
	JNZ q6krow
	VZEROUPPER
	RET
`)
	return w.String()
}()

// kTileBytes is what one Q8_K super-block of one token takes in the tiled
// activation layout of the VNNI K-quant kernels (Q8.KTile): for a tile of
// T tokens, T·256 quants, then T float scales, then T·16 int16 block sums.
const kTileBytes = 256 + 4 + 32

// q4kTile emits q4kRows<T>VNNI(w *byte, rowBytes, nrows int, a *byte, nb
// int, out *float32, ostride int): Q4_K rows against a tile of T tokens'
// Q8_K activations (ostride in bytes). Each super-block's scales and
// quants are unpacked once for all T tokens; per 32 quants and token one
// VPMADDUBSW and one VPDPWSSD with the sub-block scale broadcast from the
// stack. The minimums and the float steps follow dotQ4K's order.
func q4kTile(w *bytes.Buffer, T int) {
	name := fmt.Sprintf("q4kRows%dVNNI", T)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *byte, nb int, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $32-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+40(FP), R9
	MOVQ ostride+48(FP), R8
	LEAQ (R8)(R8*2), DI
	VMOVDQU nib<>(SB), Y15
%[1]srow:
`, name)
	for t := range T {
		fmt.Fprintf(w, "\tVXORPS X%[1]d, X%[1]d, X%[1]d\n", 4+t)
	}
	fmt.Fprintf(w, `	MOVQ SI, R12
	MOVQ a+24(FP), BX
	MOVQ nb+32(FP), R13
%[1]sblock:
	MOVL 4(R12), AX
	MOVL 8(R12), CX
	MOVL 12(R12), DX
	MOVL CX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x3f3f3f3f, CX
	VMOVD CX, X8
	MOVL DX, CX
	SHRL $4, CX
	ANDL $0x0f0f0f0f, CX
	ORL R14, CX
	VPINSRD $1, CX, X8, X8
	MOVL AX, R14
	SHRL $6, R14
	ANDL $0x03030303, R14
	SHLL $4, R14
	ANDL $0x0f0f0f0f, DX
	ORL R14, DX
	ANDL $0x3f3f3f3f, AX
	VMOVD AX, X9
	VPINSRD $1, DX, X9, X9
	VPMOVZXBW X9, X9
	VPUNPCKLWD X9, X9, X10
	VMOVDQU X10, 0(SP)
	VPUNPCKHWD X9, X9, X10
	VMOVDQU X10, 16(SP)
	VPMOVZXBW X8, X8
	VPUNPCKLWD X8, X8, X9
	VPUNPCKHWD X8, X8, X10
	VINSERTI128 $1, X10, Y9, Y14
	MOVL (R12), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
`, name)
	// One token alone gets four accumulators (Y0–Y3, one per 64 quants)
	// so that the VPDPWSSD chains overlap; a tile has one per token.
	accs := T
	if T == 1 {
		accs = 4
	}
	for t := range accs {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", t)
	}
	for k := range 4 {
		fmt.Fprintf(w, "\tVMOVDQU %d(R12), Y11\n\tVPSRLW $4, Y11, Y12\n\tVPAND Y15, Y11, Y11\n\tVPAND Y15, Y12, Y12\n", 16+32*k)
		for t := range T {
			acc := t
			if T == 1 {
				acc = k
			}
			fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y11, Y8\n\tVPDPWSSD.BCST %d(SP), Y8, Y%d\n", 256*t+64*k, 8*k, acc)
			fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y12, Y8\n\tVPDPWSSD.BCST %d(SP), Y8, Y%d\n", 256*t+64*k+32, 8*k+4, acc)
		}
	}
	if T == 1 {
		w.WriteString("\tVPADDD Y1, Y0, Y0\n\tVPADDD Y3, Y2, Y2\n\tVPADDD Y2, Y0, Y0\n")
	}
	for t := range T {
		fmt.Fprintf(w, `	VEXTRACTI128 $1, Y%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPMADDWD %[2]d(BX), Y14, Y10
	VEXTRACTI128 $1, Y10, X9
	VPADDD X9, X10, X10
	VPHADDD X10, X%[1]d, X10
	VPHADDD X10, X10, X10
	VCVTDQ2PS X10, X10
	VBROADCASTSS %[3]d(BX), X9
	VMULPS X9, X13, X9
	VMULPS X9, X10, X10
	VADDSS X10, X%[4]d, X%[4]d
	VMOVSHDUP X10, X10
	VSUBSS X10, X%[4]d, X%[4]d
`, t, 256*T+4*T+32*t, 256*T+4*t, 4+t)
	}
	fmt.Fprintf(w, "\tADDQ $144, R12\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n", kTileBytes*T, name)
	for t := range T {
		addr := []string{"(R9)", "(R9)(R8*1)", "(R9)(R8*2)", "(R9)(DI*1)"}[t]
		fmt.Fprintf(w, "\tVMOVSS X%d, %s\n", 4+t, addr)
	}
	fmt.Fprintf(w, "\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

// q6kTile emits q6kRows<T>VNNI, q4kTile's counterpart for Q6_K: per
// super-block the sixteen int8 scales are widened once and spread by
// VPERMW into eight vectors (Y24–Y31, two 16-quant groups each); the
// 6-bit quants are assembled once per 32 for all T tokens; the −32 offset
// comes from the block sums, as in dotQ6K.
func q6kTile(w *bytes.Buffer, T int) {
	name := fmt.Sprintf("q6kRows%dVNNI", T)
	fmt.Fprintf(w, "// func %s(w *byte, rowBytes, nrows int, a *byte, nb int, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	fmt.Fprintf(w, `	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R10
	MOVQ nrows+16(FP), R11
	MOVQ out+40(FP), R9
	MOVQ ostride+48(FP), R8
	LEAQ (R8)(R8*2), DI
	VMOVDQU nib<>(SB), Y14
	VMOVDQU m30<>(SB), Y13
`)
	for c := range 8 {
		fmt.Fprintf(w, "\tVMOVDQU64 q6kperm%d<>(SB), Y%d\n", c, 16+c)
	}
	fmt.Fprintf(w, "%srow:\n", name)
	for t := range T {
		fmt.Fprintf(w, "\tVXORPS X%[1]d, X%[1]d, X%[1]d\n", 4+t)
	}
	fmt.Fprintf(w, "\tMOVQ SI, R12\n\tMOVQ a+24(FP), BX\n\tMOVQ nb+32(FP), R13\n%sblock:\n\tVPMOVSXBW 192(R12), Y15\n", name)
	for c := range 8 {
		fmt.Fprintf(w, "\tVPERMW Y15, Y%d, Y%d\n", 16+c, 24+c)
	}
	accs := T
	if T == 1 {
		accs = 4
	}
	for t := range accs {
		fmt.Fprintf(w, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", t)
	}
	for n := range 2 {
		fmt.Fprintf(w, "\tVMOVDQU %d(R12), Y9\n\tVMOVDQU %d(R12), Y10\n\tVMOVDQU %d(R12), Y11\n", 64*n, 64*n+32, 128+32*n)
		for k := range 4 {
			src := []string{"Y9", "Y10", "Y9", "Y10"}[k]
			if k < 2 {
				fmt.Fprintf(w, "\tVPAND Y14, %s, Y12\n", src)
			} else {
				fmt.Fprintf(w, "\tVPSRLW $4, %s, Y12\n\tVPAND Y14, Y12, Y12\n", src)
			}
			switch k {
			case 0:
				w.WriteString("\tVPSLLW $4, Y11, Y8\n")
			case 1:
				w.WriteString("\tVPSLLW $2, Y11, Y8\n")
			case 2:
				w.WriteString("\tVMOVDQA Y11, Y8\n")
			case 3:
				w.WriteString("\tVPSRLW $2, Y11, Y8\n")
			}
			w.WriteString("\tVPAND Y13, Y8, Y8\n\tVPOR Y8, Y12, Y12\n")
			c := 4*n + k
			for t := range T {
				acc := t
				if T == 1 {
					acc = c % 4
				}
				fmt.Fprintf(w, "\tVPMADDUBSW %d(BX), Y12, Y8\n\tVPDPWSSD Y%d, Y8, Y%d\n", 256*t+32*c, 24+c, acc)
			}
		}
	}
	if T == 1 {
		w.WriteString("\tVPADDD Y1, Y0, Y0\n\tVPADDD Y3, Y2, Y2\n\tVPADDD Y2, Y0, Y0\n")
	}
	fmt.Fprintf(w, "\tMOVWLZX 208(R12), AX\n\tVMOVD AX, X12\n\tVCVTPH2PS X12, X12\n")
	for t := range T {
		fmt.Fprintf(w, `	VPMADDWD %[2]d(BX), Y15, Y8
	VPSLLD $5, Y8, Y8
	VPSUBD Y8, Y%[1]d, Y%[1]d
	VEXTRACTI128 $1, Y%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPSHUFD $0x4E, X%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VPSHUFD $0xB1, X%[1]d, X9
	VPADDD X9, X%[1]d, X%[1]d
	VCVTDQ2PS X%[1]d, X%[1]d
	VMULSS %[3]d(BX), X12, X9
	VMULSS X9, X%[1]d, X%[1]d
	VADDSS X%[1]d, X%[4]d, X%[4]d
`, t, 256*T+4*T+32*t, 256*T+4*t, 4+t)
	}
	fmt.Fprintf(w, "\tADDQ $210, R12\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n", kTileBytes*T, name)
	for t := range T {
		addr := []string{"(R9)", "(R9)(R8*1)", "(R9)(R8*2)", "(R9)(DI*1)"}[t]
		fmt.Fprintf(w, "\tVMOVSS X%d, %s\n", 4+t, addr)
	}
	fmt.Fprintf(w, "\tADDQ $4, R9\n\tADDQ R10, SI\n\tDECQ R11\n\tJNZ %srow\n\tVZEROUPPER\n\tRET\n\n", name)
}

// x8Tiles are the token tiles of the repacked Q8_0 kernels (largest
// first, as Go splits a batch).
var x8Tiles = []int{16, 8, 4, 2, 1}

// x8ActBytes is one token's block in the X8 activation layout: 32 quants,
// the int32 correction −128·Σq, the float32 scale.
const x8ActBytes = 40

// qx8 emits <f>x<R>T<T>(w *byte, groups, nb int, a *byte, out *float32,
// ostride int) for Q8_0/Q4_0/Q5_0 weights repacked R (8 or 16, on 256- or
// 512-bit registers) rows at a time (x8.go): per group and block, R fp16
// row scales, then the R rows' quants four by four (Q8_0 +128; Q4_0 and
// Q5_0 packed as in their blocks, Q5_0's qh dwords first), unpacked by
// x8Decode. One VPDPBUSD with the token's 4 quants broadcast advances all
// R rows, so the lanes are rows
// and every integer block sum is whole; per block and token the float
// steps are those of dotX8 (convert, scale dw·da, add).
//
// Registers (Z for R = 16): Y16–Y23 the weights, Y24 the row scales, Y25
// dw·da, Y26–Y29 integer accumulators, Y0–Y15 the tile's per-token sums.
func qx8(w *bytes.Buffer, f format, T, R int) {
	V, xor := "Y", "VXORPS"
	if R == 16 {
		V, xor = "Z", "VPXORD"
	}
	name := fmt.Sprintf("%sx%dT%d", f.name, R, T)
	fmt.Fprintf(w, "// func %s(w *byte, groups, nb int, a *byte, out *float32, ostride int)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-48\n", name)
	fmt.Fprintf(w, "\tMOVQ w+0(FP), SI\n\tMOVQ groups+8(FP), R11\n\tMOVQ out+32(FP), R9\n\tMOVQ ostride+40(FP), R8\n%sgroup:\n", name)
	for t := range T {
		fmt.Fprintf(w, "\t%s %s%d, %[2]s%[3]d, %[2]s%[3]d\n", xor, V, t)
	}
	fmt.Fprintf(w, "\tMOVQ a+24(FP), BX\n\tMOVQ nb+16(FP), R13\n%sblock:\n\tVCVTPH2PS (SI), %s24\n", name, V)
	if T == 1 {
		prefetch(w, R*f.bytes)
	}
	x8Decode(w, f, R)
	for t := range T {
		base := x8ActBytes * t
		if T == 1 {
			// Alone, split the eight dependent VPDPBUSDs over two chains.
			fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), %s26\n\tVPXORD %[2]s27, %[2]s27, %[2]s27\n", base+32, V)
			for k := range 8 {
				fmt.Fprintf(w, "\tVPDPBUSD.BCST %[1]d(BX), %[2]s%[3]d, %[2]s%[4]d\n", base+4*k, V, 16+k, 26+k%2)
			}
			fmt.Fprintf(w, "\tVPADDD %s27, %[1]s26, %[1]s26\n", V)
		} else {
			acc := 26 + t%4
			fmt.Fprintf(w, "\tVPBROADCASTD %d(BX), %s%d\n", base+32, V, acc)
			for k := range 8 {
				fmt.Fprintf(w, "\tVPDPBUSD.BCST %[1]d(BX), %[2]s%[3]d, %[2]s%[4]d\n", base+4*k, V, 16+k, acc)
			}
		}
		acc := 26 + t%4
		if T == 1 {
			acc = 26
		}
		fmt.Fprintf(w, "\tVCVTDQ2PS %[4]s%[1]d, %[4]s%[1]d\n\tVMULPS.BCST %[2]d(BX), %[4]s24, %[4]s25\n\tVMULPS %[4]s25, %[4]s%[1]d, %[4]s%[1]d\n\tVADDPS %[4]s%[1]d, %[4]s%[3]d, %[4]s%[3]d\n", acc, base+36, t, V)
	}
	fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ $%d, BX\n\tDECQ R13\n\tJNZ %sblock\n\tMOVQ R9, AX\n", R*f.bytes, x8ActBytes*T, name)
	for t := range T {
		fmt.Fprintf(w, "\tVMOVUPS %s%d, (AX)\n", V, t)
		if t < T-1 {
			w.WriteString("\tADDQ R8, AX\n")
		}
	}
	fmt.Fprintf(w, "\tADDQ $%d, R9\n\tDECQ R11\n\tJNZ %sgroup\n\tVZEROUPPER\n\tRET\n\n", 4*R, name)
}

// prefetch emits, at the top of a one-token VNNI kernel's block loop (one
// run of groups, from SI), a software prefetch of the block
// prefetchAhead bytes ahead, line by line (n: the block's size in bytes);
// the K-quant kernels spread it over the block instead (spread).
// The hardware prefetchers alone left these kernels at 55–65 % of the
// read rate of a plain sum on the Zen 5 EPYC of docs/cpu.md (K-quants
// 25–31 GB/s, 38–44 with it; Q8_0 44–49, 52–66): they compute too long
// per line to keep enough reads in flight. Reading four runs at once
// instead, as the AVX2 kernels do on Zen 3 (where prefetching changed
// nothing), was slower there.
func prefetch(w *bytes.Buffer, n int) {
	for i := 0; i < n; i += 64 {
		fmt.Fprintf(w, "\tPREFETCHT0 %d(SI)\n", prefetchAhead+i)
	}
}

// spread is prefetch spread over the steps of a K-quant kernel's block:
// each step() emits its share of the block's lines, so the reads go out
// while the block computes instead of 36–53 at its top, more than the
// core keeps in flight. On the Zen 5 EPYC of docs/cpu.md, 64 Mi weights
// from memory on two threads (BenchmarkMulBatch/mem, 4 KiB pages) against
// Q8_0x8 in the same run: Q4_K 0.70–0.80 → 0.87–0.97 of its rate, Q6_K
// 0.63–0.73 → 0.82–0.95, Q5_K 0.38–0.79 → 0.75–0.84.
type spread struct {
	w                *bytes.Buffer
	next, end, steps int
}

func newSpread(w *bytes.Buffer, n, steps int) *spread { return &spread{w: w, end: n, steps: steps} }

func (p *spread) step() {
	k := (p.end - p.next + 64*p.steps - 1) / (64 * p.steps) // lines for this step
	for ; k > 0 && p.next < p.end; k-- {
		fmt.Fprintf(p.w, "\tPREFETCHT0 %d(SI)\n", prefetchAhead+p.next)
		p.next += 64
	}
	p.steps--
}

// prefetchAhead is how far ahead prefetch reads: 2–8 KiB gave about the
// same within the noise (8 KiB a little ahead for the Q8_0 family), 16
// KiB less, 1 KiB less for Q6_K.
const prefetchAhead = 8192

// x8Decode loads a group block's quants into Y16–Y23 (Z16–Z23 for R =
// 16) as unsigned bytes, register 16+k holding the R rows' quants
// 4k…4k+3. Q8_0 is stored +128; Q4_0's nibbles and Q5_0's five-bit values are unpacked here, Q5_0's
// fifth bits taken from each row's qh dword (lanes are rows; laid out as
// q5hPacked has them) to bit 4 of their bytes with one shift and a mask.
// Uses Y26 and Y27 (the token accumulators are free until the token loop).
func x8Decode(w *bytes.Buffer, f format, R int) {
	V := map[int]string{8: "Y", 16: "Z"}[R]
	if f.name == "q80" {
		for k := range 8 {
			fmt.Fprintf(w, "\tVMOVDQU32 %d(SI), %s%d\n", 2*R+4*R*k, V, 16+k)
		}
		return
	}
	quants := 2 * R
	if f.name == "q50" {
		quants = 6 * R
		fmt.Fprintf(w, "\tVMOVDQU32 %d(SI), %s26\n", 2*R, V)
	}
	for g := range 4 {
		lo, hi := 16+g, 20+g
		fmt.Fprintf(w, "\tVMOVDQU32 %[1]d(SI), %[4]s%[2]d\n\tVPSRLW $4, %[4]s%[2]d, %[4]s%[3]d\n\tVPANDD.BCST nib<>(SB), %[4]s%[2]d, %[4]s%[2]d\n\tVPANDD.BCST nib<>(SB), %[4]s%[3]d, %[4]s%[3]d\n",
			quants+4*R*g, lo, hi, V)
		if f.name != "q50" {
			continue
		}
		for i, y := range []int{lo, hi} {
			code, bits := q5Shift(g+4*i, V+"26", V+"27")
			fmt.Fprintf(w, "%s\tVPANDD.BCST bit10<>(SB), %s, %s27\n\tVPORD %[3]s27, %[3]s%d, %[3]s%[4]d\n", code, bits, V, y)
		}
	}
}

// expKernels emits expShiftAVX2 and siluMulAVX2 over 8 floats at a time,
// Expf's operations in Expf's order (see expf.go), constants broadcast
// from exp<>.
func expKernels(w *bytes.Buffer) {
	consts := []float32{-87, 88, 1.44269504088896341, 0.693359375, -2.12194440e-4, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1, 1}
	for i, c := range consts {
		fmt.Fprintf(w, "DATA expc<>+%d(SB)/4, $0x%08x\n", 4*i, math.Float32bits(c))
	}
	fmt.Fprintf(w, "DATA expc<>+%d(SB)/4, $127\nGLOBL expc<>(SB), RODATA|NOPTR, $%d\n\n", 4*len(consts), 4*len(consts)+4)
	// exp of Y0 into Y0; uses Y1–Y4; Y8 = -87, Y9 = 88, Y10 log2e, Y11 C1,
	// Y12 C2, Y13 1, Y14 127 (int), Y15 zero.
	exp := `	VCMPPS $0x1d, Y8, Y0, Y5
	VMINPS Y9, Y0, Y0
	VMULPS Y10, Y0, Y1
	VROUNDPS $0, Y1, Y1
	VMULPS Y11, Y1, Y2
	VSUBPS Y2, Y0, Y0
	VMULPS Y12, Y1, Y2
	VSUBPS Y2, Y0, Y0
	VMULPS Y0, Y0, Y3
	VBROADCASTSS expc<>+20(SB), Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+24(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+28(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+32(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+36(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y0, Y4, Y4
	VBROADCASTSS expc<>+40(SB), Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y3, Y4, Y4
	VADDPS Y0, Y4, Y4
	VADDPS Y13, Y4, Y4
	VCVTPS2DQ Y1, Y1
	VPADDD Y14, Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y4, Y0
	VANDPS Y5, Y0, Y0
`
	setup := `	VBROADCASTSS expc<>+0(SB), Y8
	VBROADCASTSS expc<>+4(SB), Y9
	VBROADCASTSS expc<>+8(SB), Y10
	VBROADCASTSS expc<>+12(SB), Y11
	VBROADCASTSS expc<>+16(SB), Y12
	VBROADCASTSS expc<>+44(SB), Y13
	VPBROADCASTD expc<>+48(SB), Y14
`
	fmt.Fprintf(w, `// func expShiftAVX2(w *float32, n int, shift, scale float32)
// w[i] = exp((w[i]-shift)·scale), n a positive multiple of 8.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VBROADCASTSS shift+16(FP), Y6
	VBROADCASTSS scale+20(FP), Y7
%sexpshift:
	VMOVUPS (SI), Y0
	VSUBPS Y6, Y0, Y0
	VMULPS Y7, Y0, Y0
%s	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ expshift
	VZEROUPPER
	RET

// func siluMulAVX2(x, u *float32, n int)
// g[i] = g[i]/(1+exp(-g[i]))·u[i], n a positive multiple of 8.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ u+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VXORPS Y15, Y15, Y15
%ssilu:
	VMOVUPS (SI), Y6
	VSUBPS Y6, Y15, Y0
%s	VADDPS Y13, Y0, Y0
	VDIVPS Y0, Y6, Y6
	VMULPS (DI), Y6, Y6
	VMOVUPS Y6, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ silu
	VZEROUPPER
	RET

`, setup, exp, setup, exp)
}

// q4kxR emits q4kx<R>VNNI(w *byte, groups, nb int, a *int8, d *float32,
// bsums *int16, out *float32): groups of R (8 or 16) Q4_K rows repacked
// (x8.go) against one token's Q8_K activations, the lanes being rows (R
// = 16 on 512-bit registers). The packed scales of all R rows are
// unpacked at once with dotQ4K's shifts and masks; per sub-block,
// VPDPBUSDs with the token's quants broadcast, then one VPMULLD by the
// rows' scales; the minimums likewise against the block sums; the float
// steps in dotQ4K's order. With q5 it emits q5kx<R>VNNI for Q5_K, whose
// fifth bits (the rows' qh dwords) each step moves to bit 4 with one
// shift, as the AVX2 kernels do (q5Shift).
func q4kxR(w *bytes.Buffer, R int, q5 bool) {
	V, mov, and := "Y", "VMOVDQU", "VPAND"
	if R == 16 {
		V, mov, and = "Z", "VMOVDQU64", "VPANDD"
	}
	name, nibbles, bb, consts := fmt.Sprintf("q4kx%dVNNI", R), 16*R, 144*R, ""
	if q5 {
		name, nibbles, bb, consts = fmt.Sprintf("q5kx%dVNNI", R), 48*R, 176*R, "\tVPBROADCASTD bit10<>(SB), @29\n"
	}
	r := strings.NewReplacer("@", V, "MOVX ", mov+" ", "ANDX ", and+" ", "NAME", name)
	emit := func(format string, args ...any) {
		w.WriteString(r.Replace(fmt.Sprintf(format, args...)))
	}
	emit(`// func NAME(w *byte, groups, nb int, a *int8, d *float32, bsums *int16, out *float32)
TEXT ·NAME(SB), NOSPLIT, $32-56
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), R11
	MOVQ out+48(FP), R9
	VPBROADCASTD nib<>(SB), @15
	VPBROADCASTD cff<>(SB), @14
	VPBROADCASTD c3f<>(SB), @13
	VPBROADCASTD c03<>(SB), @12
	VMOVDQU ones16<>(SB), Y11
%sNAMEgroup:
	MOVQ nb+16(FP), R13
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	VPXORD @24, @24, @24
NAMEblock:
`, consts)
	pf := newSpread(w, bb, 32)
	emit(`	VCVTPH2PS (SI), @16
	VCVTPH2PS %[1]d(SI), @17
	MOVX %[2]d(SI), @0
	MOVX %[3]d(SI), @1
	MOVX %[4]d(SI), @2
	VPSRLD $6, @1, @3
	ANDX @12, @3, @3
	VPSLLD $4, @3, @3
	VPANDD @13, @1, @20
	VPSRLD $4, @2, @4
	ANDX @15, @4, @4
	VPORD @3, @4, @21
	VPSRLD $6, @0, @3
	ANDX @12, @3, @3
	VPSLLD $4, @3, @3
	ANDX @15, @2, @4
	VPORD @3, @4, @19
	VPANDD @13, @0, @18
	VMOVDQU (DI), Y5
	VPMADDWD Y11, Y5, Y5
	VMOVDQU Y5, 0(SP)
	VPXORD @22, @22, @22
	VPXORD @23, @23, @23
`, 2*R, 4*R, 8*R, 12*R)
	extract := func(src, dst string, j int) {
		switch sh := 8 * (j % 4); sh {
		case 0:
			emit("\tVPANDD @14, %s, %s\n", src, dst)
		case 24:
			emit("\tVPSRLD $24, %s, %s\n", src, dst)
		default:
			emit("\tVPSRLD $%d, %s, %s\n\tVPANDD @14, %s, %s\n", sh, src, dst, dst, dst)
		}
	}
	for p := range 4 {
		// Four chains of four VPDPBUSDs (even and odd k apart), summed.
		emit("\tVPXORD @25, @25, @25\n\tVPXORD @26, @26, @26\n\tVPXORD @27, @27, @27\n\tVPXORD @28, @28, @28\n")
		for k := range 8 {
			pf.step()
			lo, hi := 25+2*(k%2), 26+2*(k%2)
			emit("\tMOVX %d(SI), @6\n\tANDX @15, @6, @7\n\tVPSRLW $4, @6, @6\n\tANDX @15, @6, @6\n", nibbles+32*R*p+4*R*k)
			if q5 {
				emit("\tVMOVDQU64 %d(SI), @30\n", 16*R+4*R*k)
				for i, q := range []string{"@7", "@6"} {
					code, bits := q5Shift(2*p+i, "@30", "@31")
					emit("%s\tVPANDD @29, %s, @31\n\tVPORD @31, %s, %[3]s\n", code, bits, q)
				}
			}
			emit("\tVPDPBUSD.BCST %d(BX), @7, @%d\n\tVPDPBUSD.BCST %d(BX), @6, @%d\n", 64*p+4*k, lo, 64*p+32+4*k, hi)
		}
		emit("\tVPADDD @27, @25, @25\n\tVPADDD @28, @26, @26\n")
		for i, acc := range []string{"@25", "@26"} {
			j := 2*p + i
			sc, mn := "@18", "@20"
			if j >= 4 {
				sc, mn = "@19", "@21"
			}
			extract(sc, "@8", j)
			emit("\tVPMULLD @8, %[1]s, %[1]s\n\tVPADDD %[1]s, @22, @22\n", acc)
			extract(mn, "@9", j)
			emit("\tVPMULLD.BCST %d(SP), @9, @9\n\tVPADDD @9, @23, @23\n", 4*j)
		}
	}
	emit(`	VBROADCASTSS (DX), @8
	VMULPS @8, @16, @9
	VCVTDQ2PS @22, @22
	VMULPS @9, @22, @22
	VADDPS @22, @24, @24
	VMULPS @8, @17, @9
	VCVTDQ2PS @23, @23
	VMULPS @9, @23, @23
	VSUBPS @23, @24, @24
	ADDQ $%d, SI
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ NAMEblock
	VMOVUPS @24, (R9)
	ADDQ $%d, R9
	DECQ R11
	JNZ NAMEgroup
	VZEROUPPER
	RET

`, bb, 4*R)
}

// q6kxR emits q6kx<R>VNNI, q4kxR's counterpart for Q6_K repacked (x8.go):
// the 6-bit quants of R rows are assembled from ql and qh with dotQ6K's
// shifts and masks, each 16-quant group's sum is multiplied by the rows'
// int8 scales (widened), and the −32 offset comes from the block sums.
func q6kxR(w *bytes.Buffer, R int) {
	V, mov, and := "Y", "VMOVDQU", "VPAND"
	if R == 16 {
		V, mov, and = "Z", "VMOVDQU64", "VPANDD"
	}
	name := fmt.Sprintf("q6kx%dVNNI", R)
	r := strings.NewReplacer("@", V, "MOVX ", mov+" ", "ANDX ", and+" ", "NAME", name)
	emit := func(format string, args ...any) {
		w.WriteString(r.Replace(fmt.Sprintf(format, args...)))
	}
	emit(`// func NAME(w *byte, groups, nb int, a *int8, d *float32, bsums *int16, out *float32)
TEXT ·NAME(SB), NOSPLIT, $64-56
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), R11
	MOVQ out+48(FP), R9
	VPBROADCASTD nib<>(SB), @15
	VPBROADCASTD m30<>(SB), @13
NAMEgroup:
	MOVQ nb+16(FP), R13
	MOVQ a+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ bsums+40(FP), DI
	VPXORD @24, @24, @24
NAMEblock:
`)
	pf := newSpread(w, 210*R, 16)
	emit(`	VCVTPH2PS (SI), @16
	VPMOVSXWD (DI), Y5
	VMOVDQU Y5, 0(SP)
	VPMOVSXWD 16(DI), Y5
	VMOVDQU Y5, 32(SP)
	VPXORD @22, @22, @22
	VPXORD @23, @23, @23
`)
	for n := range 2 {
		for kh := range 2 {
			emit("\tVPXORD @25, @25, @25\n\tVPXORD @26, @26, @26\n\tVPXORD @27, @27, @27\n\tVPXORD @28, @28, @28\n")
			for k := 4 * kh; k < 4*kh+4; k++ {
				pf.step()
				base := 18*R + 12*R*(8*n+k)
				emit("\tMOVX %d(SI), @0\n\tMOVX %d(SI), @1\n\tMOVX %d(SI), @2\n", base, base+4*R, base+8*R)
				// quants m·32 + 4k… of this half: low or high nibbles of ql, and
				// qh's bit pair m moved to bits 4–5.
				emit("\tANDX @15, @0, @3\n\tVPSLLW $4, @2, @4\n\tANDX @13, @4, @4\n\tVPORD @4, @3, @3\n\tVPDPBUSD.BCST %d(BX), @3, @25\n", 128*n+4*k)
				emit("\tANDX @15, @1, @3\n\tVPSLLW $2, @2, @4\n\tANDX @13, @4, @4\n\tVPORD @4, @3, @3\n\tVPDPBUSD.BCST %d(BX), @3, @26\n", 128*n+32+4*k)
				emit("\tVPSRLW $4, @0, @3\n\tANDX @15, @3, @3\n\tANDX @13, @2, @4\n\tVPORD @4, @3, @3\n\tVPDPBUSD.BCST %d(BX), @3, @27\n", 128*n+64+4*k)
				emit("\tVPSRLW $4, @1, @3\n\tANDX @15, @3, @3\n\tVPSRLW $2, @2, @4\n\tANDX @13, @4, @4\n\tVPORD @4, @3, @3\n\tVPDPBUSD.BCST %d(BX), @3, @28\n", 128*n+96+4*k)
			}
			for m := range 4 {
				g := 8*n + 2*m + kh
				emit("\tVPMOVSXBD %d(SI), @8\n\tVPMULLD @8, @%[2]d, @%[2]d\n\tVPADDD @%[2]d, @22, @22\n", 2*R+R*g, 25+m)
				emit("\tVPMULLD.BCST %d(SP), @8, @8\n\tVPADDD @8, @23, @23\n", 4*g)
			}
		}
	}
	emit(`	VPSLLD $5, @23, @23
	VPSUBD @23, @22, @22
	VBROADCASTSS (DX), @8
	VMULPS @8, @16, @9
	VCVTDQ2PS @22, @22
	VMULPS @9, @22, @22
	VADDPS @22, @24, @24
	ADDQ $%d, SI
	ADDQ $256, BX
	ADDQ $4, DX
	ADDQ $32, DI
	DECQ R13
	JNZ NAMEblock
	VMOVUPS @24, (R9)
	ADDQ $%d, R9
	DECQ R11
	JNZ NAMEgroup
	VZEROUPPER
	RET

`, 210*R, 4*R)
}

// flashKernels emits flashF16AVX2 and flashF32AVX2(q, o, m, l *float32,
// lim *int32, rows, d int, k unsafe.Pointer, kstride int, v
// unsafe.Pointer, vstride, nk int, pk, pv unsafe.Pointer): one step of tiled attention with an
// online softmax (flash.go) for rows query rows (d floats each, d a
// multiple of 16) against a tile of 16 keys: k holds the tile transposed
// (dimension c's 16 keys at k + c·kstride bytes), v the values (key j's d
// values at v + j·vstride bytes), in fp16 or float32. Row r sees the
// first lim[r] keys; only the first nk values are read. Rows go four at a
// time (then 3, 2 or 1) with the same instructions per row whatever the
// tile, so that a row's result does not depend on the rows around it.
// While each row tile's scores are computed, the next tile (pk, pv: its
// keys and values, laid out alike) is prefetched, a line of each per
// dimension: a KV-cache block spans a page or two, and the hardware
// prefetchers stop at pages.
//
// Registers: Y0–Y7 the scores (then probabilities, then outputs) of the
// row tile, two per row; Y8–Y15 keys, values and temporaries. SI, DI the
// tile's q and o rows (R12 bytes apart, R13 = 3·R12), R11 the first row.
func flashKernels(w *bytes.Buffer) {
	dataF32(w, "fneginf", float32(math.Inf(-1)))
	data(w, "fiota0", [4]uint64{1 << 32, 3<<32 | 2, 5<<32 | 4, 7<<32 | 6})
	data(w, "fiota8", [4]uint64{9<<32 | 8, 11<<32 | 10, 13<<32 | 12, 15<<32 | 14})
	for i, c := range []float32{-87, 88, 1.44269504088896341, 0.693359375, -2.12194440e-4, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1, 1} {
		dataF32(w, fmt.Sprintf("fexp%d", i), c)
	}
	data(w, "fexp127", rep(0x0000007f0000007f))
	for _, f16 := range []bool{true, false} {
		flashKernel(w, f16)
	}
}

func dataF32(w *bytes.Buffer, name string, v float32) {
	b := uint64(math.Float32bits(v))
	data(w, name, rep(b<<32|b))
}

// flashExp replaces x by e^x (Cephes' expf as in expf.go, with FMAs; 0
// below -87, so 0 for -∞) using the temporaries t.
func flashExp(w *bytes.Buffer, x string, t [4]string) {
	fmt.Fprintf(w, "\tVCMPPS $0x1d, fexp0<>(SB), %[1]s, %[2]s\n\tVMINPS fexp1<>(SB), %[1]s, %[1]s\n", x, t[0])
	fmt.Fprintf(w, "\tVMULPS fexp2<>(SB), %[1]s, %[2]s\n\tVROUNDPS $0, %[2]s, %[2]s\n", x, t[1])
	fmt.Fprintf(w, "\tVFNMADD231PS fexp3<>(SB), %[2]s, %[1]s\n\tVFNMADD231PS fexp4<>(SB), %[2]s, %[1]s\n", x, t[1])
	fmt.Fprintf(w, "\tVMULPS %[1]s, %[1]s, %[2]s\n\tVMOVUPS fexp5<>(SB), %[3]s\n", x, t[2], t[3])
	for i := 6; i <= 10; i++ {
		fmt.Fprintf(w, "\tVFMADD213PS fexp%d<>(SB), %s, %s\n", i, x, t[3])
	}
	fmt.Fprintf(w, "\tVFMADD213PS %[1]s, %[2]s, %[3]s\n\tVADDPS fexp11<>(SB), %[3]s, %[3]s\n", x, t[2], t[3])
	fmt.Fprintf(w, "\tVCVTPS2DQ %[1]s, %[1]s\n\tVPADDD fexp127<>(SB), %[1]s, %[1]s\n\tVPSLLD $23, %[1]s, %[1]s\n", t[1])
	fmt.Fprintf(w, "\tVMULPS %[1]s, %[2]s, %[3]s\n\tVANDPS %[4]s, %[3]s, %[3]s\n", t[1], t[3], x, t[0])
}

// Stack frame of the flash kernels: the row tile's probabilities (4 rows
// of 16), m_old − m_new per row, then e^that.
const (
	flashP      = 0
	flashDelta  = 256
	flashAlpha  = 272
	flashFrame  = 288
	flashArgLen = 112
)

func flashKernel(w *bytes.Buffer, f16 bool) {
	name, load, half, vstep := "flashF32AVX2", "VMOVUPS", 32, 64
	if f16 {
		name, load, half, vstep = "flashF16AVX2", "VCVTPH2PS", 16, 32
	}
	fmt.Fprintf(w, "// func %s(q, o, m, l *float32, lim *int32, rows, d int, k unsafe.Pointer, kstride int, v unsafe.Pointer, vstride, nk int, pk, pv unsafe.Pointer)\n", name)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $%d-%d\n", name, flashFrame, flashArgLen)
	fmt.Fprintf(w, `	MOVQ q+0(FP), SI
	MOVQ o+8(FP), DI
	MOVQ d+48(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	XORQ R11, R11
%[1]stile:
	MOVQ rows+40(FP), AX
	SUBQ R11, AX
	CMPQ AX, $4
	JGE %[1]sr4
	CMPQ AX, $3
	JEQ %[1]sr3
	CMPQ AX, $2
	JEQ %[1]sr2
	CMPQ AX, $1
	JEQ %[1]sr1
	JMP %[1]sdone
`, name)
	rowAddr := func(base string, off, r int) string {
		idx := []string{"", "(R12*1)", "(R12*2)", "(R13*1)"}[r]
		return fmt.Sprintf("%d(%s)%s", off, base, idx)
	}
	for _, mr := range []int{4, 3, 2, 1} {
		lbl := fmt.Sprintf("%sr%d", name, mr)
		fmt.Fprintf(w, "%s:\n", lbl)
		// Scores: S[r][j] = Σ_c q[r][c]·k[c][j].
		for i := range 2 * mr {
			fmt.Fprintf(w, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", i)
		}
		fmt.Fprintf(w, "\tMOVQ k+56(FP), AX\n\tMOVQ kstride+64(FP), R14\n\tMOVQ SI, BX\n\tMOVQ d+48(FP), CX\n\tMOVQ pk+96(FP), R9\n\tMOVQ pv+104(FP), R10\n%sqk:\n", lbl)
		fmt.Fprintf(w, "\t%[1]s (AX), Y8\n\t%[1]s %[2]d(AX), Y9\n", load, half)
		fmt.Fprintf(w, "\tPREFETCHT0 (R9)\n\tPREFETCHT0 (R10)\n\tADDQ R14, R9\n\tADDQ $%d, R10\n", 2*half)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %s, Y10\n\tVFMADD231PS Y8, Y10, Y%d\n\tVFMADD231PS Y9, Y10, Y%d\n", rowAddr("BX", 0, r), 2*r, 2*r+1)
		}
		fmt.Fprintf(w, "\tADDQ R14, AX\n\tADDQ $4, BX\n\tDECQ CX\n\tJNZ %sqk\n", lbl)
		// Mask keys a row may not see, new running maxima, shift.
		w.WriteString("\tMOVQ lim+32(FP), AX\n\tMOVQ m+16(FP), BX\n\tVBROADCASTSS fneginf<>(SB), Y12\n")
		for r := range mr {
			fmt.Fprintf(w, "\tVPBROADCASTD %d(AX)(R11*4), Y10\n", 4*r)
			for h := range 2 {
				fmt.Fprintf(w, "\tVPCMPGTD fiota%d<>(SB), Y10, Y11\n\tVBLENDVPS Y11, Y%[2]d, Y12, Y%[2]d\n", 8*h, 2*r+h)
			}
			fmt.Fprintf(w, "\tVMAXPS Y%d, Y%d, Y8\n", 2*r+1, 2*r)
			w.WriteString("\tVPERM2F128 $1, Y8, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n\tVPERMILPS $0x4E, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n\tVPERMILPS $0xB1, Y8, Y9\n\tVMAXPS Y9, Y8, Y8\n")
			fmt.Fprintf(w, "\tVBROADCASTSS %[1]d(BX)(R11*4), Y9\n\tVMAXPS Y9, Y8, Y8\n\tVSUBSS X8, X9, X9\n\tVMOVSS X9, %[2]d(SP)\n\tVMOVSS X8, %[1]d(BX)(R11*4)\n", 4*r, flashDelta+4*r)
			fmt.Fprintf(w, "\tVSUBPS Y8, Y%[1]d, Y%[1]d\n\tVSUBPS Y8, Y%[2]d, Y%[2]d\n", 2*r, 2*r+1)
		}
		// Probabilities, the rescaling factors, running sums.
		tmp := [4]string{"Y8", "Y9", "Y10", "Y11"}
		for i := range 2 * mr {
			flashExp(w, fmt.Sprintf("Y%d", i), tmp)
		}
		fmt.Fprintf(w, "\tVMOVUPS %d(SP), X12\n", flashDelta)
		flashExp(w, "Y12", tmp)
		fmt.Fprintf(w, "\tVMOVUPS X12, %d(SP)\n\tMOVQ l+24(FP), BX\n", flashAlpha)
		for r := range mr {
			fmt.Fprintf(w, "\tVMOVUPS Y%d, %d(SP)\n\tVMOVUPS Y%d, %d(SP)\n", 2*r, flashP+64*r, 2*r+1, flashP+64*r+32)
			fmt.Fprintf(w, "\tVADDPS Y%d, Y%d, Y8\n", 2*r+1, 2*r)
			w.WriteString("\tVEXTRACTF128 $1, Y8, X9\n\tVADDPS X9, X8, X8\n\tVPSHUFD $0x4E, X8, X9\n\tVADDPS X9, X8, X8\n\tVPSHUFD $0xB1, X8, X9\n\tVADDSS X9, X8, X8\n")
			fmt.Fprintf(w, "\tVMOVSS %[1]d(BX)(R11*4), X9\n\tVMULSS %[2]d(SP), X9, X9\n\tVADDSS X8, X9, X9\n\tVMOVSS X9, %[1]d(BX)(R11*4)\n", 4*r, flashAlpha+4*r)
		}
		// Outputs, 16 floats of each row at a time: o = o·α + Σ_j p_j·v_j.
		fmt.Fprintf(w, "\tMOVQ v+72(FP), AX\n\tMOVQ vstride+80(FP), R8\n\tMOVQ DI, BX\n\tMOVQ d+48(FP), CX\n\tSHRQ $4, CX\n%spv:\n", lbl)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(SP), Y10\n\tVMULPS %s, Y10, Y%d\n\tVMULPS %s, Y10, Y%d\n", flashAlpha+4*r, rowAddr("BX", 0, r), 2*r, rowAddr("BX", 32, r), 2*r+1)
		}
		fmt.Fprintf(w, "\tMOVQ AX, DX\n\tXORQ R14, R14\n%spvj:\n\t%[2]s (DX), Y8\n\t%[2]s %[3]d(DX), Y9\n", lbl, load, half)
		for r := range mr {
			fmt.Fprintf(w, "\tVBROADCASTSS %d(SP)(R14*4), Y10\n\tVFMADD231PS Y8, Y10, Y%d\n\tVFMADD231PS Y9, Y10, Y%d\n", flashP+64*r, 2*r, 2*r+1)
		}
		fmt.Fprintf(w, "\tADDQ R8, DX\n\tINCQ R14\n\tCMPQ R14, nk+88(FP)\n\tJLT %spvj\n", lbl)
		for r := range mr {
			fmt.Fprintf(w, "\tVMOVUPS Y%d, %s\n\tVMOVUPS Y%d, %s\n", 2*r, rowAddr("BX", 0, r), 2*r+1, rowAddr("BX", 32, r))
		}
		fmt.Fprintf(w, "\tADDQ $%d, AX\n\tADDQ $64, BX\n\tDECQ CX\n\tJNZ %spv\n", vstep, lbl)
		if mr == 4 {
			fmt.Fprintf(w, "\tADDQ $4, R11\n\tLEAQ (SI)(R12*4), SI\n\tLEAQ (DI)(R12*4), DI\n\tJMP %stile\n", name)
		} else {
			fmt.Fprintf(w, "\tJMP %sdone\n", name)
		}
	}
	fmt.Fprintf(w, "%sdone:\n\tVZEROUPPER\n\tRET\n\n", name)
}

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

// quantKernels emits quantQ8_0AVX2(x *float32, nb int, q *int8, d
// *float32): Q8_0 activation blocks as quantQ8_0Blocks makes them, with
// the same float operations (amax/127 rounded through fp16, 127/amax, the
// products rounded half to even), so the same bits.
func quantKernels(w *bytes.Buffer) {
	data(w, "qabs", rep(0x7fffffff7fffffff))
	dataF32(w, "q127", 127)
	dataF32(w, "fexpinf", float32(math.Inf(1)))
	data(w, "qperm", [4]uint64{4 << 32, 5<<32 | 1, 6<<32 | 2, 7<<32 | 3})
	w.WriteString(`// func quantQ8_0AVX2(x *float32, nb int, q *int8, d *float32)
// (127/amax is taken as 0 where it is not finite: amax 0, or so small that
// the fp16 scale is 0 anyway.)
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	VMOVUPS qabs<>(SB), Y15
	VMOVUPS q127<>(SB), Y14
	VMOVDQU qperm<>(SB), Y13
	VBROADCASTSS fexpinf<>(SB), Y12
quantq80:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VPERM2F128 $1, Y4, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VPERMILPS $0x4E, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VPERMILPS $0xB1, Y4, Y5
	VMAXPS Y5, Y4, Y4
	VDIVSS X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, (DX)
	VDIVPS Y4, Y14, Y5
	VCMPPS $1, Y12, Y5, Y6
	VANDPS Y6, Y5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ quantq80
	VZEROUPPER
	RET

`)
}

// x8RecordsKernel emits x8RecordsAVX2(q *int8, d *float32, nb int, off
// int32, o *byte, ostride int): the X8 record of each Q8_0 block (its 32
// quants, −off·Σq as int32, d) at o, ostride bytes apart.
func x8RecordsKernel(w *bytes.Buffer) {
	w.WriteString(`// func x8RecordsAVX2(q *int8, d *float32, nb int, off int32, o *byte, ostride int)
TEXT ·x8RecordsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ nb+16(FP), CX
	MOVL off+24(FP), R9
	NEGL R9
	MOVQ o+32(FP), DI
	MOVQ ostride+40(FP), R8
	VMOVDQU ones8<>(SB), Y14
	VMOVDQU ones16<>(SB), Y12
x8rec:
	VMOVDQU (SI), Y0
	VMOVDQU Y0, (DI)
	VPMADDUBSW Y0, Y14, Y0
	VPMADDWD Y12, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	IMULL R9, AX
	MOVL AX, 32(DI)
	MOVL (DX), AX
	MOVL AX, 36(DI)
	ADDQ $32, SI
	ADDQ $4, DX
	ADDQ R8, DI
	DECQ CX
	JNZ x8rec
	VZEROUPPER
	RET

`)
}

// quantQ8KKernel emits quantQ8_KAVX2(x *float32, nb int, q *int8, d
// *float32, bs *int16) int: Q8_K activation blocks of 256 as
// quantQ8_KBlocks makes them (the scale −127/max from the first element
// of largest magnitude, the products rounded half to even, d = 1/scale,
// the sums of each 16 quants), so the same bits. It returns the blocks
// done, stopping before one whose scale is not finite (a tiny max) or
// that holds a NaN or infinity: Go does that one. In decode the Go quantiser took
// 5 % of a TinyLlama Q4_K_M step, with the other thread waiting.
func quantQ8KKernel(w *bytes.Buffer) {
	dataF32(w, "qm127", -127)
	dataF32(w, "fone", 1)
	data(w, "ones8", rep(0x0101010101010101))
	data(w, "c80", rep(0x8080808080808080))
	w.WriteString(`// func quantQ8_KAVX2(x *float32, nb int, q *int8, d *float32, bs *int16) int
TEXT ·quantQ8_KAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bs+32(FP), R8
	XORQ AX, AX
	VMOVUPS qabs<>(SB), Y15
	VMOVDQU ones8<>(SB), Y14
	VMOVDQU qperm<>(SB), Y13
	VMOVDQU ones16<>(SB), Y12
q8kblock:
`)
	for i := range 4 {
		fmt.Fprintf(w, "\tVANDPS %d(SI), Y15, Y%d\n", 32*i, i)
	}
	for i := 4; i < 32; i++ {
		fmt.Fprintf(w, "\tVANDPS %d(SI), Y15, Y4\n\tVMAXPS Y4, Y%d, Y%[2]d\n", 32*i, i%4)
	}
	w.WriteString(`	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VPERM2F128 $1, Y0, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPERMILPS $0x4E, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPERMILPS $0xB1, Y0, Y1
	VMAXPS Y1, Y0, Y0
	VPTEST Y0, Y0
	JZ q8kzero
	XORQ BX, BX
q8kfind:
	VANDPS (SI)(BX*1), Y15, Y1
	VCMPPS $0, Y0, Y1, Y1
	VMOVMSKPS Y1, R9
	TESTL R9, R9
	JNZ q8kfound
	ADDQ $32, BX
	CMPQ BX, $1024
	JNE q8kfind
	JMP q8kdone
q8kfound:
	BSFL R9, R9
	LEAQ (BX)(R9*4), BX
	VMOVSS (SI)(BX*1), X1
	VMOVSS qm127<>(SB), X2
	VDIVSS X1, X2, X2
	VMOVD X2, R10
	ANDL $0x7fffffff, R10
	CMPL R10, $0x7f800000
	JAE q8kdone
	VMOVSS fone<>(SB), X3
	VDIVSS X2, X3, X3
	VMOVSS X3, (DX)
	VBROADCASTSS X2, Y2
	VPXOR Y0, Y0, Y0
`)
	for c := range 8 {
		for i := range 4 {
			fmt.Fprintf(w, "\tVMULPS %d(SI), Y2, Y%d\n\tVCVTPS2DQ Y%[2]d, Y%[2]d\n", 128*c+32*i, 4+i)
		}
		// −128 is a NaN product: Go does such a block (Y0 collects them).
		fmt.Fprintf(w, "\tVPACKSSDW Y5, Y4, Y4\n\tVPACKSSDW Y7, Y6, Y6\n\tVPACKSSWB Y6, Y4, Y4\n\tVPERMD Y4, Y13, Y4\n\tVMOVDQU Y4, %d(DI)\n\tVPCMPEQB c80<>(SB), Y4, Y5\n\tVPOR Y5, Y0, Y0\n", 32*c)
		// The sums of four quants, 8 a chunk: groups 2c (low lane) and 2c+1.
		fmt.Fprintf(w, "\tVPMADDUBSW Y4, Y14, Y4\n\tVPMADDWD Y12, Y4, Y%d\n", 8+c%4)
		if c%4 == 3 {
			// Lanes of groups (0 2 4 6 | 1 3 5 7) of these four chunks.
			fmt.Fprintf(w, "\tVPHADDD Y9, Y8, Y8\n\tVPHADDD Y11, Y10, Y10\n\tVPHADDD Y10, Y8, Y%d\n", 1+2*(c/4))
		}
	}
	w.WriteString(`	VPTEST Y0, Y0
	JNZ q8kdone
	VPACKSSDW Y3, Y1, Y1
	VEXTRACTI128 $1, Y1, X3
	VPUNPCKLWD X3, X1, X4
	VPUNPCKHWD X3, X1, X5
	VMOVDQU X4, (R8)
	VMOVDQU X5, 16(R8)
q8knext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	INCQ AX
	DECQ CX
	JNZ q8kblock
q8kdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET
q8kzero:
	VPXOR Y1, Y1, Y1
	MOVL $0, (DX)
	VMOVDQU Y1, (R8)
`)
	for c := range 8 {
		fmt.Fprintf(w, "\tVMOVDQU Y1, %d(DI)\n", 32*c)
	}
	w.WriteString("\tJMP q8knext\n\n")
}

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

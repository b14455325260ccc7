// The amd64 file: its formats and instruction sets, its constants, and
// the order in which the families are written.

package main

import (
	"bytes"
	"fmt"
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

func data(w *bytes.Buffer, name string, qwords [4]uint64) {
	for i, q := range qwords {
		fmt.Fprintf(w, "DATA %s<>+%d(SB)/8, $0x%016x\n", name, i*8, q)
	}
	fmt.Fprintf(w, "GLOBL %s<>(SB), RODATA|NOPTR, $32\n\n", name)
}

func rep(q uint64) [4]uint64 { return [4]uint64{q, q, q, q} }

// amd64File is kernels_amd64.s.
func amd64File() []byte {
	var w bytes.Buffer
	w.WriteString(generated + "\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
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
	return []byte(strings.ReplaceAll(w.String(), "\n\n\n", "\n\n"))
}

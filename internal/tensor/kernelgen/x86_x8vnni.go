// AVX-512 VNNI kernels over repacked weights whose lanes are rows (the
// Q8_0 family, Q4_K, Q5_K, Q6_K).

package main

import (
	"bytes"
	"fmt"
	"strings"
)

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

package tensor

import (
	"math"
	"unsafe"
)

// Tiled attention with an online softmax (FlashAttention's recurrence):
// a set of query rows that read the same keys and values (the query heads
// of one GQA group, for every token of a prefill chunk) goes over the
// keys sixteen at a time, so that each key and value is loaded once for
// all of them. Per row it keeps the running maximum m of the scores, the
// running sum l of e^(s−m) and the unnormalised output o; a tile of keys
// with scores s_j updates them as
//
//	m' = max(m, max_j s_j), α = e^(m−m'), l' = l·α + Σ_j e^(s_j−m'),
//	o' = o·α + Σ_j e^(s_j−m')·v_j
//
// and the attention output is o/l. Queries come multiplied by the softmax
// scale. Every row runs the same operations whatever the rows around it,
// so a token's output does not depend on the batch.

// hostISA is the kernel set of the free functions (Flash, ExpShift,
// SiLUMul); tests lower it.
var hostISA = detect()

// FlashKeys is how many keys one Flash step takes.
const FlashKeys = 16

// Flash is the state of tiled attention for a set of query rows.
type Flash struct {
	Rows, D int
	Q       []float32 // Rows×D queries, already multiplied by the softmax scale
	// Lim[r] is how many of the current tile's keys row r sees (0…16):
	// the causal mask, set by the caller before each step.
	Lim []int32

	o, m, l []float32
	kt, vt  []float32 // a tile converted to float32 (pure-Go fp16 path)
	isa     isa
}

// Reset prepares f for rows query rows of d floats, with nothing seen
// yet; the caller then fills Q.
func (f *Flash) Reset(rows, d int) {
	f.Rows, f.D, f.isa = rows, d, hostISA
	f.Q = resize(f.Q, rows*d)
	f.Lim = resize(f.Lim, rows)
	f.o = resize(f.o, rows*d)
	f.m = resize(f.m, rows)
	f.l = resize(f.l, rows)
	clear(f.o)
	clear(f.l)
	for i := range f.m {
		f.m[i] = -math.MaxFloat32 // finite: a row that has seen no key keeps α = 1
	}
}

// StepF32 takes a tile of keys and values in float32: key j's dimension c
// at k[c·kstride+j] (j < 16: the tile is stored transposed), its values
// at v[j·vstride : j·vstride+D]. Only the first nk ≤ 16 values are read
// (the largest Lim); k must hold all 16 keys of every dimension. nextK
// and nextV, the next tile alike (or nil), are prefetched meanwhile.
func (f *Flash) StepF32(k []float32, kstride int, v []float32, vstride, nk int, nextK, nextV []float32) {
	f.check(len(k), kstride, len(v), vstride, nk)
	if f.asm() {
		pk, pv := prefetchAddr(k, nextK), prefetchAddr(v, nextV)
		flashAsm(f, unsafe.Pointer(&k[0]), 4*kstride, unsafe.Pointer(&v[0]), 4*vstride, nk, pk, pv, false)
		return
	}
	f.stepGo(k, kstride, v, vstride, nk)
}

// StepF16 is StepF32 for keys and values stored in fp16.
func (f *Flash) StepF16(k []uint16, kstride int, v []uint16, vstride, nk int, nextK, nextV []uint16) {
	f.check(len(k), kstride, len(v), vstride, nk)
	if f.asm() {
		pk, pv := prefetchAddr(k, nextK), prefetchAddr(v, nextV)
		flashAsm(f, unsafe.Pointer(&k[0]), 2*kstride, unsafe.Pointer(&v[0]), 2*vstride, nk, pk, pv, true)
		return
	}
	d := f.D
	f.kt = resize(f.kt, d*FlashKeys)
	f.vt = resize(f.vt, nk*d)
	for c := range d {
		for j := range FlashKeys {
			f.kt[c*FlashKeys+j] = F16ToF32(k[c*kstride+j])
		}
	}
	for j := range nk {
		for c := range d {
			f.vt[j*d+c] = F16ToF32(v[j*vstride+c])
		}
	}
	f.stepGo(f.kt, FlashKeys, f.vt, d, nk)
}

// prefetchAddr is where to prefetch: next, or cur when there is none
// (prefetching what is being read costs next to nothing).
func prefetchAddr[E any](cur, next []E) unsafe.Pointer {
	if len(next) == 0 {
		next = cur
	}
	return unsafe.Pointer(&next[0])
}

func (f *Flash) check(nkeys, kstride, nvals, vstride, nk int) {
	if nk < 1 || nk > FlashKeys || nkeys < (f.D-1)*kstride+FlashKeys || nvals < (nk-1)*vstride+f.D || len(f.Lim) < f.Rows {
		panic("BUG: tensor: flash step outside its tile")
	}
}

func (f *Flash) asm() bool { return f.isa != isaGeneric && f.D%16 == 0 && f.Rows > 0 }

// stepGo is the pure-Go step (the assembly's algorithm; the float sums
// are not in the same order).
func (f *Flash) stepGo(k []float32, kstride int, v []float32, vstride, nk int) {
	d := f.D
	for r := range f.Rows {
		var s [FlashKeys]float32
		for c, qc := range f.Q[r*d : (r+1)*d] {
			kc := (*[FlashKeys]float32)(k[c*kstride : c*kstride+FlashKeys])
			for j := range s {
				s[j] += qc * kc[j]
			}
		}
		alpha := f.softmax(r, &s)
		o := f.o[r*d : (r+1)*d]
		for c := range o {
			o[c] *= alpha
		}
		for j, p := range s[:nk] {
			if p == 0 {
				continue
			}
			vv := v[j*vstride : j*vstride+d]
			for c := range o {
				o[c] += p * vv[c]
			}
		}
	}
}

// softmax takes row r's scores s of a tile to e^(s_j−m') (0 past Lim[r]),
// updates the row's m and l, and returns α, o's factor.
func (f *Flash) softmax(r int, s *[FlashKeys]float32) float32 {
	mx := float32(math.Inf(-1))
	for j := range s {
		if j >= int(f.Lim[r]) {
			s[j] = float32(math.Inf(-1))
		}
		mx = max(mx, s[j])
	}
	mNew := max(f.m[r], mx)
	alpha := Expf(f.m[r] - mNew)
	f.m[r] = mNew
	var sum float32
	for j := range s {
		s[j] = Expf(s[j] - mNew)
		sum += s[j]
	}
	f.l[r] = f.l[r]*alpha + sum
	return alpha
}

// Output writes row r's attention output, o/l, to dst (len D).
func (f *Flash) Output(r int, dst []float32) {
	inv := 1 / f.l[r]
	for c, v := range f.o[r*f.D : (r+1)*f.D] {
		dst[c] = v * inv
	}
}

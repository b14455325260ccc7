package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFlash runs tiled attention at every kernel level, with keys and
// values in float32 and fp16, against a float64 softmax over the same
// (fp16-rounded) keys: rows 1…9 (the four-row tiles and their rest), head
// sizes the assembly takes and ones it leaves to Go, causal limits that
// differ per row, partial last tiles and strides as the KV cache has them.
func TestFlash(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	defer func() { hostISA = detect() }()
	for _, k := range levels() {
		hostISA = k
		for _, f16 := range []bool{false, true} {
			for _, d := range []int{8, 16, 64, 128} {
				for _, rows := range []int{1, 2, 3, 4, 5, 7, 9} {
					t.Run(fmt.Sprintf("%s/f16=%v/d%d/rows%d", k, f16, d, rows), func(t *testing.T) {
						testFlash(t, r, f16, d, rows)
					})
				}
			}
		}
	}
}

func testFlash(t *testing.T, r *rand.Rand, f16 bool, d, rows int) {
	const nkeys, kstride = 41, 32 // three tiles, the last partial; blocks of 32 keys
	tiles := (nkeys + FlashKeys - 1) / FlashKeys
	vstride := d + 3
	// K stored transposed per 32-key block: key j's dimension c at
	// (j/32)·d·32 + c·32 + j%32; V row-major with a stride.
	kf := make([]float32, tiles*FlashKeys*d*2)
	vf := make([]float32, (tiles*FlashKeys)*vstride)
	key := func(j, c int) *float32 { return &kf[j/kstride*d*kstride+c*kstride+j%kstride] }
	for j := range nkeys {
		for c := range d {
			*key(j, c) = float32(r.NormFloat64())
			vf[j*vstride+c] = float32(r.NormFloat64())
		}
	}
	var kh, vh []uint16
	if f16 {
		kh, vh = make([]uint16, len(kf)), make([]uint16, len(vf))
		for i := range kf {
			kh[i], kf[i] = F32ToF16(kf[i]), RoundF16(kf[i])
		}
		for i := range vf {
			vh[i], vf[i] = F32ToF16(vf[i]), RoundF16(vf[i])
		}
	}
	// Row i sees keys [0, lim_i): every limit from 1 to nkeys appears.
	lims := make([]int, rows)
	for i := range lims {
		lims[i] = nkeys - (i*7)%nkeys
	}
	var f Flash
	f.Reset(rows, d)
	scale := float32(1 / math.Sqrt(float64(d)))
	for i := range f.Q {
		f.Q[i] = float32(r.NormFloat64()) * 3 * scale
	}
	for tile := range tiles {
		j0 := tile * FlashKeys
		nk := 0
		for i, lim := range lims {
			f.Lim[i] = int32(min(FlashKeys, max(0, lim-j0)))
			nk = max(nk, int(f.Lim[i]))
		}
		ko := j0/kstride*d*kstride + j0%kstride
		if f16 {
			f.StepF16(kh[ko:], kstride, vh[j0*vstride:], vstride, nk, nil, nil)
		} else {
			f.StepF32(kf[ko:], kstride, vf[j0*vstride:], vstride, nk, nil, nil)
		}
	}
	got := make([]float32, d)
	for i, lim := range lims {
		q := f.Q[i*d : (i+1)*d]
		s := make([]float64, lim)
		mx := math.Inf(-1)
		for j := range s {
			for c := range d {
				s[j] += float64(q[c]) * float64(*key(j, c))
			}
			mx = math.Max(mx, s[j])
		}
		var sum float64
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		f.Output(i, got)
		for c := range d {
			var want float64
			for j := range s {
				want += s[j] / sum * float64(vf[j*vstride+c])
			}
			if math.Abs(float64(got[c])-want) > 2e-5*(1+math.Abs(want)) {
				t.Fatalf("row %d (sees %d keys) dim %d: %v, want %v", i, lim, c, got[c], want)
			}
		}
	}
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

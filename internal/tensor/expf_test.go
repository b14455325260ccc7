package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpf checks Expf against math.Exp (a few ulp over the range, 0 below
// it, -Inf and NaN to 0) and the SIMD ExpShift and SiLUMul against Expf
// bit for bit.
func TestExpf(t *testing.T) {
	for x := float32(-87); x <= 88; x += 0.0137 {
		want := math.Exp(float64(x))
		if got := float64(Expf(x)); math.Abs(got-want) > 3e-7*want {
			t.Fatalf("Expf(%v) = %v, want %v", x, got, want)
		}
	}
	for _, x := range []float32{-87.5, -1000, float32(math.Inf(-1)), float32(math.NaN())} {
		if got := Expf(x); got != 0 {
			t.Errorf("Expf(%v) = %v, want 0", x, got)
		}
	}
	if got := Expf(float32(math.Inf(1))); got != Expf(88) {
		t.Errorf("Expf(+Inf) = %v, want e^88", got)
	}
	r := rand.New(rand.NewPCG(7, 7))
	defer func() { hostISA = detect() }()
	for _, k := range levels() {
		hostISA = k
		w := make([]float32, 203)
		for i := range w {
			w[i] = float32(r.NormFloat64() * 40)
		}
		w[3], w[17], w[40] = float32(math.Inf(-1)), float32(math.NaN()), 1e30
		got := append([]float32(nil), w...)
		ExpShift(got, 2.5, 0.75)
		for i, v := range w {
			if want := Expf(float32(v-2.5) * 0.75); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%s: ExpShift[%d] of %v = %v, Expf %v", k, i, v, got[i], want)
			}
		}
		g := append([]float32(nil), w[:len(w)-2]...)
		g[17] = 3 // no NaN gates
		u := randFloats(r, len(g))
		want := make([]float32, len(g))
		for i, v := range g {
			want[i] = float32(v/float32(1+Expf(-v))) * u[i]
			if d := float64(v) / (1 + math.Exp(-float64(v))) * float64(u[i]); math.Abs(float64(want[i])-d) > 1e-5*(1+math.Abs(d)) {
				t.Fatalf("silu(%v)·%v = %v, want %v", v, u[i], want[i], d)
			}
		}
		SiLUMul(g, u)
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: SiLUMul[%d] = %v, want %v", k, i, g[i], want[i])
			}
		}
	}
}

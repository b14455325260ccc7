package tensor

import "math"

// A float32 exp for softmax and SiLU, vectorised on amd64: Cephes' expf
// (range reduction by ln 2 in two parts, a degree-5 polynomial, the
// exponent put in by integer arithmetic), accurate to about 2 ulp. The Go
// version below performs the same float32 operations in the same order as
// the assembly, so both give identical bits.

const (
	expLo    = -87 // exp(-87) ≈ 1.6e-38 is still normal; below, 0
	expHi    = 88  // keeps 2^n finite
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375 // ln 2 = C1 + C2, C1 exact in few bits
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

// Expf is e^x in float32: 0 below -87 (and for NaN), e^88 above 88.
func Expf(x float32) float32 {
	if !(x >= expLo) {
		return 0
	}
	x = min(x, expHi)
	n := float32(math.RoundToEven(float64(float32(x * expLog2e))))
	r := float32(x - float32(n*expC1))
	r = float32(r - float32(n*expC2))
	z := float32(r * r)
	p := float32(float32(expP0*r) + expP1)
	p = float32(float32(p*r) + expP2)
	p = float32(float32(p*r) + expP3)
	p = float32(float32(p*r) + expP4)
	p = float32(float32(p*r) + expP5)
	p = float32(float32(float32(p*z)+r) + 1)
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// ExpShift sets w[i] = Expf((w[i]-shift)·scale): a softmax's numerators.
func ExpShift(w []float32, shift, scale float32) {
	done := expShiftAsm(hostISA, w, shift, scale)
	for i := done; i < len(w); i++ {
		w[i] = Expf(float32(w[i]-shift) * scale)
	}
}

// SiLUMul sets g[i] = silu(g[i])·u[i] = g/(1+e^-g)·u, SwiGLU's gate.
func SiLUMul(g, u []float32) {
	u = u[:len(g)]
	done := siluMulAsm(hostISA, g, u)
	for i := done; i < len(g); i++ {
		v := g[i]
		g[i] = float32(v/float32(1+Expf(-v))) * u[i]
	}
}

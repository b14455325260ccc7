package tensor

// Attention's inner loops run over a run of keys or values that lie a
// fixed stride apart (one KV-cache block of one head): these two do them
// with SIMD where the CPU and the head size allow.

// hostISA is the kernel set the free functions below use.
var hostISA = detect()

// Dots sets out[i] = q·k[i·stride : i·stride+len(q)] for i < len(out).
func Dots(out, q, k []float32, stride int) {
	n, d := len(out), len(q)
	if n == 0 || d == 0 {
		clear(out)
		return
	}
	_ = k[(n-1)*stride+d-1]
	if dotsAsm(hostISA, out, q, k, stride) {
		return
	}
	for i := range out {
		kk := k[i*stride : i*stride+d]
		var s float32
		for j, v := range q {
			s += v * kk[j]
		}
		out[i] = s
	}
}

// AddWeighted adds Σ_i w[i]·v[i·stride : i·stride+len(out)] to out.
func AddWeighted(out, w, v []float32, stride int) {
	n, d := len(w), len(out)
	if n == 0 || d == 0 {
		return
	}
	_ = v[(n-1)*stride+d-1]
	if axpyAsm(hostISA, out, w, v, stride) {
		return
	}
	for i, wi := range w {
		vv := v[i*stride : i*stride+d]
		for j := range out {
			out[j] += wi * vv[j]
		}
	}
}

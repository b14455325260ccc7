package tensor

import "math"

// Q8 holds activations quantised per block, as llama.cpp quantises them
// before integer dot products: Q8_0 (blocks of 32, scale rounded to fp16)
// for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weights, Q8_K (blocks of 256, float32 scale)
// for the K-quants.
type Q8 struct {
	Block int
	Q     []int8
	D     []float32 // one scale per block
}

// QuantizeQ8_0 quantises x (a multiple of 32 long) into q, reusing its
// buffers: d = amax/127 rounded to fp16, q = round-half-even(x·127/amax),
// as ggml's x86 path.
func QuantizeQ8_0(x []float32, q *Q8) {
	q.Block = 32
	q.Q = resize(q.Q, len(x))
	q.D = resize(q.D, len(x)/32)
	for b := range len(x) / 32 {
		xs := x[b*32 : b*32+32]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		q.D[b] = RoundF16(amax / 127)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		qs := q.Q[b*32 : b*32+32]
		for j, v := range xs {
			qs[j] = int8(math.RoundToEven(float64(v * id)))
		}
	}
}

// QuantizeQ8_K quantises x (a multiple of 256 long) as ggml's
// quantize_row_q8_K: the scale comes from the element of largest magnitude
// (sign kept), iscale = -127/max, q = round-half-even(iscale·x) capped at
// 127, d = 1/iscale.
func QuantizeQ8_K(x []float32, q *Q8) {
	q.Block = 256
	q.Q = resize(q.Q, len(x))
	q.D = resize(q.D, len(x)/256)
	for b := range len(x) / 256 {
		xs := x[b*256 : b*256+256]
		qs := q.Q[b*256 : b*256+256]
		var amax, mx float32
		for _, v := range xs {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			q.D[b] = 0
			clear(qs)
			continue
		}
		iscale := -127 / mx
		for j, v := range xs {
			qs[j] = int8(min(127, math.RoundToEven(float64(iscale*v))))
		}
		q.D[b] = 1 / iscale
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

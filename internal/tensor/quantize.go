package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Quantize encodes x (whole blocks of t) in format t, appending to dst. It
// uses the plain round-to-nearest reference schemes (no importance
// weighting): good enough for random-weight test and benchmark models.
func Quantize(t gguf.TensorType, x []float32, dst []byte) ([]byte, error) {
	be := t.BlockElems()
	if be == 0 || len(x)%be != 0 {
		return dst, fmt.Errorf("quantize %d values as %s: not whole blocks", len(x), t)
	}
	le := binary.LittleEndian
	for b := 0; b < len(x); b += be {
		xs := x[b : b+be]
		switch t {
		case gguf.F32:
			dst = le.AppendUint32(dst, math.Float32bits(xs[0]))
		case gguf.F16:
			dst = le.AppendUint16(dst, F32ToF16(xs[0]))
		case gguf.BF16:
			dst = le.AppendUint16(dst, F32ToBF16(xs[0]))
		case gguf.Q8_0:
			dst = quantQ8_0(xs, dst)
		case gguf.Q4_0:
			dst = quantQ4_0(xs, dst)
		case gguf.Q5_0:
			dst = quantQ5_0(xs, dst)
		case gguf.Q4_K:
			dst = quantQ4_K(xs, dst)
		case gguf.Q5_K:
			dst = quantQ5_K(xs, dst)
		case gguf.Q6_K:
			dst = quantQ6_K(xs, dst)
		default:
			return dst, fmt.Errorf("quantize: writing %s is not supported (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K are)", t)
		}
	}
	return dst, nil
}

func amaxSigned(xs []float32) (amax, maxv float32) {
	for _, v := range xs {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, maxv = a, v
		}
	}
	return amax, maxv
}

func quantQ8_0(xs []float32, dst []byte) []byte {
	amax, _ := amaxSigned(xs)
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
	for _, v := range xs {
		dst = append(dst, byte(int8(math.Round(float64(v*id)))))
	}
	return dst
}

// quantQ4_0 follows ggml's reference: d = max/-8 with max the signed value
// of largest magnitude, q = clamp(round(x/d)+8, 0, 15).
func quantQ4_0(xs []float32, dst []byte) []byte {
	_, maxv := amaxSigned(xs)
	d := maxv / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
	for j := range 16 {
		q0 := min(15, int(xs[j]*id+8.5))
		q1 := min(15, int(xs[j+16]*id+8.5))
		dst = append(dst, byte(q0)|byte(q1)<<4)
	}
	return dst
}

func quantQ5_0(xs []float32, dst []byte) []byte {
	_, maxv := amaxSigned(xs)
	d := maxv / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	dst = binary.LittleEndian.AppendUint16(dst, F32ToF16(d))
	var qh uint32
	var qs [16]byte
	for j := range 16 {
		q0 := min(31, int(xs[j]*id+16.5))
		q1 := min(31, int(xs[j+16]*id+16.5))
		qs[j] = byte(q0&0xf) | byte(q1&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + 16)
	}
	dst = binary.LittleEndian.AppendUint32(dst, qh)
	return append(dst, qs[:]...)
}

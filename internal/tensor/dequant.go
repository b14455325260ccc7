package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

func f16at(b []byte, i int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[i:])) }

// Dequantize decodes len(dst) elements of type t from src (which must hold
// exactly that many, in whole blocks).
func Dequantize(t gguf.TensorType, src []byte, dst []float32) error {
	be, bb := t.BlockElems(), t.BlockBytes()
	if be == 0 {
		return fmt.Errorf("dequantize: unsupported type %s", t)
	}
	if len(dst)%be != 0 || len(src) != len(dst)/be*bb {
		return fmt.Errorf("dequantize %s: %d bytes for %d elements", t, len(src), len(dst))
	}
	for i := 0; i < len(dst)/be; i++ {
		block, out := src[i*bb:(i+1)*bb], dst[i*be:(i+1)*be]
		switch t {
		case gguf.F32:
			out[0] = math.Float32frombits(binary.LittleEndian.Uint32(block))
		case gguf.F16:
			out[0] = f16at(block, 0)
		case gguf.BF16:
			out[0] = BF16ToF32(binary.LittleEndian.Uint16(block))
		case gguf.Q4_0:
			dequantQ4_0(block, out)
		case gguf.Q4_1:
			dequantQ4_1(block, out)
		case gguf.Q5_0:
			dequantQ5_0(block, out)
		case gguf.Q5_1:
			dequantQ5_1(block, out)
		case gguf.Q8_0:
			dequantQ8_0(block, out)
		case gguf.Q4_K:
			dequantQ4_K(block, out)
		case gguf.Q5_K:
			dequantQ5_K(block, out)
		case gguf.Q6_K:
			dequantQ6_K(block, out)
		default:
			return fmt.Errorf("dequantize: unsupported type %s", t)
		}
	}
	return nil
}

func dequantQ4_0(b []byte, y []float32) {
	d := f16at(b, 0)
	qs := b[2:18]
	for j := range 16 {
		y[j] = float32(int(qs[j]&0x0f)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func dequantQ4_1(b []byte, y []float32) {
	d, m := f16at(b, 0), f16at(b, 2)
	qs := b[4:20]
	for j := range 16 {
		y[j] = float32(qs[j]&0x0f)*d + m
		y[j+16] = float32(qs[j]>>4)*d + m
	}
}

func dequantQ5_0(b []byte, y []float32) {
	d := f16at(b, 0)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := range 16 {
		h0 := byte((qh>>j)<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(int(qs[j]&0x0f|h0)-16) * d
		y[j+16] = float32(int(qs[j]>>4|h1)-16) * d
	}
}

func dequantQ5_1(b []byte, y []float32) {
	d, m := f16at(b, 0), f16at(b, 2)
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j := range 16 {
		h0 := byte((qh>>j)<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(qs[j]&0x0f|h0)*d + m
		y[j+16] = float32(qs[j]>>4|h1)*d + m
	}
}

func dequantQ8_0(b []byte, y []float32) {
	d := f16at(b, 0)
	for j := range 32 {
		y[j] = float32(int8(b[2+j])) * d
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block.
func scaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func dequantQ4_K(b []byte, y []float32) {
	d, dmin := f16at(b, 0), f16at(b, 2)
	scales, q := b[4:16], b[16:144]
	is := 0
	for j := 0; j < 256; j += 64 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := range 32 {
			y[j+l] = d1*float32(q[l]&0xf) - m1
			y[j+32+l] = d2*float32(q[l]>>4) - m2
		}
		q = q[32:]
		is += 2
	}
}

func dequantQ5_K(b []byte, y []float32) {
	d, dmin := f16at(b, 0), f16at(b, 2)
	scales, qh, ql := b[4:16], b[16:48], b[48:176]
	is := 0
	u1, u2 := byte(1), byte(2)
	for j := 0; j < 256; j += 64 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := range 32 {
			h1, h2 := 0, 0
			if qh[l]&u1 != 0 {
				h1 = 16
			}
			if qh[l]&u2 != 0 {
				h2 = 16
			}
			y[j+l] = d1*float32(int(ql[l]&0xf)+h1) - m1
			y[j+32+l] = d2*float32(int(ql[l]>>4)+h2) - m2
		}
		ql = ql[32:]
		is += 2
		u1 <<= 2
		u2 <<= 2
	}
}

func dequantQ6_K(b []byte, y []float32) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := f16at(b, 208)
	for n := 0; n < 256; n += 128 {
		for l := range 32 {
			is := l / 16
			q1 := int(int8(ql[l]&0xf|(qh[l]>>0&3)<<4)) - 32
			q2 := int(int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4)) - 32
			q3 := int(int8(ql[l]>>4|(qh[l]>>4&3)<<4)) - 32
			q4 := int(int8(ql[l+32]>>4|(qh[l]>>6&3)<<4)) - 32
			y[n+l] = d * float32(int8(sc[is])) * float32(q1)
			y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
		ql, qh, sc = ql[64:], qh[32:], sc[8:]
	}
}

package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// array decodes n values of type t into a typed slice, after checking that
// the file holds them: a hostile count cannot force a large allocation.
func (r *cursor) array(t ValueType, n uint64) any {
	if r.err != nil {
		return nil
	}
	switch t {
	case TypeArray:
		r.err = fmt.Errorf("nested arrays are not supported")
		return nil
	case TypeString:
		// Each string takes at least its 8-byte length.
		if n > uint64(r.left()/8) {
			r.err = fmt.Errorf("array of %d strings runs past the end of the file", n)
			return nil
		}
		out := make([]string, n)
		for i := range out {
			out[i] = r.str()
			if r.err != nil {
				return nil
			}
		}
		return out
	case TypeBool:
		p := r.take(checkedLen(r, n, 1))
		if p == nil {
			return nil
		}
		out := make([]bool, n)
		for i, c := range p {
			out[i] = c != 0
		}
		return out
	}
	size := t.size()
	if size == 0 {
		r.err = fmt.Errorf("unknown array element type %d", uint32(t))
		return nil
	}
	p := r.take(checkedLen(r, n, size))
	if p == nil {
		return nil
	}
	return decodeArray(t, p, int(n))
}

// checkedLen is n*size, or -1 (which take rejects) when that exceeds what
// is left.
func checkedLen(r *cursor, n uint64, size int) int {
	if n > uint64(r.left()/size) {
		r.err = fmt.Errorf("array of %d values runs past the end of the file", n)
		return -1
	}
	return int(n) * size
}

func decodeArray(t ValueType, p []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), p...)
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(p[i])
		}
		return out
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(p[2*i:])
		}
		return out
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(p[2*i:]))
		}
		return out
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(p[4*i:])
		}
		return out
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(p[4*i:]))
		}
		return out
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		return out
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(p[8*i:])
		}
		return out
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(p[8*i:]))
		}
		return out
	case TypeFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(p[8*i:]))
		}
		return out
	}
	panic("BUG: gguf: decodeArray of a variable-size type")
}

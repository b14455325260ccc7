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
		return decodeEach(p, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		return decodeEach(p, n, 2, le.Uint16)
	case TypeInt16:
		return decodeEach(p, n, 2, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case TypeUint32:
		return decodeEach(p, n, 4, le.Uint32)
	case TypeInt32:
		return decodeEach(p, n, 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case TypeFloat32:
		return decodeEach(p, n, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case TypeUint64:
		return decodeEach(p, n, 8, le.Uint64)
	case TypeInt64:
		return decodeEach(p, n, 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case TypeFloat64:
		return decodeEach(p, n, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	}
	panic("BUG: gguf: decodeArray of a variable-size type")
}

// decodeEach decodes n values of size bytes each.
func decodeEach[T any](p []byte, n, size int, decode func([]byte) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = decode(p[i*size:])
	}
	return out
}

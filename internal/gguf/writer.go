package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
)

// Writer builds a GGUF version 3 file: add metadata and tensors, then
// WriteTo. Tensor data is kept by reference until then.
type Writer struct {
	kv      []KV
	keys    map[string]bool
	tensors []wtensor
	names   map[string]bool
	align   int
}

type wtensor struct {
	info TensorInfo
	data []byte
}

// NewWriter returns an empty writer with the default alignment.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}, align: DefaultAlignment}
}

// AddKV adds one metadata entry. v is a Go value of a GGUF type (uint8 …
// float64, bool, string) or a slice of one.
func (w *Writer) AddKV(key string, v any) error {
	if w.keys[key] {
		return fmt.Errorf("add metadata %q: key already set", key)
	}
	t, elem, err := typeOf(v)
	if err != nil {
		return fmt.Errorf("add metadata %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("add metadata %q: want a uint32 power of two, got %v", key, v)
		}
		w.align = int(a)
	}
	w.keys[key] = true
	w.kv = append(w.kv, KV{Key: key, Type: t, Elem: elem, Value: v})
	return nil
}

// AddTensor adds a tensor; data must be exactly its encoded size.
func (w *Writer) AddTensor(name string, typ TensorType, dims []int64, data []byte) error {
	if w.names[name] {
		return fmt.Errorf("add tensor %q: name already used", name)
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return fmt.Errorf("add tensor %q: %d dimensions", name, len(dims))
	}
	n := int64(1)
	for _, d := range dims {
		if d <= 0 {
			return fmt.Errorf("add tensor %q: dimension %d", name, d)
		}
		n *= d
	}
	if dims[0]%int64(max(1, typ.BlockElems())) != 0 {
		return fmt.Errorf("add tensor %q: row length %d is not a multiple of %s's block", name, dims[0], typ)
	}
	size, err := typ.RowBytes(n)
	if err != nil {
		return fmt.Errorf("add tensor %q: %w", name, err)
	}
	if int64(len(data)) != size {
		return fmt.Errorf("add tensor %q: %d bytes of data, %s %v needs %d", name, len(data), typ, dims, size)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, wtensor{info: TensorInfo{Name: name, Dims: slices.Clone(dims), Type: typ, Size: size}, data: data})
	return nil
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	e := &encoder{w: cw}
	e.u32(Magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		e.str(kv.Key)
		e.u32(uint32(kv.Type))
		if kv.Type == TypeArray {
			e.u32(uint32(kv.Elem))
		}
		e.value(kv.Value)
	}
	var off int64
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off = alignUp(off+t.Size, int64(w.align))
	}
	e.pad(w.align)
	for _, t := range w.tensors {
		e.bytes(t.data)
		e.pad(w.align)
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, e.err
}

func typeOf(v any) (ValueType, ValueType, error) {
	switch v.(type) {
	case uint8:
		return TypeUint8, 0, nil
	case int8:
		return TypeInt8, 0, nil
	case uint16:
		return TypeUint16, 0, nil
	case int16:
		return TypeInt16, 0, nil
	case uint32:
		return TypeUint32, 0, nil
	case int32:
		return TypeInt32, 0, nil
	case float32:
		return TypeFloat32, 0, nil
	case bool:
		return TypeBool, 0, nil
	case string:
		return TypeString, 0, nil
	case uint64:
		return TypeUint64, 0, nil
	case int64:
		return TypeInt64, 0, nil
	case float64:
		return TypeFloat64, 0, nil
	case []uint8:
		return TypeArray, TypeUint8, nil
	case []int8:
		return TypeArray, TypeInt8, nil
	case []uint16:
		return TypeArray, TypeUint16, nil
	case []int16:
		return TypeArray, TypeInt16, nil
	case []uint32:
		return TypeArray, TypeUint32, nil
	case []int32:
		return TypeArray, TypeInt32, nil
	case []float32:
		return TypeArray, TypeFloat32, nil
	case []bool:
		return TypeArray, TypeBool, nil
	case []string:
		return TypeArray, TypeString, nil
	case []uint64:
		return TypeArray, TypeUint64, nil
	case []int64:
		return TypeArray, TypeInt64, nil
	case []float64:
		return TypeArray, TypeFloat64, nil
	}
	return 0, 0, fmt.Errorf("unsupported value type %T", v)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type encoder struct {
	w   *countWriter
	buf [8]byte
	err error
}

func (e *encoder) bytes(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.bytes(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.bytes(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.bytes([]byte(s)) }

func (e *encoder) pad(align int) {
	if r := e.w.n % int64(align); r != 0 {
		e.bytes(make([]byte, int64(align)-r))
	}
}

func (e *encoder) value(v any) {
	switch v := v.(type) {
	case uint8:
		e.bytes([]byte{v})
	case int8:
		e.bytes([]byte{byte(v)})
	case bool:
		b := byte(0)
		if v {
			b = 1
		}
		e.bytes([]byte{b})
	case uint16:
		binary.LittleEndian.PutUint16(e.buf[:], v)
		e.bytes(e.buf[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.buf[:], uint16(v))
		e.bytes(e.buf[:2])
	case uint32:
		e.u32(v)
	case int32:
		e.u32(uint32(v))
	case float32:
		e.u32(math.Float32bits(v))
	case uint64:
		e.u64(v)
	case int64:
		e.u64(uint64(v))
	case float64:
		e.u64(math.Float64bits(v))
	case string:
		e.str(v)
	case []string:
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	default:
		e.array(v)
	}
}

// array writes a numeric or bool slice: its length, then each element.
func (e *encoder) array(v any) {
	switch v := v.(type) {
	case []uint8:
		e.u64(uint64(len(v)))
		e.bytes(v)
	case []bool:
		writeEach(e, v)
	case []int8:
		writeEach(e, v)
	case []uint16:
		writeEach(e, v)
	case []int16:
		writeEach(e, v)
	case []uint32:
		writeEach(e, v)
	case []int32:
		writeEach(e, v)
	case []float32:
		writeEach(e, v)
	case []uint64:
		writeEach(e, v)
	case []int64:
		writeEach(e, v)
	case []float64:
		writeEach(e, v)
	default:
		panic(fmt.Sprintf("BUG: gguf: value of type %T passed typeOf", v))
	}
}

func writeEach[T any](e *encoder, v []T) {
	e.u64(uint64(len(v)))
	for _, x := range v {
		e.value(x)
	}
}

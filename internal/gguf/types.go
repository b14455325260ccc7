// Package gguf reads and writes GGUF files (versions 2 and 3), the model
// format of llama.cpp: a header, typed metadata key/values, tensor
// descriptors, and aligned tensor data. The reader memory-maps the file and
// hands out tensor data without copying; every size and offset is checked
// first, so a corrupt, truncated or hostile file gives an error, never a
// panic or a huge allocation.
//
// It knows nothing of architectures or kernels, and must not import the
// engine, server or executor packages.
package gguf

import "fmt"

// Magic opens every GGUF file ("GGUF" little-endian).
const Magic = 0x46554747

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// ValueType is the type tag of a metadata value.
type ValueType uint32

const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of a fixed-size value, or 0 for strings and arrays.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// TensorType is ggml's tensor element type.
type TensorType uint32

const (
	F32  TensorType = 0
	F16  TensorType = 1
	Q4_0 TensorType = 2
	Q4_1 TensorType = 3
	Q5_0 TensorType = 6
	Q5_1 TensorType = 7
	Q8_0 TensorType = 8
	Q8_1 TensorType = 9
	Q2_K TensorType = 10
	Q3_K TensorType = 11
	Q4_K TensorType = 12
	Q5_K TensorType = 13
	Q6_K TensorType = 14
	Q8_K TensorType = 15
	BF16 TensorType = 30
)

// typeInfo is a type's block layout: elements per block and bytes per block.
type typeInfo struct {
	name       string
	blockElems int
	blockBytes int
}

// tensorTypes is indexed by type (an array: kernels ask for block sizes in
// their inner loops, where a map lookup showed in profiles).
var tensorTypes = [...]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18},
	Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22},
	Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34},
	Q8_1: {"Q8_1", 32, 36},
	Q2_K: {"Q2_K", 256, 84},
	Q3_K: {"Q3_K", 256, 110},
	Q4_K: {"Q4_K", 256, 144},
	Q5_K: {"Q5_K", 256, 176},
	Q6_K: {"Q6_K", 256, 210},
	Q8_K: {"Q8_K", 256, 292},
}

// info is t's layout, if the reader knows it.
func (t TensorType) info() (typeInfo, bool) {
	if int(t) >= len(tensorTypes) || tensorTypes[t].name == "" {
		return typeInfo{}, false
	}
	return tensorTypes[t], true
}

func (t TensorType) String() string {
	if ti, ok := t.info(); ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems is the number of elements one block of t holds.
func (t TensorType) BlockElems() int { ti, _ := t.info(); return ti.blockElems }

// BlockBytes is the encoded size of one block of t.
func (t TensorType) BlockBytes() int { ti, _ := t.info(); return ti.blockBytes }

// Known reports whether the reader understands t's layout.
func (t TensorType) Known() bool { _, ok := t.info(); return ok }

// ParseTensorType maps a name such as "Q8_0" to its type.
func ParseTensorType(name string) (TensorType, error) {
	for t, ti := range tensorTypes {
		if ti.name != "" && ti.name == name {
			return TensorType(t), nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", name)
}

// RowBytes is the encoded size of n elements of t; n must be a multiple of
// the block size.
func (t TensorType) RowBytes(n int64) (int64, error) {
	ti, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n%int64(ti.blockElems) != 0 {
		return 0, fmt.Errorf("%d elements of %s are not a whole number of %d-element blocks", n, ti.name, ti.blockElems)
	}
	return n / int64(ti.blockElems) * int64(ti.blockBytes), nil
}

//go:build (!amd64 && !arm64) || purego

package tensor

import (
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

func detect() isa { return isaGeneric }

func q8RowsAsm(isa, gguf.TensorType, []byte, int, int, *Q8, int, []float32, int) bool { return false }

func x8Asm(isa, gguf.TensorType, []byte, int, int, int, *Q8, int, []float32, int) bool {
	return false
}

func kxAsm(isa, gguf.TensorType, []byte, int, int, int, []int8, []float32, []int16, []float32) bool {
	return false
}

func kRowsAsm(isa, gguf.TensorType, []byte, int, int, *Q8, int, []float32, int) bool { return false }

func dotF32Asm(isa, []float32, []float32) (float32, int) { return 0, 0 }

func dotF16Asm(isa, []uint16, []float32) (float32, int) { return 0, 0 }

func dotBF16Asm(isa, []uint16, []float32) (float32, int) { return 0, 0 }

func readSumAsm(isa, []byte) (uint64, int) { return 0, 0 }

func quantQ8_0Asm(isa, []float32, []int8, []float32) bool { return false }

func flashAsm(*Flash, unsafe.Pointer, int, unsafe.Pointer, int, int, unsafe.Pointer, unsafe.Pointer, bool) {
	panic("BUG: tensor: no flash assembly in this build")
}

// runsAtOnce: these kernels read one run of groups at a time.
func runsAtOnce(isa) int { return 1 }

// quantQ8_KAsm: no Q8_K quantiser here.
func quantQ8_KAsm(isa, []float32, []int8, []float32, []int16) int { return 0 }

// x8RecordsAsm: the X8 records are written in Go here.
func x8RecordsAsm(isa, []int8, []float32, int32, []byte, int) bool { return false }

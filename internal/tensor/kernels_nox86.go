//go:build !amd64 || purego

package tensor

import "github.com/glassbox-llm/glassbox/internal/gguf"

// The kernels only x86 has (exp and SiLU, the AVX2 K-quant tiles, the
// float tiles, BF16 rounding and packing): pure Go runs them elsewhere.

func expShiftAsm(isa, []float32, float32, float32) int { return 0 }

func siluMulAsm(isa, []float32, []float32) int { return 0 }

func kx8Asm(isa, gguf.TensorType, []byte, int, int, *Q8, int, []float32, int) bool { return false }

func floatRowsAsm(isa, floatKind, []byte, int, int, int, []float32, []float32, int, []float32, int) int {
	return -1
}

func runsTileZ(isa, floatKind, int) bool { return false }

func widens(isa, floatKind, int) bool { return false }

func rowsWideAsm(_ isa, _ floatKind, _ []uint16, _, _ int, _, _ []float32, _ int, _ []float32, _ int, buf []float32) (int, []float32) {
	return -1, buf
}

func roundActsAsm(isa, bool, []float32, []float32) int { return 0 }

func bf16RowsAsm(isa, []uint16, []uint16, int, int, int, []float32, int) bool { return false }

func packBF16Asm(isa, []float32, []uint16) int { return 0 }

package tensor

import (
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Kernels says which kernels this machine runs, for start-up logs and
// metric labels.
type Kernels struct {
	// ISA is the instruction set of the matmul and attention kernels:
	// "avx512bf16" (AVX-512 VNNI and BF16), "avx512vnni", "avx2",
	// "neon-dotprod", "neon" or "generic" (pure Go).
	ISA string
	// Layout is "repacked" when weights of the Repacked types are
	// rearranged at load (rows in SIMD lanes, tiles of tokens; models read
	// into memory only), else "rows" (GGUF's own layout).
	Layout string
	// Repacked lists the GGUF types the loader repacks on this CPU.
	Repacked []string
}

// KernelInfo reports the kernel set Matrix and Flash use here.
func KernelInfo() Kernels {
	k := detect()
	info := Kernels{ISA: k.String(), Layout: "rows"}
	for _, t := range []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		if repacks(k, t) {
			info.Repacked = append(info.Repacked, t.String())
		}
	}
	if len(info.Repacked) > 0 {
		info.Layout = "repacked"
	}
	return info
}

func (k Kernels) String() string {
	if len(k.Repacked) == 0 {
		return k.ISA + ", " + k.Layout
	}
	return k.ISA + ", " + k.Layout + " (" + strings.Join(k.Repacked, " ") + ")"
}

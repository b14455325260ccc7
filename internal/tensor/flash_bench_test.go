package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkFlash measures one Flash step (16 keys) per operation for the
// query rows of a GQA group (7: Qwen2.5, 8: TinyLlama) and a prefill
// chunk's worth (64), head size 64, with the tile in L1: GFLOP/s counts
// the scores and the weighted sum (4·rows·16·d).
func BenchmarkFlash(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const d = 64
	k32, v32 := randFloats(r, d*FlashKeys), randFloats(r, FlashKeys*d)
	k16, v16 := make([]uint16, len(k32)), make([]uint16, len(v32))
	for i := range k32 {
		k16[i], v16[i] = F32ToF16(k32[i]), F32ToF16(v32[i])
	}
	for _, rows := range []int{7, 8, 64} {
		for _, f16 := range []bool{true, false} {
			for _, k := range levels() {
				b.Run(fmt.Sprintf("rows%d/f16=%v/%s", rows, f16, k), func(b *testing.B) {
					defer func() { hostISA = detect() }()
					hostISA = k
					var f Flash
					f.Reset(rows, d)
					copy(f.Q, randFloats(r, rows*d))
					for i := range f.Lim {
						f.Lim[i] = FlashKeys
					}
					for b.Loop() {
						if f16 {
							f.StepF16(k16, FlashKeys, v16, d, FlashKeys, nil, nil)
						} else {
							f.StepF32(k32, FlashKeys, v32, d, FlashKeys, nil, nil)
						}
					}
					b.ReportMetric(float64(b.N)*4*float64(rows*FlashKeys*d)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

package cuda

import (
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// TestGraphMemoryWithinReserve captures every bucket's decode graph of
// stories260K and of the random Qwen2.5-0.5B (where gpu-check makes it):
// the device memory the graphs took stays within what KVBlocks sets
// aside for them (graphBytes), and each replay gives the logits its
// bucket's eager warm-up gave for the same step.
func TestGraphMemoryWithinReserve(t *testing.T) {
	d := openTestDevice(t)
	for _, file := range []string{"stories260K.gguf", "qwen2.5-0.5b-f16.gguf"} {
		t.Run(file, func(t *testing.T) {
			w := testModel(t, file)
			e := startExecutor(t, d, w, 64, false)
			free := func() int64 {
				var f int64
				e.dev.run(t, func() (err error) { f, _, err = e.dev.ctx.MemInfo(); return err })
				return f
			}
			before := free()
			greedy := sampling.Defaults()
			greedy.Temperature = 0
			for _, size := range e.buckets {
				b := &engine.Batch{NumTokens: size}
				for i := range size {
					b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1 + i}, Pos: 0, BlockTable: []int{i}, Sample: true, Params: &greedy})
				}
				var r engine.StepResult
				r.Samples = make([]sampling.Result, size)
				if err := e.Execute(b, &r); err != nil { // the warm-up, eager; then the capture
					t.Fatal(err)
				}
				warm := e.logitsRows(t)
				if err := e.Execute(b, &r); err != nil { // the replay
					t.Fatal(err)
				}
				if e.gc.eagerFor(size) {
					t.Errorf("bucket %d: the capture failed", size)
				}
				checkClose(t, "replayed logits", e.logitsRows(t), warm, 1e-6)
			}
			took, kept := before-free(), graphBytes(w.Config.Layers, len(e.buckets))
			t.Logf("%s: %d graphs took %.1f MiB of device memory; %.1f MiB kept for them", file, len(e.buckets), float64(took)/(1<<20), float64(kept)/(1<<20))
			if took > kept {
				t.Errorf("the graphs took %d bytes, past the %d kept for them", took, kept)
			}
		})
	}
}

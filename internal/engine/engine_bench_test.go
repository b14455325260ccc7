package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// zeroExec costs nothing: the benchmark measures the engine alone.
type zeroExec struct{}

func (zeroExec) Execute(b *Batch, r *StepResult) error {
	for i := range b.Seqs {
		r.Samples[i].Token = 7
	}
	return nil
}

// BenchmarkStep measures one decode step of the engine (schedule, batch,
// deliver to every stream, observe) with a zero-cost executor, and reads
// every stream once per step as a server would; with the watchdog, Execute
// runs on the executor goroutine (the difference is its hand-off).
func BenchmarkStep(b *testing.B) {
	for _, c := range []struct {
		n        int
		watchdog time.Duration
	}{{256, 0}, {1024, 0}, {256, time.Minute}} {
		n := c.n
		b.Run(fmt.Sprintf("seqs=%d/watchdog=%s", n, c.watchdog), func(b *testing.B) {
			cfg := Config{MaxNumSeqs: n, MaxNumBatchedTokens: 8192, MaxModelLen: 1 << 20, BlockSize: 16,
				NumBlocks: 1 << 21, EnablePrefixCaching: true, MaxWaiting: n, StepTimeout: c.watchdog}
			e, err := New(cfg, zeroExec{}, nopObserver{})
			if err != nil {
				b.Fatal(err)
			}
			streams := make([]*Stream, n)
			for i := range n {
				p := sampling.Defaults()
				p.MaxTokens = 1<<20 - 64
				p.IgnoreEOS = true
				streams[i], err = e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(32, i*100), Params: p})
				if err != nil {
					b.Fatal(err)
				}
			}
			e.drain()
			ctx := context.Background()
			for e.sched.NumWaiting() > 0 || e.steps < 2 {
				e.step()
			}
			for _, s := range streams {
				s.Next(ctx)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				e.step()
				for _, s := range streams {
					s.Next(ctx)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/step")
			e.Stop() // ends the executor goroutine
		})
	}
}

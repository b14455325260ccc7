package cuda

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

func cpuExecutor(t *testing.T, w *model.Weights, blocks int) engine.Executor {
	x, err := cpu.New(w, cpu.Config{NumBlocks: blocks, BlockSize: 16, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	return x
}

// counter sums the engine's step events.
type counter struct {
	mu                sync.Mutex
	prefixHits, steps int
	preempted         int
}

func (c *counter) ObserveStep(s *engine.StepEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefixHits += s.PrefixHits
	c.preempted += s.Preemptions
	c.steps++
}

func (c *counter) ObserveFinished(*engine.FinishedEvent) {}

func newEngineObserved(t *testing.T, x engine.Executor, blocks int, obs engine.Observer) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 256, MaxModelLen: 512, BlockSize: 16,
		NumBlocks: blocks, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{-1}}, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func newEngine(t *testing.T, x engine.Executor, blocks int) *engine.Engine {
	return newEngineObserved(t, x, blocks, nil)
}

func readTokens(s *engine.Stream) []int {
	var out []int
	for {
		o, ok := s.Next(context.Background())
		if !ok {
			return out
		}
		out = append(out, o.Tokens...)
	}
}

// TestBatchWithPreemptionAndPrefixHits runs sixteen greedy requests that
// share a prompt prefix through an engine whose cache holds a fraction
// of what they need: prefix hits, chunked prefill and preemption by
// recompute all happen, every request gets the tokens the CPU executor
// gives it, and every block is free at the end.
func TestBatchWithPreemptionAndPrefixHits(t *testing.T) {
	d := openTestDevice(t)
	w := testModel(t, "stories260K.gguf")
	const blocks, n = 32, 48 // 32 blocks: one max-model-len sequence; the batch needs three times that
	prompts := make([][]int, 16)
	for i := range prompts {
		prompts[i] = []int{1, 403, 407, 261, 378}
		for j := range 35 { // a shared prefix of two full blocks and more
			prompts[i] = append(prompts[i], 3+(j*13)%400)
		}
		for j := range 3 + i%5 {
			prompts[i] = append(prompts[i], 3+((i*31+j*17)%500))
		}
	}
	run := func(x engine.Executor, obs *counter) ([][]int, engine.Stats) {
		e := newEngineObserved(t, x, blocks, obs)
		streams := make([]*engine.Stream, len(prompts))
		for i, p := range prompts {
			sp := sampling.Defaults()
			sp.Temperature, sp.MaxTokens, sp.IgnoreEOS = 0, n, true
			s, err := e.Submit(&engine.Request{ID: fmt.Sprint(i), Prompt: p, Params: sp})
			if err != nil {
				t.Fatal(err)
			}
			streams[i] = s
		}
		out := make([][]int, len(streams))
		var wg sync.WaitGroup
		for i, s := range streams {
			wg.Go(func() { out[i] = readTokens(s) })
		}
		wg.Wait()
		return out, e.Stats()
	}
	var gpuObs, cpuObs counter
	gpu, st := run(startExecutor(t, d, w, blocks, false), &gpuObs)
	want, _ := run(cpuExecutor(t, w, blocks), &cpuObs)
	t.Logf("GPU: %d steps, %d preemptions, %d prefix-hit tokens; blocks free at the end %d of %d", gpuObs.steps, gpuObs.preempted, gpuObs.prefixHits, st.KVFree, st.KVBlocks)
	for i := range gpu {
		if len(gpu[i]) != n || !slices.Equal(gpu[i], want[i]) {
			t.Errorf("request %d: GPU %v, CPU %v", i, gpu[i], want[i])
		}
	}
	if gpuObs.preempted == 0 || gpuObs.prefixHits == 0 {
		t.Errorf("%d preemptions and %d prefix-hit tokens: the test meant to force both", gpuObs.preempted, gpuObs.prefixHits)
	}
	if st.KVFree != st.KVBlocks {
		t.Errorf("%d of %d blocks free after every request ended", st.KVFree, st.KVBlocks)
	}
}

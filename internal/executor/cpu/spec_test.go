package cpu

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/spec"
)

// specCounts adds up the engine's spec-decode counters.
type specCounts struct {
	mu                                 sync.Mutex
	drafts, draftTokens, accepted, pre int
}

func (c *specCounts) ObserveStep(s *engine.StepEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drafts += s.SpecDrafts
	c.draftTokens += s.SpecDraftTokens
	c.accepted += s.SpecAccepted
	c.pre += s.Preemptions
}
func (c *specCounts) ObserveFinished(*engine.FinishedEvent) {}

func startEngine(t testing.TB, w *model.Weights, cfg engine.Config, obs engine.Observer) *engine.Engine {
	t.Helper()
	x, err := New(w, Config{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(cfg, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; x.Close() })
	return e
}

// randomWeights is a model our own code generates: the tiny llama shape
// with random Q8_0 weights.
func randomWeights(t *testing.T) *model.Weights {
	t.Helper()
	shape, _ := model.LookupShape("tiny")
	var buf bytes.Buffer
	if err := model.WriteRandom(&buf, model.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// specPrompts mixes prompts that repeat themselves (prompt lookup finds
// drafts the model accepts) with ones that do not, some sharing a prefix.
func specPrompts(vocab int) [][]int {
	var ps [][]int
	story := []int{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317}
	for i := range 12 {
		var p []int
		switch i % 3 {
		case 0: // a passage said twice, then its start again
			p = append(p, story...)
			p = append(p, story...)
			p = append(p, story[:3+i%5]...)
		case 1: // shares the story's prefix, then its own tokens
			p = append(p, story[:6]...)
			for j := range 10 + i {
				p = append(p, 3+(i*131+j*71)%(vocab-3))
			}
		default: // nothing repeats
			for j := range 20 {
				p = append(p, 3+(i*37+j*53)%(vocab-3))
			}
		}
		ps = append(ps, p)
	}
	return ps
}

// TestSpeculativeGreedyTokenForToken: greedy decoding with n-gram
// speculation produces exactly the tokens of plain decoding, on the real
// stories260K and on a random-weight model, in a batch of concurrent
// requests where some draft and are accepted, some never match, a small
// KV cache forces preemption, and prefix caching is on; every KV block is
// back in the free pool afterwards.
func TestSpeculativeGreedyTokenForToken(t *testing.T) {
	for _, m := range []struct {
		name string
		w    func(*testing.T) *model.Weights
	}{{"stories260K", func(t *testing.T) *model.Weights { return stories(t) }}, {"random", randomWeights}} {
		t.Run(m.name, func(t *testing.T) {
			w := m.w(t)
			prompts := specPrompts(w.Config.Vocab)
			const n = 40
			base := engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 64, MaxModelLen: 256, BlockSize: 16,
				NumBlocks: 512, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{2}}
			plain := startEngine(t, w, base, nil)
			want := make([][]int, len(prompts))
			for i, p := range prompts {
				want[i] = generate(t, plain, fmt.Sprint("plain", i), p, n)
			}

			cfg := base
			cfg.NumBlocks = 24 // 12 requests of up to 5 blocks each: preemption
			cfg.Speculative = spec.Config{Method: spec.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 2, PromptLookupMax: 5}
			var c specCounts
			e := startEngine(t, w, cfg, &c)
			var wg sync.WaitGroup
			for i, p := range prompts {
				wg.Go(func() {
					if i%4 == 3 {
						// Not every sequence drafts: one under
						// min_tokens decodes plainly throughout.
						if got := generateMin(t, e, fmt.Sprint("min", i), p, n); !slices.Equal(got, want[i]) {
							t.Errorf("request %d (min_tokens): speculative %v, plain %v", i, got, want[i])
						}
						return
					}
					if got := generate(t, e, fmt.Sprint("spec", i), p, n); !slices.Equal(got, want[i]) {
						t.Errorf("request %d: speculative %v, plain %v", i, got, want[i])
					}
				})
			}
			wg.Wait()
			if err := e.AwaitIdle(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Logf("drafts %d, draft tokens %d, accepted %d, preemptions %d", c.drafts, c.draftTokens, c.accepted, c.pre)
			if c.accepted == 0 || c.accepted == c.draftTokens {
				t.Errorf("accepted %d of %d draft tokens: the batch should have both", c.accepted, c.draftTokens)
			}
			if c.pre == 0 {
				t.Errorf("no preemption with %d blocks", cfg.NumBlocks)
			}
			if s := e.Stats(); s.KVFree != s.KVBlocks || s.Running != 0 {
				t.Errorf("after the batch: %d of %d KV blocks free, %d running", s.KVFree, s.KVBlocks, s.Running)
			}
		})
	}
}

// generateMin is generate with min_tokens past the whole output: its
// sequence never drafts.
func generateMin(t *testing.T, e *engine.Engine, id string, prompt []int, n int) []int {
	p := sampling.Defaults()
	p.Temperature, p.MaxTokens, p.MinTokens, p.IgnoreEOS = 0, n, n, true
	s, err := e.Submit(&engine.Request{ID: id, Prompt: prompt, Params: p})
	if err != nil {
		t.Error(err)
		return nil
	}
	var out []int
	for {
		o, ok := s.Next(context.Background())
		if !ok {
			return out
		}
		out = append(out, o.Tokens...)
	}
}

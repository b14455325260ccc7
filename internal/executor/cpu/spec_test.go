package cpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// specCounts adds up the engine's spec-decode counters.
type specCounts struct {
	mu                                 sync.Mutex
	drafts, draftTokens, accepted, pre int
	perPos                             []int
	readBytes                          float64 // the executor's estimate: weights and K/V read
	generated                          int
}

func (c *specCounts) ObserveStep(s *engine.StepEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drafts += s.SpecDrafts
	c.draftTokens += s.SpecDraftTokens
	c.accepted += s.SpecAccepted
	c.pre += s.Preemptions
	for len(c.perPos) < len(s.SpecAcceptedPerPos) {
		c.perPos = append(c.perPos, 0)
	}
	for i, n := range s.SpecAcceptedPerPos {
		c.perPos[i] += n
	}
	c.readBytes += s.ReadBytes
	c.generated += s.GenerationTokens
}
func (c *specCounts) ObserveFinished(*engine.FinishedEvent) {}

func startEngine(t testing.TB, w *model.Weights, cfg engine.Config, obs engine.Observer) *engine.Engine {
	t.Helper()
	return startDrafting(t, w, nil, cfg, obs)
}

// startDrafting is startEngine with a draft model (nil for none).
func startDrafting(t testing.TB, w, draft *model.Weights, cfg engine.Config, obs engine.Observer) *engine.Engine {
	t.Helper()
	e, run := newDrafting(t, w, draft, cfg, obs)
	run()
	return e
}

// newDrafting is startDrafting with the engine's loop left to run: a
// test that submits its whole batch first gets that batch in the first
// steps, whatever the machine's load (one that must preempt then does).
func newDrafting(t testing.TB, w, draft *model.Weights, cfg engine.Config, obs engine.Observer) (*engine.Engine, func()) {
	t.Helper()
	x, err := New(w, Config{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, Threads: 2, Draft: draft})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(cfg, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	run := sync.OnceFunc(func() { go func() { e.Run(ctx); close(done) }() })
	t.Cleanup(func() { run(); cancel(); <-done; x.Close() })
	return e, run
}

// randomModel is a model our own code generates: shape's with random
// Q8_0 weights (and the synthetic tokenizer).
func randomModel(t testing.TB, shape string, seed uint64) *model.Weights {
	t.Helper()
	return randomModelOf(t, shape, model.RandomSpec{Seed: seed})
}

// randomModelOf is randomModel with more of the spec: a layer count
// (0: the shape's), quiet layers.
func randomModelOf(t testing.TB, shape string, spec model.RandomSpec) *model.Weights {
	t.Helper()
	sh, err := model.LookupShape(shape)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Shape.Layers > 0 {
		sh.Layers = spec.Shape.Layers
	}
	spec.Shape, spec.Type = sh, gguf.Q8_0
	var buf bytes.Buffer
	if err := model.WriteRandom(&buf, spec); err != nil {
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
	}{{"stories260K", func(t *testing.T) *model.Weights { return stories(t) }}, {"random", func(t *testing.T) *model.Weights { return randomModel(t, "tiny", 7) }}} {
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
			cfg.Speculative = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 2, PromptLookupMax: 5}
			var c specCounts
			e, run := newDrafting(t, w, nil, cfg, &c)
			streams := make([]*engine.Stream, len(prompts))
			for i, p := range prompts {
				min := 0
				if i%4 == 3 {
					min = n // not every sequence drafts: one under min_tokens decodes plainly throughout
				}
				streams[i] = submitWith(t, e, fmt.Sprint("spec", i), p, n, min)
			}
			run()
			for i, got := range readAll(streams) {
				if !slices.Equal(got, want[i]) {
					t.Errorf("request %d: speculative %v, plain %v", i, got, want[i])
				}
			}
			batchDone(t, e, &c, cfg.NumBlocks)
			if c.accepted == 0 || c.accepted == c.draftTokens {
				t.Errorf("accepted %d of %d draft tokens: the batch should have both", c.accepted, c.draftTokens)
			}
		})
	}
}

// batchDone waits until e is idle after a batch that was to preempt, and
// checks what every such test wants afterwards: a preemption happened,
// and every KV block is back in the free pool with nothing running. c's
// counts are final when it returns.
func batchDone(t *testing.T, e *engine.Engine, c *specCounts, blocks int) {
	t.Helper()
	if err := e.AwaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("drafts %d, draft tokens %d, accepted %d, preemptions %d", c.drafts, c.draftTokens, c.accepted, c.pre)
	if c.pre == 0 {
		t.Errorf("no preemption with %d blocks", blocks)
	}
	if s := e.Stats(); s.KVFree != s.KVBlocks || s.Running != 0 {
		t.Errorf("after the batch: %d of %d KV blocks free, %d running", s.KVFree, s.KVBlocks, s.Running)
	}
}

// result is one request's whole output.
type result struct {
	tokens   []int
	logprobs []sampling.Result
	reason   engine.FinishReason
}

func collect(t *testing.T, e *engine.Engine, id string, prompt []int, p sampling.Params) result {
	s, err := e.Submit(&engine.Request{ID: id, Prompt: prompt, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	var r result
	for {
		o, ok := s.Next(context.Background())
		if !ok {
			return r
		}
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		r.tokens = append(r.tokens, o.Tokens...)
		r.logprobs = append(r.logprobs, o.Logprobs...)
		if o.Finished {
			r.reason = o.FinishReason
		}
	}
}

// TestSpeculativeLogprobsAndStops: with drafts accepted, logprobs (and
// their top alternatives) are exactly plain decoding's, and a stop token
// (EOS not ignored) ends the output where it ends plain decoding's, with
// the same finish reason, whether it was sampled or accepted as a draft.
func TestSpeculativeLogprobsAndStops(t *testing.T) {
	w := stories(t)
	cfg := engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 128, MaxModelLen: 256, BlockSize: 16,
		NumBlocks: 128, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{2}}
	plain := startEngine(t, w, cfg, nil)
	cfg.Speculative = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 2, PromptLookupMax: 5}
	var c specCounts
	e := startEngine(t, w, cfg, &c)
	for i, prompt := range specPrompts(w.Config.Vocab) {
		if i%3 != 0 {
			continue // the repeating ones
		}
		p := sampling.Defaults()
		p.Temperature, p.MaxTokens, p.Logprobs = 0, 40, 2
		want := collect(t, plain, fmt.Sprint("plain", i), prompt, p)
		if len(want.tokens) > 12 {
			p.StopTokenIDs = []int{want.tokens[12]}
			want = collect(t, plain, fmt.Sprint("plain-stop", i), prompt, p)
		}
		got := collect(t, e, fmt.Sprint("spec", i), prompt, p)
		if !slices.Equal(got.tokens, want.tokens) || got.reason != want.reason {
			t.Errorf("prompt %d: %v (%s), plain %v (%s)", i, got.tokens, got.reason, want.tokens, want.reason)
			continue
		}
		for j := range want.logprobs {
			g, w := got.logprobs[j], want.logprobs[j]
			if g.Token != w.Token || g.Logprob != w.Logprob || !slices.Equal(g.Top, w.Top) {
				t.Errorf("prompt %d token %d: logprobs %+v, plain %+v", i, j, g, w)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted == 0 {
		t.Error("no draft accepted: the test tested nothing")
	}
}

// TestSpeculativeSamplingKeepsTheDistribution: seeded sampling through the
// engine with speculation draws each output token from the distribution
// plain decoding draws it from: the tokens at output positions 2 and 5,
// over 300 seeds each way on stories260K with a repeating prompt (drafts
// accepted and rejected), pass a two-sample χ² test of homogeneity at
// 0.1% (fixed seeds: it passes or fails for good); with prompt lookup and
// with a draft model (the target drafting greedily for itself).
func TestSpeculativeSamplingKeepsTheDistribution(t *testing.T) {
	w := stories(t)
	prompt := specPrompts(w.Config.Vocab)[0]
	const seeds, n = 300, 6
	draw := func(sp speculative.Config, draft *model.Weights, c *specCounts) [][]int {
		cfg := engine.Config{MaxNumSeqs: 64, MaxNumBatchedTokens: 512, MaxModelLen: 256, BlockSize: 16,
			NumBlocks: 512, EnablePrefixCaching: true, MaxWaiting: seeds, EOS: []int{2}, Speculative: sp}
		var obs engine.Observer
		if c != nil {
			obs = c
		}
		e := startDrafting(t, w, draft, cfg, obs)
		outs := make([][]int, seeds)
		var wg sync.WaitGroup
		for s := range seeds {
			wg.Go(func() {
				p := sampling.Defaults()
				p.Temperature, p.MaxTokens, p.IgnoreEOS, p.Seed, p.HasSeed = 0.8, n, true, int64(s), true
				outs[s] = collect(t, e, fmt.Sprint(s), prompt, p).tokens
			})
		}
		wg.Wait()
		return outs
	}
	plain := draw(speculative.Config{}, nil, nil)
	for _, m := range []struct {
		name  string
		sp    speculative.Config
		draft *model.Weights
	}{
		{"ngram", speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 2, PromptLookupMax: 5}, nil},
		{"draft_model", speculative.Config{Method: speculative.MethodDraftModel, Model: "self", NumSpeculativeTokens: 3}, w},
	} {
		t.Run(m.name, func(t *testing.T) { checkSameDistribution(t, w, plain, m.sp, m.draft, draw) })
	}
}

func checkSameDistribution(t *testing.T, w *model.Weights, plain [][]int, sp speculative.Config, draft *model.Weights, draw func(speculative.Config, *model.Weights, *specCounts) [][]int) {
	seeds := len(plain)
	var c specCounts
	specd := draw(sp, draft, &c)
	if c.accepted == 0 || c.accepted == c.draftTokens {
		t.Fatalf("accepted %d of %d drafts: want some of each", c.accepted, c.draftTokens)
	}
	t.Logf("accepted %d of %d drafts", c.accepted, c.draftTokens)
	for _, pos := range []int{2, 5} {
		a, b := map[int]int{}, map[int]int{}
		for s := range seeds {
			a[plain[s][pos]]++
			b[specd[s][pos]]++
		}
		// Cells with fewer than 10 draws in all are pooled.
		var rows [][2]float64
		var other [2]float64
		for tok := range w.Config.Vocab {
			if a[tok]+b[tok] == 0 {
				continue
			}
			if a[tok]+b[tok] < 10 {
				other[0] += float64(a[tok])
				other[1] += float64(b[tok])
				continue
			}
			rows = append(rows, [2]float64{float64(a[tok]), float64(b[tok])})
		}
		if other[0]+other[1] > 0 {
			rows = append(rows, other)
		}
		var x float64
		for _, r := range rows {
			e := (r[0] + r[1]) / 2 // equal sample sizes
			x += (r[0]-e)*(r[0]-e)/e + (r[1]-e)*(r[1]-e)/e
		}
		df := len(rows) - 1
		if df < 1 {
			t.Fatalf("position %d: one token only", pos)
		}
		d := float64(df)
		cc := 1 - 2/(9*d) + 3.090*math.Sqrt(2/(9*d)) // Wilson–Hilferty, 0.1%
		if crit := d * cc * cc * cc; x > crit {
			t.Errorf("position %d: χ² %.1f over %d degrees of freedom, above the 0.1%% critical %.1f", pos, x, df, crit)
		}
	}
}

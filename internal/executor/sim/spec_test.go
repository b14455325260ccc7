package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

type specCounts struct {
	mu                    sync.Mutex
	draftTokens, accepted int
}

func (c *specCounts) ObserveStep(s *engine.StepEvent) {
	c.mu.Lock()
	c.draftTokens += s.SpecDraftTokens
	c.accepted += s.SpecAccepted
	c.mu.Unlock()
}
func (c *specCounts) ObserveFinished(*engine.FinishedEvent) {}

// runSpec decodes prompts greedily, concurrently, through an engine on
// the simulator configured with sp (and PlainTokens when plain), and
// returns the outputs.
func runSpec(t *testing.T, sp speculative.Config, plain bool, prompts [][]int, c *specCounts) [][]int {
	t.Helper()
	x := newExec(t, Config{Speculative: sp, PlainTokens: plain})
	var obs engine.Observer
	if c != nil {
		obs = c
	}
	e, err := engine.New(engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 128, MaxModelLen: 512, BlockSize: 16,
		NumBlocks: 64, EnablePrefixCaching: true, MaxWaiting: 100, Speculative: sp}, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	outs := make([][]int, len(prompts))
	var wg sync.WaitGroup
	for i, pr := range prompts {
		wg.Go(func() {
			p := sampling.Defaults()
			p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, 48, true
			s, err := e.Submit(&engine.Request{ID: fmt.Sprint(i), Prompt: pr, Params: p})
			if err != nil {
				t.Error(err)
				return
			}
			for {
				o, ok := s.Next(context.Background())
				if !ok {
					return
				}
				outs[i] = append(outs[i], o.Tokens...)
			}
		})
	}
	wg.Wait()
	if err := e.AwaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.KVFree != s.KVBlocks {
		t.Errorf("%d of %d KV blocks free after the run", s.KVFree, s.KVBlocks)
	}
	return outs
}

// TestSpeculationVerifiesAgainstTheFakeModel: n-gram drafts verified by
// the simulator leave greedy output token for token as plain decoding's;
// synthetic acceptance accepts at its rates (1: every draft, 0: none).
func TestSpeculationVerifiesAgainstTheFakeModel(t *testing.T) {
	v := NewVocab()
	var prompts [][]int
	for i := range 6 {
		text := "the cat sat on the mat and the dog sat on the log"
		if i%2 == 0 {
			text = strings.Repeat(text+" ", 3)
		} else {
			text = fmt.Sprintf("a question number %d about something else entirely", i)
		}
		prompts = append(prompts, v.Encode(text))
	}
	ngram := speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 1, PromptLookupMax: 3}
	for _, plainTokens := range []bool{false, true} {
		want := runSpec(t, speculative.Config{}, plainTokens, prompts, nil)
		var c specCounts
		got := runSpec(t, ngram, plainTokens, prompts, &c)
		for i := range prompts {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("plain tokens %v, request %d: speculative %v, plain %v", plainTokens, i, got[i], want[i])
			}
		}
		if c.draftTokens == 0 {
			t.Fatalf("plain tokens %v: nothing drafted", plainTokens)
		}
		t.Logf("plain tokens %v: %d of %d drafts accepted", plainTokens, c.accepted, c.draftTokens)
	}

	for _, tc := range []struct {
		rates []float64
		all   bool
		plain bool
	}{{[]float64{1, 1, 1}, true, false}, {[]float64{0, 0, 0}, false, false}, {[]float64{1, 1, 1}, true, true}} {
		sp := ngram
		sp.RejectionSampleMethod, sp.Synthetic = speculative.RejectSynthetic, tc.rates
		var c specCounts
		runSpec(t, sp, tc.plain, prompts, &c)
		if c.draftTokens == 0 || (tc.all && c.accepted != c.draftTokens) || (!tc.all && c.accepted != 0) {
			t.Errorf("synthetic rates %v (plain tokens %v): %d of %d drafts accepted", tc.rates, tc.plain, c.accepted, c.draftTokens)
		}
	}
}

// TestVerifyAcceptsWhatItWouldSample: drafts that are the fake model's
// own greedy continuation are all accepted, with the token after them as
// the sample; a wrong draft stops acceptance there, replaced by the
// model's token.
func TestVerifyAcceptsWhatItWouldSample(t *testing.T) {
	e := newExec(t, Config{})
	p := params(0)
	prompt := e.Vocab().Encode("the cat sat on the mat")
	cont := generate(t, e, "the cat sat on the mat", p, nil, 5)
	if len(cont) < 5 {
		t.Fatalf("continuation %v", cont)
	}
	for _, tc := range []struct {
		draft    []int
		accepted int
	}{{cont[:4], 4}, {[]int{cont[0], cont[1], cont[1] + 1, cont[3]}, 2}} {
		toks := append([]int{prompt[len(prompt)-1]}, tc.draft...)
		b := &engine.Batch{Seqs: []engine.SeqBatch{{
			Tokens: toks, Pos: len(prompt) - 1, Sample: true, History: prompt, NumPrompt: len(prompt),
			Params: &p, Draft: tc.draft,
		}}, NumTokens: len(toks)}
		var r engine.StepResult
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, a := range r.Accepted[0] {
			got = append(got, a.Token)
		}
		got = append(got, r.Samples[0].Token)
		if len(r.Accepted[0]) != tc.accepted || !slices.Equal(got, cont[:tc.accepted+1]) {
			t.Errorf("draft %v: accepted %d, tokens %v; want %d, %v", tc.draft, len(r.Accepted[0]), got, tc.accepted, cont[:tc.accepted+1])
		}
	}
}

// TestSyntheticAcceptanceDraftsEveryStep: with synthetic acceptance the
// engine drafts every step, as a draft model would, also for a load that
// never repeats an n-gram (a simulated load's plain tokens rarely do), and
// the rates set the acceptance: vLLM's way of benchmarking speculation at
// a chosen acceptance.
func TestSyntheticAcceptanceDraftsEveryStep(t *testing.T) {
	v := NewVocab()
	var prompts [][]int
	for i := range 4 {
		prompts = append(prompts, v.Encode(fmt.Sprintf("question %d: why", i)))
	}
	for _, tc := range []struct {
		rates    []float64
		min, max float64 // acceptance over the draft tokens
	}{{[]float64{1, 1, 1}, 1, 1}, {[]float64{0.9, 0.8, 0.7}, 0.6, 0.95}} {
		sp := speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 2, PromptLookupMax: 3,
			RejectionSampleMethod: speculative.RejectSynthetic, Synthetic: tc.rates}
		var c specCounts
		outs := runSpec(t, sp, true, prompts, &c)
		gen := 0
		for _, o := range outs {
			gen += len(o)
		}
		// Drafting 3 every step, a pass yields at most 4 tokens: about
		// three draft tokens for every four generated (fewer at the ends
		// of max_tokens); n-gram lookup finds next to none here.
		if 2*c.draftTokens < gen {
			t.Errorf("rates %v: %d draft tokens for %d generated: not drafting every step", tc.rates, c.draftTokens, gen)
		}
		if a := float64(c.accepted) / float64(max(c.draftTokens, 1)); a < tc.min || a > tc.max {
			t.Errorf("rates %v: acceptance %.2f, want [%g, %g]", tc.rates, a, tc.min, tc.max)
		}
	}
}

package cpu

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// BenchmarkSpeculativeDecode is batch-1 greedy decoding through the
// engine, plain, with n-gram speculation (k=4, n-grams of 2 to 4) and with
// a draft model (k=4), on
// two workloads: "repeat", a passage said twice and then begun again, so
// that the output repeats the input and prompt lookup's drafts are
// accepted; "reject", sampled at temperature 1 (seeded) from a prompt of
// repeated bigrams each followed by a different token, so that what lookup
// drafts the sampler mostly refuses (or, where the output repeats
// nothing, nothing is drafted and lookup's cost is all there is). Models: the real stories260K (so small that a step is
// overhead, not weights) and a SmolLM-135M-shaped model with random Q8_0
// weights (a step streams 145 MB of weights: the bandwidth-bound case
// speculation is for). stories260K drafts for itself (a draft as costly
// as the target: what the mechanism costs); the SmolLM-shaped target's
// layers after the first are quiet (model.RandomSpec.QuietFrom), and its
// draft is that first layer with the same embeddings, a quarter of its
// weights (most of them the 49152-token head). tok/s is decode only (first token to last);
// accepted/draft is the acceptance rate. Run it with -count 5 and compare
// min and median: scripts/bench-spec.sh does.
func BenchmarkSpeculativeDecode(b *testing.B) {
	models := []struct {
		name        string
		load, draft func(testing.TB) *model.Weights
	}{
		{"stories260K", func(t testing.TB) *model.Weights { return stories(t) }, func(t testing.TB) *model.Weights { return stories(t) }},
		{"smollm-135m-random", func(t testing.TB) *model.Weights {
			return randomModelOf(t, "smollm-135m", model.RandomSpec{Seed: 11, QuietFrom: 1, Quiet: 0.05})
		}, func(t testing.TB) *model.Weights {
			return randomModelOf(t, "smollm-135m", model.RandomSpec{Seed: 11, Shape: model.Shape{Layers: 1}})
		}},
	}
	for _, m := range models {
		w, draft := m.load(b), m.draft(b)
		V := w.Config.Vocab
		story := []int{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337}
		var repeat, reject []int
		repeat = append(append(append(repeat, story...), story[1:]...), story[1:6]...)
		for j := range 24 {
			reject = append(reject, 300%V, 301%V, 3+(j*97)%(V-3))
		}
		for _, wl := range []struct {
			name   string
			prompt []int
			temp   float64
		}{{"repeat", repeat, 0}, {"reject", reject, 1}} {
			for _, mode := range []string{"plain", "ngram", "draft"} {
				b.Run(m.name+"/"+wl.name+"/"+mode, func(b *testing.B) {
					cfg := engine.Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 256, MaxModelLen: 512, BlockSize: 16,
						NumBlocks: 64, EnablePrefixCaching: false, MaxWaiting: 4, EOS: []int{2}}
					var d *model.Weights
					switch mode {
					case "ngram":
						cfg.Speculative = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 2, PromptLookupMax: 4}
					case "draft":
						cfg.Speculative = speculative.Config{Method: speculative.MethodDraftModel, Model: "draft", NumSpeculativeTokens: 4}
						d = draft
					}
					var c specCounts
					e := startDrafting(b, w, d, cfg, &c)
					const n = 96
					var decode time.Duration
					for b.Loop() {
						decode += decodeOnce(b, e, wl.prompt, wl.temp, n)
					}
					b.ReportMetric(float64((n-1)*b.N)/decode.Seconds(), "tok/s")
					// Bytes read (weights once per pass of either model,
					// and K/V) per token generated, prompt's included.
					b.ReportMetric(c.readBytes/max(1, float64(c.generated))/1e6, "MB/token")
					if mode != "plain" {
						b.ReportMetric(float64(c.accepted)/max(1, float64(c.draftTokens)), "accepted/draft")
						b.ReportMetric(float64(c.draftTokens)/float64(n*b.N), "drafts/token")
						for i, a := range c.perPos {
							b.ReportMetric(float64(a)/max(1, float64(c.drafts)), fmt.Sprintf("accepted@%d", i))
						}
					}
				})
			}
		}
	}
}

// decodeOnce generates n tokens at temperature temp (seeded) and returns
// the time from the first token to the last.
func decodeOnce(b *testing.B, e *engine.Engine, prompt []int, temp float64, n int) time.Duration {
	p := sampling.Defaults()
	p.Temperature, p.MaxTokens, p.IgnoreEOS, p.Seed, p.HasSeed = temp, n, true, 1, true
	s, err := e.Submit(&engine.Request{Prompt: prompt, Params: p})
	if err != nil {
		b.Fatal(err)
	}
	var first, last time.Time
	for {
		o, ok := s.Next(context.Background())
		if !ok {
			break
		}
		if o.Err != nil {
			b.Fatal(o.Err)
		}
		if first.IsZero() {
			first = time.Now()
		}
		last = time.Now()
	}
	return last.Sub(first)
}

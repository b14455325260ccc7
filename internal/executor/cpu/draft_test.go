package cpu

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// TestDraftModelGreedyTokenForToken: greedy decoding with a draft model
// produces exactly the tokens of plain decoding, on stories260K, with two
// drafts: the target itself (its drafts must be nearly all accepted, which
// holds only if the draft's own K/V follow every verified token, through
// rejections, prefix-cache hits and preemption) and a random-weight model
// of the same vocabulary (mostly rejected). The batch mixes sequences that
// draft with ones under min_tokens that never do, a small KV cache forces
// preemption with prefix caching on, and every block is free afterwards.
func TestDraftModelGreedyTokenForToken(t *testing.T) {
	w := stories(t)
	prompts := specPrompts(w.Config.Vocab)
	const n = 40
	base := engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 64, MaxModelLen: 256, BlockSize: 16,
		NumBlocks: 512, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{2}}
	plain := startEngine(t, w, base, nil)
	want := make([][]int, len(prompts))
	for i, p := range prompts {
		want[i] = generate(t, plain, fmt.Sprint("plain", i), p, n)
	}
	for _, d := range []struct {
		name          string
		draft         *model.Weights
		minAcceptance float64
	}{{"self", w, 0.9}, {"random", randomModel(t, "tiny", 3), 0}} {
		t.Run(d.name, func(t *testing.T) {
			cfg := base
			cfg.NumBlocks = 36 // 12 requests of up to 6 blocks (with the draft's lookahead): preemption
			cfg.Speculative = speculative.Config{Method: speculative.MethodDraftModel, Model: "draft.gguf", NumSpeculativeTokens: 4}
			var c specCounts
			e, run := newDrafting(t, w, d.draft, cfg, &c)
			streams := make([]*engine.Stream, len(prompts))
			for i, p := range prompts {
				min := 0
				if i%4 == 3 {
					min = n // never drafts
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
			acc := float64(c.accepted) / float64(max(c.draftTokens, 1))
			t.Logf("acceptance %.2f", acc)
			if c.draftTokens == 0 {
				t.Fatal("nothing drafted")
			}
			if acc < d.minAcceptance {
				t.Errorf("acceptance %.2f, want at least %.2f", acc, d.minAcceptance)
			}
			if d.minAcceptance == 0 && c.accepted == c.draftTokens {
				t.Errorf("a random draft had all %d drafts accepted", c.draftTokens)
			}
		})
	}
}

// TestDraftModelRefused: a draft of another vocabulary, or an embedding
// model, cannot draft; the error says why.
func TestDraftModelRefused(t *testing.T) {
	w := stories(t)
	other := randomModel(t, "tiny", 3)
	other.Vocab = 600
	emb := randomModel(t, "tiny", 4)
	emb.Config.Pooling = model.PoolMean
	for _, c := range []struct {
		draft *model.Weights
		want  string
	}{{other, "share the target's vocabulary"}, {emb, "embedding model"}} {
		_, err := New(w, Config{NumBlocks: 8, BlockSize: 16, Draft: c.draft})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to say %q", err, c.want)
		}
	}
}

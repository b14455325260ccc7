package workload

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// simTok is the simulator's byte-level vocabulary behind a JSON wire, as
// bench meets a server's /tokenize and /detokenize.
type simTok struct{ v *sim.Vocab }

// wire is what a string looks like after a JSON round trip: invalid UTF-8
// becomes U+FFFD.
func wire(s string) string {
	b, _ := json.Marshal(s)
	var o string
	_ = json.Unmarshal(b, &o)
	return o
}
func (s simTok) ID() string                                        { return "sim" }
func (s simTok) Count(_ context.Context, t string) (int, error)    { return len(s.v.Encode(wire(t))), nil }
func (s simTok) Encode(_ context.Context, t string) ([]int, error) { return s.v.Encode(wire(t)), nil }
func (s simTok) Decode(_ context.Context, ids []int) (string, error) {
	return wire(s.v.Decode(ids)), nil
}
func (s simTok) VocabSize() int     { return s.v.Size() }
func (s simTok) SpecialTokens() int { return 0 }

// TestRandomPromptsSettle: vLLM's random dataset through a byte-level
// vocabulary and the JSON wire gives every prompt exactly its length.
func TestRandomPromptsSettle(t *testing.T) {
	tk := simTok{sim.NewVocab()}
	d := DatasetConfig{Name: "random", RandomInputLen: 300, RandomOutputLen: 8, RandomPrefixLen: 20, RandomRangeRatio: 0.3}
	samples, err := LoadSamples(context.Background(), d, 300, tk, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range samples {
		n, _ := tk.Count(context.Background(), s.Prompt)
		if n != s.PromptLen || n != len(s.PromptIDs) || n < 20+210 || n > 20+390 {
			t.Errorf("prompt %d: %d tokens re-encoded, PromptLen %d, %d ids", i, n, s.PromptLen, len(s.PromptIDs))
		}
	}
}

package simulate

import (
	"context"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Tokenizer is the simulator's vocabulary as a workload tokenizer, which
// builds prompts of exact lengths for a simulated run (the simulated server
// adds no special tokens).
func Tokenizer() workload.IDTokenizer { return vocabTokenizer{sim.NewVocab()} }

type vocabTokenizer struct{ v *sim.Vocab }

func (t vocabTokenizer) ID() string { return "glassbox-sim" }
func (t vocabTokenizer) Count(_ context.Context, s string) (int, error) {
	return len(t.v.Encode(s)), nil
}
func (t vocabTokenizer) Encode(_ context.Context, s string) ([]int, error) { return t.v.Encode(s), nil }
func (t vocabTokenizer) Decode(_ context.Context, ids []int) (string, error) {
	return t.v.Decode(ids), nil
}
func (t vocabTokenizer) VocabSize() int     { return t.v.VocabSize() }
func (t vocabTokenizer) SpecialTokens() int { return 0 }

package simulate

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Tokenizer is the simulator's vocabulary as a workload tokenizer, which
// builds prompts of exact lengths for a simulated run (the simulated server
// adds no special tokens).
//
// It is as wide as a real model's: vLLM's random dataset draws each prompt
// as a run of consecutive ids from a random offset, so two prompts share
// blocks only when their offsets meet, which a 128k-id vocabulary makes
// rare. The simulator's own words number some 4,500, with which most of a
// few thousand random prompts would start alike and hit the prefix cache
// as no real workload does; the ids above them are spelled as private-use
// characters, one per id, so that text and ids round-trip exactly.
func Tokenizer() workload.IDTokenizer { return vocabTokenizer{sim.NewVocab()} }

// WideVocab is the vocabulary the tokenizer draws from: Llama 3's size.
const WideVocab = 128256

// privateBase is the first code point of the supplementary private-use
// planes (15 and 16), which hold an id each above the simulator's words.
const privateBase = 0xF0000

type vocabTokenizer struct{ v *sim.Vocab }

func (t vocabTokenizer) ID() string { return "glassbox-sim" }
func (t vocabTokenizer) Count(ctx context.Context, s string) (int, error) {
	ids, err := t.Encode(ctx, s)
	return len(ids), err
}

func (t vocabTokenizer) Encode(_ context.Context, s string) ([]int, error) {
	var out []int
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWide)
		if i < 0 {
			return t.v.AppendEncode(out, s), nil
		}
		out = t.v.AppendEncode(out, s[:i])
		r, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, t.v.Size()+int(r-privateBase))
		s = s[i+n:]
	}
	return out, nil
}

func (t vocabTokenizer) Decode(_ context.Context, ids []int) (string, error) {
	var b strings.Builder
	size := t.v.Size()
	for _, id := range ids {
		if id >= size && id < WideVocab {
			b.WriteRune(rune(privateBase + id - size))
			continue
		}
		b.Write(t.v.TokenBytes(id))
	}
	return b.String(), nil
}

func isWide(r rune) bool { return r >= privateBase && r < privateBase+WideVocab }

func (t vocabTokenizer) VocabSize() int     { return WideVocab }
func (t vocabTokenizer) SpecialTokens() int { return 0 }

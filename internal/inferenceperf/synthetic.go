package inferenceperf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// syntheticPrompts is inference-perf's synthetic data: lengths drawn as
// the random data's, each prompt a slice of one corpus (the base line and
// data.corpus_file_path, else glassbox's own text) from a random offset,
// lengthened or shortened until the server counts exactly its length.
// inference-perf's default corpus is a Shakespeare text it ships; glassbox
// ships none, so without corpus_file_path the words differ, not the
// lengths.
func syntheticPrompts(ctx context.Context, d *Data, n int, tk workload.Tokenizer, rng *rand.Rand) ([]workload.Sample, error) {
	it, ok := tk.(workload.IDTokenizer)
	if !ok {
		return nil, fmt.Errorf("synthetic data needs a tokenizer that converts ids (the server's /tokenize and /detokenize)")
	}
	corpus := defaultCorpus()
	if d.CorpusFilePath != "" {
		b, err := os.ReadFile(d.CorpusFilePath)
		if err != nil {
			return nil, fmt.Errorf("data.corpus_file_path: %w", err)
		}
		corpus = string(b)
	}
	tokens, err := it.Encode(ctx, workload.SonnetBase+corpus)
	if err != nil {
		return nil, err
	}
	if len(tokens) < 2 {
		return nil, fmt.Errorf("synthetic data: the corpus has %d tokens", len(tokens))
	}
	for _, dist := range []*Distribution{d.InputDistribution, d.OutputDistribution} {
		if tc := dist.TotalCount; tc != nil && *tc > n {
			n = *tc
		}
	}
	ins, outs := d.InputDistribution.generate(n, rng), d.OutputDistribution.generate(n, rng)
	out := make([]workload.Sample, n)
	for i := range out {
		text, ids, err := corpusSlice(ctx, it, tokens, max(ins[i]-it.SpecialTokens(), 1), rng)
		if err != nil {
			return nil, err
		}
		out[i] = workload.Sample{Prompt: text, PromptIDs: ids, PromptLen: len(ids) + it.SpecialTokens(), OutputLen: maxTokens(outs[i])}
	}
	return out, nil
}

// corpusSlice is inference-perf's synthetic _generate_exact_length_text: a
// slice of target tokens from a random start, decoded, counted, and the
// slice grown or shrunk by the difference, up to 20 times (then the last
// is kept: inference-perf would stop the run).
func corpusSlice(ctx context.Context, it workload.IDTokenizer, tokens []int, target int, rng *rand.Rand) (string, []int, error) {
	start := 0
	if ms := len(tokens) - target; ms > 0 {
		start = rng.IntN(ms)
	}
	sliceLen := target
	var text string
	var ids []int
	for range 20 {
		l := min(sliceLen, len(tokens))
		s := start
		if s+l > len(tokens) {
			s = max(0, len(tokens)-l)
		}
		var err error
		if text, err = it.Decode(ctx, tokens[s:s+l]); err != nil {
			return "", nil, err
		}
		if ids, err = it.Encode(ctx, text); err != nil {
			return "", nil, err
		}
		if len(ids) == target || (len(ids) < target && l == len(tokens)) {
			break
		}
		sliceLen = max(sliceLen+target-len(ids), 1)
	}
	return text, ids, nil
}

// defaultCorpus is glassbox's stand-in for inference-perf's corpus: lines
// of common words, the same every run.
func defaultCorpus() string {
	rng := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	for range 2500 {
		for k := range 8 {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(workload.RandomWord(rng))
		}
		b.WriteString(",\n")
	}
	return b.String()
}

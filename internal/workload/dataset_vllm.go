package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// SonnetBase is the line vLLM's sonnet dataset puts before its poem lines
// (inference-perf's synthetic data, before its corpus, too).
const SonnetBase = "Pick as many lines as you can from these poem lines:\n"

// ChatFormatter renders one user message as the served model's chat
// template writes it, ready for the assistant (vLLM's apply_chat_template
// with add_generation_prompt): for the datasets vLLM templates on the
// client. A Tokenizer without it leaves the prompt as it is.
type ChatFormatter interface {
	FormatChat(ctx context.Context, user string) (string, error)
}

// formatChat is f's rendering of user, or user.
func formatChat(ctx context.Context, tk Tokenizer, user string) (string, error) {
	if f, ok := tk.(ChatFormatter); ok {
		return f.FormatChat(ctx, user)
	}
	return user, nil
}

// sonnetSamples is vLLM's sonnet dataset: the file's lines (Shakespeare's
// sonnets in vLLM's benchmarks/sonnet.txt), a base line asking to pick
// lines, the first lines as a shared prefix of about SonnetPrefixLen
// tokens, then random lines up to about SonnetInputLen tokens counted with
// the chat template; prompts longer than that are drawn again.
func sonnetSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	raw, err := os.ReadFile(d.Path)
	if err != nil {
		return nil, fmt.Errorf("read sonnet dataset: %w", err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, errors.New("read sonnet dataset: the file is empty")
	}
	specials := 0
	if it, ok := tc.(IDTokenizer); ok {
		specials = it.SpecialTokens()
	}
	total := 0
	for _, l := range lines {
		c, err := tc.Count(ctx, l)
		if err != nil {
			return nil, err
		}
		total += c + specials // vLLM counts each line as a whole prompt
	}
	avg := float64(total) / float64(len(lines))
	count := func(prompt string) (int, error) {
		f, err := formatChat(ctx, tc, prompt)
		if err != nil {
			return 0, err
		}
		c, err := tc.Count(ctx, f)
		return c + specials, err
	}
	base, err := count(SonnetBase)
	if err != nil {
		return nil, err
	}
	if d.SonnetInputLen <= base {
		return nil, fmt.Errorf("sonnet dataset: --sonnet-input-len %d must be higher than the base prompt's %d tokens", d.SonnetInputLen, base)
	}
	numInput := int(math.RoundToEven(float64(d.SonnetInputLen-base) / avg))
	numPrefix := max(int(math.RoundToEven(float64(d.SonnetPrefixLen-base)/avg)), 0)
	prefix := strings.Join(lines[:min(numPrefix, len(lines))], "")
	var out []Sample
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("sonnet dataset: no prompt of at most --sonnet-input-len %d tokens after %d draws", d.SonnetInputLen, tries)
		}
		var b strings.Builder
		b.WriteString(SonnetBase)
		b.WriteString(prefix)
		for range max(numInput-numPrefix, 0) {
			b.WriteString(lines[rng.IntN(len(lines))])
		}
		p := b.String()
		pl, err := count(p)
		if err != nil {
			return nil, err
		}
		if pl <= d.SonnetInputLen {
			out = append(out, Sample{Prompt: p, PromptLen: pl, OutputLen: d.SonnetOutputLen})
		}
	}
	return out, nil
}

// burstGPTSamples is vLLM's burstgpt dataset: BurstGPT's GPT-4 rows that
// answered (Response tokens > 0), n of them drawn at random (with
// replacement only when the file has fewer), each a prompt of its Request
// tokens as consecutive token ids (i+j, modulo the vocabulary, as vLLM
// builds them) and its Response tokens as the output length. It replays
// the lengths, not the times: --request-rate sets those (trace replays
// them).
func burstGPTSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	all, err := ReadTrace(d.Path, TraceBurstGPT)
	if err != nil {
		return nil, err
	}
	var rows []TraceEntry
	for _, e := range all {
		if e.Model == "GPT-4" {
			rows = append(rows, e)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("burstgpt dataset %s: no GPT-4 rows with a response", d.Path)
	}
	picked := make([]TraceEntry, n)
	if n <= len(rows) {
		for i, j := range rng.Perm(len(rows))[:n] {
			picked[i] = rows[j]
		}
	} else {
		for i := range picked {
			picked[i] = rows[rng.IntN(len(rows))]
		}
	}
	it, exact := tc.(IDTokenizer)
	out := make([]Sample, n)
	for i, e := range picked {
		out[i].OutputLen = max(e.Output, 1)
		if !exact {
			text, got, err := fitText(ctx, tc, "", max(e.Input, 1), rng)
			if err != nil {
				return nil, err
			}
			out[i].Prompt, out[i].PromptLen = text, got
			continue
		}
		v := it.VocabSize()
		lo := FirstWordID(v)
		ids := make([]int, max(e.Input, 1))
		for j := range ids {
			ids[j] = lo + (i+j)%(v-lo)
		}
		text, err := it.Decode(ctx, ids)
		if err != nil {
			return nil, err
		}
		out[i].Prompt, out[i].PromptIDs, out[i].PromptLen = text, ids, e.Input
	}
	return out, nil
}

package inferenceperf

import (
	"context"
	"fmt"
	"os"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// shareGPTPrompts is inference-perf's shareGPT data: the conversations in
// the file's order, cycled, the first one skipped the first time round (its
// generator consumes one on start). For completions the first turn is the
// prompt and the second's token count its max_tokens, both counted with
// special tokens and kept only within the distributions' bounds when they
// are given; for chat every turn goes as a message (human→user,
// gpt→assistant, else user) and max_tokens is its client's default of 30.
// It takes the first n.
func shareGPTPrompts(ctx context.Context, d *Data, n int, chat bool, tk workload.Tokenizer, o PlanOptions) ([]workload.Sample, error) {
	path := d.Path
	if path == "" {
		if o.Fetch == nil {
			return nil, fmt.Errorf("data.type shareGPT without data.path reads %s from the hub, which this run cannot download: give data.path (a local copy of that file)", ShareGPTHub)
		}
		var err error
		if path, err = o.Fetch(ctx, ShareGPTHub); err != nil {
			return nil, fmt.Errorf("data.type shareGPT: %w\n(inference-perf reads it from the hub when data.path is not set; set data.path to a local copy to run offline)", err)
		}
	}
	specials := 0
	if it, ok := tk.(workload.IDTokenizer); ok {
		specials = it.SpecialTokens()
	}
	var first *workload.Sample // conversation 0, which comes round only on the second pass
	var out []workload.Sample
	var ferr error
	take := func(i int, rec *workload.ShareGPTRecord) bool {
		s, ok, err := shareGPTSample(ctx, rec, d, chat, tk, specials)
		switch {
		case err != nil:
			ferr = err
			return false
		case !ok:
		case i == 0:
			first = &s
		default:
			out = append(out, s)
		}
		return len(out) < n
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data.path: %w", err)
	}
	defer f.Close()
	if err := workload.EachShareGPT(f, take); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ferr != nil {
		return nil, ferr
	}
	pass := append([]workload.Sample(nil), out...)
	if first != nil {
		pass = append([]workload.Sample{*first}, pass...)
	}
	if len(pass) == 0 {
		return nil, fmt.Errorf("%s: no conversation of two turns or more (within the length distributions)", path)
	}
	for len(out) < n {
		out = append(out, pass[:min(len(pass), n-len(out))]...)
	}
	return out, nil
}

// shareGPTSample makes one record a sample; ok is false when inference-perf
// would skip it.
func shareGPTSample(ctx context.Context, rec *workload.ShareGPTRecord, d *Data, chat bool, tk workload.Tokenizer, specials int) (workload.Sample, bool, error) {
	conv := rec.Conversations
	if len(conv) < 2 {
		return workload.Sample{}, false, nil
	}
	if chat {
		s := workload.Sample{OutputLen: defaultMockOutputLen}
		for i, t := range conv {
			role := "user"
			switch t.From {
			case "gpt":
				role = "assistant"
			case "human":
			}
			s.Messages = append(s.Messages, workload.Message{Role: role, Content: t.Value})
			if i > 0 {
				s.Prompt += "\n"
			}
			s.Prompt += t.Value
		}
		n, err := tk.Count(ctx, s.Prompt)
		s.PromptLen = n
		return s, true, err
	}
	prompt, completion := conv[0].Value, conv[1].Value
	if prompt == "" {
		return workload.Sample{}, false, nil
	}
	in, err := tk.Count(ctx, prompt)
	if err != nil {
		return workload.Sample{}, false, err
	}
	outLen := 0
	if completion != "" {
		if outLen, err = tk.Count(ctx, completion); err != nil {
			return workload.Sample{}, false, err
		}
		outLen += specials
	}
	in += specials
	if !d.InputDistribution.admits(in) || !d.OutputDistribution.admits(outLen) {
		return workload.Sample{}, false, nil
	}
	return workload.Sample{Prompt: prompt, PromptLen: in, OutputLen: maxTokens(outLen)}, true, nil
}

package inferenceperf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// ShareGPTHub is the file inference-perf's shareGPT data reads from the hub
// when data.path is not given.
const ShareGPTHub = "hf://datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/ShareGPT_V3_unfiltered_cleaned_split.json"

// prompts builds the configuration's data: most is the most requests one
// stage sends (the prompts start over each stage, as inference-perf's
// generators do), except for ShareGPT, whose one iterator runs on.
func prompts(ctx context.Context, c *Config, p *workload.Plan, most int, dataTrace []workload.TraceEntry, tk workload.Tokenizer, o PlanOptions, rng *rand.Rand) ([]workload.Sample, error) {
	d := &c.Data
	switch d.Type {
	case "shared_prefix":
		if s := d.SharedPrefix.Seed; s != nil {
			// data.shared_prefix.seed fixes the prompts whatever the
			// run's seed, as inference-perf's generator seeds its own.
			rng = rand.New(rand.NewPCG(uint64(*s), 0x5ba4edf))
		}
		out, orig, err := sharedPrefixPrompts(ctx, d.SharedPrefix, tk, o, rng)
		p.Sessions = o.Compat == Current && d.SharedPrefix.EnableMultiTurnChat
		if err == nil && p.Sessions {
			if it, ok := tk.(workload.IDTokenizer); ok {
				p.Separator, err = it.Encode(ctx, " ")
			}
			// inference-perf names a prompt's session by its place before
			// the shuffle: group × num_prompts_per_group + prompt.
			p.SessionName = func(user, _ int) string { return fmt.Sprintf("user_session_%d", orig[user]) }
		}
		return out, err
	case "conversation_replay":
		return conversationReplayPlan(ctx, d.ConversationReplay, p, tk, rng)
	case "otel_trace_replay":
		return otelReplayPlan(ctx, c, p, tk, rng)
	case "random":
		return randomPrompts(ctx, d, most+1, dataTrace, tk, o, rng)
	case "synthetic":
		return syntheticPrompts(ctx, d, most+1, tk, rng)
	case "shareGPT":
		n := most
		if p.Sweep == nil {
			n = p.NumRequests()
		}
		return shareGPTPrompts(ctx, d, max(n, 1), p.Chat, tk, o)
	}
	// mock: inference-perf's mock data, with its client's default max_tokens.
	out := make([]workload.Sample, max(most, 1))
	for i := range out {
		out[i] = workload.Sample{Prompt: fmt.Sprintf("1 2 3 %d", i+1), OutputLen: defaultMockOutputLen}
		if p.Chat {
			out[i].Prompt = fmt.Sprintf("mock prompt %d", i+1)
		}
	}
	return out, countPrompts(ctx, out, tk)
}

// sharedPrefixPrompts builds num_groups system prompts and, for each,
// num_prompts_per_group questions, then shuffles them: every request of a
// group shares its system prompt as a prefix. Lengths given as
// distributions are drawn as inference-perf draws them: every group's
// system prompt length, then per group its questions' and outputs'. orig
// is each prompt's place before the shuffle.
func sharedPrefixPrompts(ctx context.Context, s *SharedPrefix, tk workload.Tokenizer, o PlanOptions, rng *rand.Rand) (out []workload.Sample, orig []int, err error) {
	groups, per := *s.NumGroups, *s.NumPromptsPerGroup
	if o.Compat == Legacy {
		// e8e0aa99 knew neither the long aliases nor sessions: a value
		// given only under an alias fell back to the default.
		groups, per = 10, 10
		if s.legacyGroups != nil {
			groups = *s.legacyGroups
		}
		if s.legacyPerGroup != nil {
			per = *s.legacyPerGroup
		}
		for _, l := range []*Length{s.SystemPromptLen, s.QuestionLen, s.OutputLen} {
			if _, ok := l.Fixed(); !ok || s.QuestionDistribution != nil || s.OutputDistribution != nil {
				return nil, nil, errors.New("shared_prefix: e8e0aa99 read the lengths as numbers, not distributions")
			}
		}
	}
	it, exact := tk.(workload.IDTokenizer)
	if !exact {
		return nil, nil, fmt.Errorf("shared_prefix needs a tokenizer that converts ids (the server's /tokenize and /detokenize)")
	}
	v := it.VocabSize()
	lo := workload.FirstWordID(v)
	randomIDs := func(n int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = lo + rng.IntN(v-lo)
		}
		return ids
	}
	var sep []int
	if o.Compat == Legacy {
		var err error
		if sep, err = it.Encode(ctx, " "); err != nil {
			return nil, nil, err
		}
	}
	sysLens := s.SystemPromptLen.lengths(groups, nil, rng)
	qLens, outLens := make([][]int, groups), make([][]int, groups)
	for g := range groups {
		qLens[g] = s.QuestionLen.lengths(per, s.QuestionDistribution, rng)
		outLens[g] = s.OutputLen.lengths(per, s.OutputDistribution, rng)
	}
	for g := range groups {
		sysText, sysIDs, err := promptText(ctx, it, randomIDs(sysLens[g]), o.Compat == Current, rng)
		if err != nil {
			return nil, nil, err
		}
		for k := range per {
			q := qLens[g][k]
			if o.Compat == Legacy && o.Drift[1] > 0 {
				q += o.Drift[0] + rng.IntN(o.Drift[1]-o.Drift[0]+1)
			}
			qText, qIDs, err := promptText(ctx, it, randomIDs(max(q, 1)), o.Compat == Current, rng)
			if err != nil {
				return nil, nil, err
			}
			sm := workload.Sample{OutputLen: max(outLens[g][k], 1)}
			if o.Compat == Legacy {
				// sys_text + " " + q_text, as e8e0aa99 joined them.
				sm.Prompt = sysText + " " + qText
				sm.PromptIDs = append(append(append([]int(nil), sysIDs...), sep...), qIDs...)
			} else {
				sm.Prompt = sysText + qText
				sm.PromptIDs = append(append([]int(nil), sysIDs...), qIDs...)
			}
			sm.PromptLen = len(sm.PromptIDs) + it.SpecialTokens()
			out = append(out, sm)
		}
	}
	orig = make([]int, len(out))
	for i := range orig {
		orig[i] = i
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j], orig[i], orig[j] = out[j], out[i], orig[j], orig[i] })
	return out, orig, nil
}

// promptText is the text of random ids: in Current mode re-tokenised to
// exactly their number (ExactPrompt, which decodes them first), else
// decoded as they are, as e8e0aa99 did.
func promptText(ctx context.Context, it workload.IDTokenizer, ids []int, exact bool, rng *rand.Rand) (string, []int, error) {
	if exact && len(ids) > 0 {
		return workload.ExactPrompt(ctx, it, ids, len(ids), rng)
	}
	text, err := it.Decode(ctx, ids)
	return text, ids, err
}

// maxTokens is what inference-perf's client sends for a request whose data
// asks for 0 output tokens: its default of 30.
func maxTokens(n int) int {
	if n <= 0 {
		return defaultMockOutputLen
	}
	return n
}

// randomPrompts is inference-perf's random data: lengths drawn from the
// distributions (at least n of them: total_count or one more than the
// largest stage), or taken from data.trace, and prompts of random ids whose
// text the server counts as that many tokens, its special tokens included
// (in Legacy mode: the ids decoded as they are, specials on top).
func randomPrompts(ctx context.Context, d *Data, n int, trace []workload.TraceEntry, tk workload.Tokenizer, o PlanOptions, rng *rand.Rand) ([]workload.Sample, error) {
	it, ok := tk.(workload.IDTokenizer)
	if !ok {
		return nil, fmt.Errorf("random data needs a tokenizer that converts ids (the server's /tokenize and /detokenize)")
	}
	var ins, outs []int
	if trace != nil {
		for _, e := range trace {
			ins, outs = append(ins, e.Input), append(outs, e.Output)
		}
	} else {
		if tc := d.InputDistribution.TotalCount; tc != nil && *tc > n {
			n = *tc
		}
		nOut := n
		if tc := d.OutputDistribution.TotalCount; tc != nil && *tc > nOut {
			nOut = *tc
		}
		ins, outs = d.InputDistribution.generate(n, rng), d.OutputDistribution.generate(nOut, rng)
	}
	v := it.VocabSize()
	lo := workload.FirstWordID(v)
	out := make([]workload.Sample, min(len(ins), len(outs)))
	for i := range out {
		in := ins[i]
		if o.Compat == Current {
			in -= it.SpecialTokens()
		}
		ids := make([]int, max(in, 1))
		for k := range ids {
			ids[k] = lo + rng.IntN(v-lo)
		}
		text, ids, err := promptText(ctx, it, ids, o.Compat == Current, rng)
		if err != nil {
			return nil, err
		}
		out[i] = workload.Sample{Prompt: text, PromptIDs: ids, PromptLen: len(ids) + it.SpecialTokens(), OutputLen: maxTokens(outs[i])}
	}
	return out, nil
}

func (d *Distribution) admits(n int) bool { return d == nil || (n >= *d.Min && n <= *d.Max) }

func countPrompts(ctx context.Context, s []workload.Sample, tk workload.Tokenizer) error {
	for i := range s {
		n, err := tk.Count(ctx, s[i].Prompt)
		if err != nil {
			return err
		}
		s[i].PromptLen = n
	}
	return nil
}

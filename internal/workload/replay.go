package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"
)

// detailedResult is the part of a `glassbox bench --save-detailed` (or
// `vllm bench serve --save-detailed`) result a replay reads.
type detailedResult struct {
	InputLens  []int     `json:"input_lens"`
	OutputLens []int     `json:"output_lens"`
	StartTimes []float64 `json:"start_times"` // glassbox's: seconds from the pass's start
	Errors     []string  `json:"errors"`
}

// ReplayPlan rebuilds a bench run's requests from its detailed result:
// each successful request again at its send offset, with a random prompt
// of its prompt length and its output length as max_tokens (ignore_eos), so
// that the token counts and the timing repeat. The result keeps no prompt
// text, so prefix sharing between the original prompts does not repeat.
func ReplayPlan(ctx context.Context, r io.Reader, tk IDTokenizer, seed int64) (*Plan, error) {
	var d detailedResult
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	n := len(d.InputLens)
	if n == 0 {
		return nil, errors.New("read trace: no input_lens: save the bench result with --save-detailed")
	}
	if len(d.OutputLens) != n || len(d.StartTimes) != n {
		return nil, fmt.Errorf("read trace: %d input_lens, %d output_lens and %d start_times: want one each per request (glassbox bench --save-detailed)",
			n, len(d.OutputLens), len(d.StartTimes))
	}
	order := make([]int, 0, n)
	for i := range n {
		if (i < len(d.Errors) && d.Errors[i] != "") || d.OutputLens[i] < 1 || d.InputLens[i] < 1 || d.StartTimes[i] < 0 {
			continue
		}
		order = append(order, i)
	}
	if len(order) == 0 {
		return nil, errors.New("read trace: no successful request to replay")
	}
	sort.SliceStable(order, func(a, b int) bool { return d.StartTimes[order[a]] < d.StartTimes[order[b]] })
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7e91a))
	v, lo := tk.VocabSize(), firstWordID(tk.VocabSize())
	p := &Plan{IgnoreEOS: true, Stages: []Stage{{}}}
	st := &p.Stages[0]
	for _, i := range order {
		ids := make([]int, max(d.InputLens[i]-tk.SpecialTokens(), 1))
		for k := range ids {
			ids[k] = lo + rng.IntN(v-lo)
		}
		text, err := tk.Decode(ctx, ids)
		if err != nil {
			return nil, err
		}
		if text, ids, err = ExactPrompt(ctx, tk, ids, len(ids), rng); err != nil {
			return nil, err
		}
		p.Prompts = append(p.Prompts, Sample{Prompt: text, PromptIDs: ids, PromptLen: len(ids) + tk.SpecialTokens(), OutputLen: d.OutputLens[i]})
		st.Offsets = append(st.Offsets, seconds(d.StartTimes[i]))
	}
	st.Duration = st.Offsets[len(st.Offsets)-1]
	st.Rate = float64(len(st.Offsets)) / max(st.Duration.Seconds(), 1e-9)
	return p, nil
}

// Span is how long the plan's arrivals take if every stage drained at
// once: a lower bound on its run time.
func (p *Plan) Span() time.Duration {
	var d time.Duration
	for i, s := range p.Stages {
		if i > 0 {
			d += p.Interval
		}
		d += s.Duration
	}
	return d
}

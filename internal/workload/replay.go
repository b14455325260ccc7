package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
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
	v, lo := tk.VocabSize(), FirstWordID(tk.VocabSize())
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
		st.Offsets = append(st.Offsets, Seconds(d.StartTimes[i]))
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

// TraceFormatOf tells a request trace's format from its first line: ok is
// false for anything but a CSV trace (a bench result is JSON).
func TraceFormatOf(path string) (format string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "{"), strings.HasPrefix(line, "["), line == "":
		return "", false
	case strings.Contains(line, "Request tokens"):
		return TraceBurstGPT, true
	}
	return TraceAzure, true
}

// TracePlan replays a request trace: each request at its time from the
// trace's first (at rate, when finite, the times scaled so that they
// average rate requests per second), with a random prompt the server
// counts as its input tokens (special tokens included) and its output
// tokens as max_tokens (ignore_eos). n, when positive, keeps the first n
// requests.
func TracePlan(ctx context.Context, trace []TraceEntry, tc Tokenizer, n int, rate float64, seed int64) (*Plan, error) {
	if n > 0 && n < len(trace) {
		trace = trace[:n]
	}
	if len(trace) == 0 {
		return nil, errors.New("replay trace: no requests")
	}
	scale := 1.0
	if span := (trace[len(trace)-1].At - trace[0].At).Seconds(); rate > 0 && !math.IsInf(rate, 1) && span > 0 {
		scale = float64(len(trace)) / span / rate
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7ace))
	p := &Plan{IgnoreEOS: true, Stages: []Stage{{}}}
	st := &p.Stages[0]
	for _, e := range trace {
		var s Sample
		if tk, ok := tc.(IDTokenizer); ok {
			v, lo := tk.VocabSize(), FirstWordID(tk.VocabSize())
			ids := make([]int, max(e.Input-tk.SpecialTokens(), 1))
			for k := range ids {
				ids[k] = lo + rng.IntN(v-lo)
			}
			text, ids, err := ExactPrompt(ctx, tk, ids, len(ids), rng)
			if err != nil {
				return nil, err
			}
			s = Sample{Prompt: text, PromptIDs: ids, PromptLen: len(ids) + tk.SpecialTokens()}
		} else {
			text, got, err := fitText(ctx, tc, "", max(e.Input, 1), rng)
			if err != nil {
				return nil, err
			}
			s = Sample{Prompt: text, PromptLen: got}
		}
		s.OutputLen = max(e.Output, 1)
		p.Prompts = append(p.Prompts, s)
		st.Offsets = append(st.Offsets, max(time.Duration(float64(e.At-trace[0].At)*scale), 0))
	}
	st.Duration = st.Offsets[len(st.Offsets)-1]
	st.Rate = float64(len(st.Offsets)) / max(st.Duration.Seconds(), 1e-9)
	return p, nil
}

// Rescaled is a one-stage plan's arrivals scaled in time so that they
// average rate requests per second, sending those due within d (at least
// one): a trace's shape at the rate a planner tries.
func (p *Plan) Rescaled(rate float64, d time.Duration) *Plan {
	q := *p
	if len(p.Stages) == 0 || len(p.Stages[0].Offsets) == 0 || !(rate > 0) {
		return &q
	}
	offs := p.Stages[0].Offsets
	span := offs[len(offs)-1] - offs[0]
	scale := 1.0
	if span > 0 {
		scale = float64(len(offs)) / span.Seconds() / rate
	}
	st := Stage{Rate: rate, Duration: d}
	for _, o := range offs {
		at := time.Duration(float64(o-offs[0]) * scale)
		if at > d && len(st.Offsets) > 0 {
			break
		}
		st.Offsets = append(st.Offsets, at)
	}
	q.Stages = []Stage{st}
	return &q
}

package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"
)

// Compat chooses which inference-perf's semantics a configuration gets.
type Compat string

const (
	// Current is inference-perf as it is now: shared_prefix prompts of
	// exact lengths, the short aliases honoured, multi-turn sessions.
	Current Compat = "current"
	// Legacy is inference-perf at e8e0aa99 (October 2025), which the
	// published vLLM 0.15.1 runs used: shared_prefix knows only
	// num_groups, num_prompts_per_group and the three lengths, and
	// silently ignores the rest (the long aliases and
	// enable_multi_turn_chat), and prompt lengths are not corrected.
	Legacy Compat = "e8e0aa99"
)

// PlanOptions are the choices a configuration leaves open.
type PlanOptions struct {
	Compat Compat // default Current
	Seed   int64
	// Drift adds, in Legacy mode, a uniform [Drift[0], Drift[1]] tokens to
	// every shared_prefix question: what re-tokenising random ids decoded
	// to text added on the published runs' Llama tokenizers (+26…+48),
	// which a vocabulary that re-encodes its own text exactly does not.
	Drift [2]int
}

// Plan is a workload ready to run: its prompts and its stages.
type Plan struct {
	Prompts  []Sample
	Stages   []Stage
	Interval time.Duration // between a stage's last completion and the next stage's start, lead included
	// Sessions makes every request a round of its user's conversation
	// (inference-perf's enable_multi_turn_chat): user i%len(Prompts), at
	// most one request in flight each, each prompt carrying the last one
	// and its answer.
	Sessions  bool
	Chat      bool // api.type chat
	IgnoreEOS bool
	// MaxConcurrency caps the requests in flight (vLLM's --max-concurrency;
	// 0: none); Until, when positive, stops sending at that offset (--duration).
	MaxConcurrency int
	Until          time.Duration
	separator      []int // the tokens of " ", for composing session prompts from ids
}

// Stage is one stage's request offsets from its start.
type Stage struct {
	Rate     float64
	Duration time.Duration
	Offsets  []time.Duration
}

// Rate is the plan's offered request rate over its stages' durations.
func (p *Plan) Rate() float64 {
	var d time.Duration
	for _, s := range p.Stages {
		d += s.Duration
	}
	if d <= 0 {
		return 0
	}
	return float64(p.NumRequests()) / d.Seconds()
}

// NumRequests is how many requests the plan sends.
func (p *Plan) NumRequests() int {
	n := 0
	for _, s := range p.Stages {
		n += len(s.Offsets)
	}
	return n
}

// NewPlan builds the prompts and arrival schedules of an inference-perf
// configuration with tk (an IDTokenizer makes prompts of exact lengths).
func NewPlan(ctx context.Context, c *InferencePerf, tk Tokenizer, o PlanOptions) (*Plan, error) {
	if o.Compat == "" {
		o.Compat = Current
	}
	if o.Compat != Current && o.Compat != Legacy {
		return nil, fmt.Errorf("plan workload: compatibility %q: want %s or %s", o.Compat, Current, Legacy)
	}
	if d := o.Drift; d != [2]int{} && (d[0] < 0 || d[1] < d[0]) {
		return nil, fmt.Errorf("plan workload: drift %v: want [min, max] with 0 <= min <= max", d)
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x1f5ef5e))
	p := &Plan{Interval: 2 * time.Second, Chat: c.API.Type == "chat", IgnoreEOS: c.Server.IgnoreEOS == nil || *c.Server.IgnoreEOS}
	if c.Load.Interval != nil {
		p.Interval = seconds(*c.Load.Interval) + time.Second // inference-perf sleeps the interval, then leads by 1 s
	}
	most := 0
	for _, s := range c.Load.Stages {
		st := Stage{Rate: s.Rate, Duration: seconds(s.Duration)}
		if c.Load.Type == "poisson" {
			st.Offsets = poissonOffsets(s.Rate, s.Duration, rng)
		} else {
			st.Offsets = constantOffsets(int(s.Rate*s.Duration), s.Duration, rng)
		}
		most = max(most, len(st.Offsets))
		p.Stages = append(p.Stages, st)
	}
	var err error
	d := &c.Data
	switch d.Type {
	case "shared_prefix":
		p.Prompts, err = sharedPrefixPrompts(ctx, d.SharedPrefix, tk, o, rng)
		p.Sessions = o.Compat == Current && d.SharedPrefix.EnableMultiTurnChat
		if p.Sessions {
			it, ok := tk.(IDTokenizer)
			if ok {
				if p.separator, err = it.Encode(ctx, " "); err != nil {
					return nil, err
				}
			}
		}
	case "random":
		p.Prompts, err = randomPrompts(ctx, d, most+1, tk, o, rng)
	case "shareGPT":
		p.Prompts, err = shareGPTPrompts(ctx, d, tk)
	case "mock":
		for i := range max(most, 1) {
			p.Prompts = append(p.Prompts, Sample{Prompt: fmt.Sprintf("text%d", i+1), OutputLen: 30})
		}
		if err = countPrompts(ctx, p.Prompts, tk); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("plan workload: %w", err)
	}
	if len(p.Prompts) == 0 {
		return nil, fmt.Errorf("plan workload: data.type %s gave no prompts", d.Type)
	}
	return p, nil
}

// constantOffsets is inference-perf's ConstantLoadTimer: n exponential
// gaps rescaled to sum to the duration, so the last request goes at its
// end (a Poisson process holding exactly n arrivals, not a fixed interval).
func constantOffsets(n int, duration float64, rng *rand.Rand) []time.Duration {
	if n <= 0 {
		return nil
	}
	gaps := make([]float64, n)
	sum := 0.0
	for i := range gaps {
		gaps[i] = rng.ExpFloat64()
		sum += gaps[i]
	}
	out := make([]time.Duration, n)
	t := 0.0
	for i, g := range gaps {
		t += g * duration / sum
		out[i] = seconds(t)
	}
	return out
}

// poissonOffsets is inference-perf's PoissonLoadTimer: one-second windows,
// each with a Poisson number of arrivals placed as a constant stage of one
// second, until the stage's int(rate·duration) requests are placed.
func poissonOffsets(rate, duration float64, rng *rand.Rand) []time.Duration {
	n := int(rate * duration)
	var out []time.Duration
	for w := 0; len(out) < n; w++ {
		k := poisson(rate, rng)
		for _, off := range constantOffsets(k, 1, rng) {
			if len(out) < n {
				out = append(out, time.Duration(w)*time.Second+off)
			}
		}
	}
	return out
}

// poisson draws from Poisson(mean): Knuth's product method for small
// means, a rounded normal approximation for large ones.
func poisson(mean float64, rng *rand.Rand) int {
	if mean > 60 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// sharedPrefixPrompts builds num_groups system prompts and, for each,
// num_prompts_per_group questions, then shuffles them: every request of a
// group shares its system prompt as a prefix.
func sharedPrefixPrompts(ctx context.Context, s *IPSharedPrefix, tk Tokenizer, o PlanOptions, rng *rand.Rand) ([]Sample, error) {
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
	}
	it, exact := tk.(IDTokenizer)
	if !exact {
		return nil, fmt.Errorf("shared_prefix needs a tokenizer that converts ids (the server's /tokenize and /detokenize)")
	}
	v := it.VocabSize()
	lo := firstWordID(v)
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
			return nil, err
		}
	}
	var out []Sample
	for range groups {
		sysText, sysIDs, err := promptText(ctx, it, randomIDs(*s.SystemPromptLen), o.Compat == Current, rng)
		if err != nil {
			return nil, err
		}
		for range per {
			q := *s.QuestionLen
			if o.Compat == Legacy && o.Drift[1] > 0 {
				q += o.Drift[0] + rng.IntN(o.Drift[1]-o.Drift[0]+1)
			}
			qText, qIDs, err := promptText(ctx, it, randomIDs(q), o.Compat == Current, rng)
			if err != nil {
				return nil, err
			}
			sm := Sample{OutputLen: *s.OutputLen}
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
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// promptText is the text of random ids: in Current mode re-tokenised to
// exactly their number (ExactPrompt, which decodes them first), else
// decoded as they are, as e8e0aa99 did.
func promptText(ctx context.Context, it IDTokenizer, ids []int, exact bool, rng *rand.Rand) (string, []int, error) {
	if exact && len(ids) > 0 {
		return ExactPrompt(ctx, it, ids, len(ids), rng)
	}
	text, err := it.Decode(ctx, ids)
	return text, ids, err
}

// randomPrompts is inference-perf's random data: lengths from the
// distributions, prompts of random ids (of exact length in Current mode).
func randomPrompts(ctx context.Context, d *IPData, n int, tk Tokenizer, o PlanOptions, rng *rand.Rand) ([]Sample, error) {
	if d.InputDistribution.TotalCount != nil {
		n = *d.InputDistribution.TotalCount
	}
	it, ok := tk.(IDTokenizer)
	if !ok {
		return nil, fmt.Errorf("random data needs a tokenizer that converts ids (the server's /tokenize and /detokenize)")
	}
	v := it.VocabSize()
	lo := firstWordID(v)
	out := make([]Sample, n)
	for i := range out {
		in, outLen := d.InputDistribution.draw(rng), d.OutputDistribution.draw(rng)
		ids := make([]int, max(in, 1))
		for k := range ids {
			ids[k] = lo + rng.IntN(v-lo)
		}
		text, ids, err := promptText(ctx, it, ids, o.Compat == Current, rng)
		if err != nil {
			return nil, err
		}
		out[i] = Sample{Prompt: text, PromptIDs: ids, PromptLen: len(ids) + it.SpecialTokens(), OutputLen: max(outLen, 1)}
	}
	return out, nil
}

// draw is one length: normal(mean, std) clipped to [min, max] and rounded,
// or uniform over [min, max], or the mean.
func (d *IPDistribution) draw(rng *rand.Rand) int {
	var v float64
	switch d.Type {
	case "uniform":
		v = float64(*d.Min) + rng.Float64()*float64(*d.Max-*d.Min)
	case "fixed":
		v = *d.Mean
	default:
		v = *d.Mean + *d.StdDev*rng.NormFloat64()
	}
	return min(max(int(math.Round(v)), *d.Min), *d.Max)
}

// shareGPTPrompts reads the conversations of a local ShareGPT file: the
// first turn is the prompt, the second's length max_tokens, filtered by the
// distributions' bounds as inference-perf does.
func shareGPTPrompts(ctx context.Context, d *IPData, tk Tokenizer) ([]Sample, error) {
	raw, err := os.ReadFile(d.Path)
	if err != nil {
		return nil, err
	}
	pairs, err := parseShareGPT(raw)
	if err != nil {
		return nil, err
	}
	var out []Sample
	for _, pr := range pairs {
		in, err := tk.Count(ctx, pr.Prompt)
		if err != nil {
			return nil, err
		}
		outLen, err := tk.Count(ctx, pr.Completion)
		if err != nil {
			return nil, err
		}
		if !d.InputDistribution.admits(in) || !d.OutputDistribution.admits(outLen) || outLen < 1 {
			continue
		}
		out = append(out, Sample{Prompt: pr.Prompt, PromptLen: in, OutputLen: outLen})
	}
	return out, nil
}

func (d *IPDistribution) admits(n int) bool { return d == nil || (n >= *d.Min && n <= *d.Max) }

func countPrompts(ctx context.Context, s []Sample, tk Tokenizer) error {
	for i := range s {
		n, err := tk.Count(ctx, s[i].Prompt)
		if err != nil {
			return err
		}
		s[i].PromptLen = n
	}
	return nil
}

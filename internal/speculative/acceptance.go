package speculative

import (
	"errors"
	"fmt"
	"slices"
)

// Counters are a run's spec-decode counters: vLLM's four families.
type Counters struct {
	Drafts, DraftTokens, Accepted float64
	PerPos                        []float64 // accepted tokens at draft position 0, 1, …
}

// Since is what the counters counted after before (an earlier reading of
// the same server's): their differences. A counter that went down means
// the server restarted between the readings.
func (c *Counters) Since(before *Counters) (Counters, error) {
	d := Counters{Drafts: c.Drafts - before.Drafts, DraftTokens: c.DraftTokens - before.DraftTokens, Accepted: c.Accepted - before.Accepted}
	for i, n := range c.PerPos {
		if i < len(before.PerPos) {
			n -= before.PerPos[i]
		}
		if n < 0 {
			return Counters{}, fmt.Errorf("counters since: accepted tokens at position %d went down: the server restarted between the readings", i)
		}
		d.PerPos = append(d.PerPos, n)
	}
	if d.Drafts < 0 || d.DraftTokens < 0 || d.Accepted < 0 || len(before.PerPos) > len(c.PerPos) {
		return Counters{}, errors.New("counters since: the counters went down: the server restarted between the readings")
	}
	return d, nil
}

// Fitted makes the configuration's acceptance synthetic at rates fitted
// from a run's counters (Counters.Rates; --spec-acceptance-from): the
// first num_speculative_tokens of them. It refuses a configuration that
// sets its own synthetic acceptance, and rates for fewer positions than
// it drafts.
func (c *Config) Fitted(rates []float64) error {
	switch k := c.NumSpeculativeTokens; {
	case !c.Enabled():
		return errors.New("fitted acceptance: no speculative decoding configured")
	case c.RejectionSampleMethod == RejectSynthetic:
		return errorf("rejection_sample_method", "sets its own synthetic acceptance: give it or fitted acceptance, not both")
	case len(rates) < k:
		return errorf("num_speculative_tokens", "%d, but the fitted acceptance has %d positions", k, len(rates))
	default:
		if _, err := NewCurve(rates[:k]); err != nil {
			return fmt.Errorf("fitted acceptance: %w", err)
		}
		c.RejectionSampleMethod, c.Synthetic = RejectSynthetic, slices.Clone(rates[:k])
	}
	return nil
}

// Rates are the unconditional per-position acceptance rates the counters
// show: entry i is accepted-at-position-i per draft, the probability that
// a draft's first i+1 tokens were all accepted (what vLLM's
// synthetic_acceptance_rates mean, and the per-position rate its logger
// prints). Drafts shorter than k count as rejections at the positions
// they lack.
func (c *Counters) Rates() ([]float64, error) {
	if c.Drafts <= 0 {
		return nil, errors.New("fit acceptance: no drafts counted (vllm:spec_decode_num_drafts_total is 0)")
	}
	if len(c.PerPos) == 0 {
		return nil, errors.New("fit acceptance: no per-position counts (vllm:spec_decode_num_accepted_tokens_per_pos_total)")
	}
	out := make([]float64, len(c.PerPos))
	for i, n := range c.PerPos {
		r := min(max(n/c.Drafts, 0), 1)
		if i > 0 {
			r = min(r, out[i-1]) // counters read a moment apart may cross
		}
		out[i] = r
	}
	return out, nil
}

// AcceptanceRate is accepted draft tokens per draft token.
func (c *Counters) AcceptanceRate() float64 {
	if c.DraftTokens <= 0 {
		return 0
	}
	return c.Accepted / c.DraftTokens
}

// MeanLength is vLLM's mean acceptance length: 1 + accepted per draft.
func (c *Counters) MeanLength() float64 {
	if c.Drafts <= 0 {
		return 1
	}
	return 1 + c.Accepted/c.Drafts
}

// Curve draws synthetic acceptance from unconditional per-position rates,
// as vLLM's synthetic rejection sampler does: position i is accepted with
// the conditional probability rates[i]/rates[i-1], given the ones before
// it were.
type Curve struct {
	cond []float64
}

// NewCurve checks rates (non-increasing, in [0, 1]) and builds the curve.
func NewCurve(rates []float64) (*Curve, error) {
	c := &Curve{cond: make([]float64, len(rates))}
	prev := 1.0
	for i, r := range rates {
		if r < 0 || r > 1 || r > prev {
			return nil, fmt.Errorf("acceptance curve: rate %d is %v after %v: rates must be non-increasing in [0, 1]", i, r, prev)
		}
		if prev > 0 {
			c.cond[i] = r / prev
		}
		prev = r
	}
	return c, nil
}

// Len is the number of positions the curve covers.
func (c *Curve) Len() int { return len(c.cond) }

// Accept returns how many of n drafts are accepted, drawing one uniform
// number in [0, 1) per position tried from u.
func (c *Curve) Accept(n int, u func() float64) int {
	for i := range min(n, len(c.cond)) {
		if u() >= c.cond[i] {
			return i
		}
	}
	return min(n, len(c.cond))
}

// ExpectedLength is the mean tokens one verify step of n drafts yields:
// 1 + Σ rates[i] for i < n.
func (c *Curve) ExpectedLength(n int) float64 {
	l, p := 1.0, 1.0
	for i := range min(n, len(c.cond)) {
		p *= c.cond[i]
		l += p
	}
	return l
}

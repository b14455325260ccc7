package spec

import (
	"errors"
	"fmt"
)

// Counters are a run's spec-decode counters: vLLM's four families.
type Counters struct {
	Drafts, DraftTokens, Accepted float64
	PerPos                        []float64 // accepted tokens at draft position 0, 1, …
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

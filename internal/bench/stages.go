package bench

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// StageMetrics is one stage of an inference-perf load: its requests'
// metrics over the stage's span, from its first send to its last answer.
type StageMetrics struct {
	Stage          int
	Rate           float64 // offered, requests per second
	Duration       time.Duration
	MaxConcurrency int // a concurrent stage's concurrency level, else 0
	Metrics        Metrics
}

// measure computes the pass's metrics over dur, and each stage's when plan
// has several. A sweep's probe requests (stage -1) are set apart first, as
// inference-perf leaves them out of its reports: the pass then runs from
// its first stage's first send.
func (p *Pass) measure(cfg *Config, dur time.Duration, plan *workload.Plan) {
	p.Probe = nil
	if plan != nil && plan.Sweep != nil {
		var kept []Output
		for _, o := range p.Outputs {
			if o.Stage < 0 {
				p.Probe = append(p.Probe, o)
			} else {
				kept = append(kept, o)
			}
		}
		p.Outputs = kept
		first, last := Span(kept)
		dur = last.Sub(first)
	}
	p.Metrics = calculate(p.Outputs, dur, cfg.Percentiles, cfg.Goodput, p.MaxConcurrency)
	p.Turns, p.Sessions = nil, nil
	if plan != nil && (plan.Agent != nil || plan.Graph != nil) {
		p.Turns = turnMetrics(p.Outputs, plan.AgentTurns(), cfg.Percentiles)
		p.Sessions = sessionMetrics(p.Outputs, plan, p.Start, cfg.Percentiles)
	}
	p.Stages = nil
	stages := p.Schedule
	if stages == nil && plan != nil {
		stages = plan.Stages
	}
	if plan == nil || len(stages) < 2 {
		return
	}
	for s, st := range stages {
		var outs []Output
		for _, o := range p.Outputs {
			if o.Stage == s && !o.Start.IsZero() {
				outs = append(outs, o)
			}
		}
		first, last := Span(outs)
		p.Stages = append(p.Stages, StageMetrics{Stage: s, Rate: st.Rate, Duration: last.Sub(first), MaxConcurrency: st.MaxConcurrency,
			Metrics: calculate(outs, last.Sub(first), cfg.Percentiles, cfg.Goodput, p.MaxConcurrency)})
	}
}

// Span is from the first send of outs to their last answer.
func Span(outs []Output) (first, last time.Time) {
	for _, o := range outs {
		if o.Start.IsZero() {
			continue
		}
		if first.IsZero() || o.Start.Before(first) {
			first = o.Start
		}
		if end := o.Start.Add(o.Latency); end.After(last) {
			last = end
		}
	}
	return first, last
}

// numStaged is how many requests the pass counted (a sweep's probe not
// among them).
func (p *Pass) numStaged() int { return len(p.Outputs) }

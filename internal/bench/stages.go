package bench

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// StageMetrics is one stage of an inference-perf load: its requests'
// metrics over the stage's span, from its first send to its last answer.
type StageMetrics struct {
	Stage    int
	Rate     float64 // offered, requests per second
	Duration time.Duration
	Metrics  Metrics
}

// measure computes the pass's metrics over dur, and each stage's when plan
// has several.
func (p *Pass) measure(cfg *Config, dur time.Duration, plan *workload.Plan) {
	p.Metrics = calculate(p.Outputs, dur, cfg.Percentiles, cfg.Goodput, p.MaxConcurrency)
	p.Stages = nil
	if plan == nil || len(plan.Stages) < 2 {
		return
	}
	for s, st := range plan.Stages {
		var outs []Output
		var first, last time.Time
		for _, o := range p.Outputs {
			if o.Stage != s || o.Start.IsZero() {
				continue
			}
			outs = append(outs, o)
			if first.IsZero() || o.Start.Before(first) {
				first = o.Start
			}
			if end := o.Start.Add(o.Latency); end.After(last) {
				last = end
			}
		}
		p.Stages = append(p.Stages, StageMetrics{Stage: s, Rate: st.Rate, Duration: last.Sub(first),
			Metrics: calculate(outs, last.Sub(first), cfg.Percentiles, cfg.Goodput, p.MaxConcurrency)})
	}
}

package inferenceperf

import (
	"fmt"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// breaker is one of inference-perf's circuit breakers: every finished
// request whose record matches one of its match expressions is a sample,
// a hit unless rules are given and none holds; any trigger that fires opens
// it, and an open breaker named in load.circuit_breakers ends the run.
type breaker struct {
	name           string
	matches, rules []*jmesExpr
	triggers       []trigger
	open           bool
}

type trigger struct {
	consecutive int // threshold of a consecutive trigger, else 0
	run         int

	window     time.Duration // a rate_over_window trigger
	threshold  float64
	minSamples int
	samples    []hitSample
}

type hitSample struct {
	at  time.Duration
	hit bool
}

func (c *Config) checkBreakers() error {
	names := map[string]bool{}
	for i, b := range c.CircuitBreakers {
		p := fmt.Sprintf("circuit_breakers[%d]", i)
		if b.Name == "" || names[b.Name] {
			return c.at(p+".name", "each circuit breaker needs a name, given once")
		}
		names[b.Name] = true
		if len(b.Metrics.Matches) == 0 {
			return c.at(p+".metrics.matches", "needs at least one expression")
		}
		for j, e := range append(append([]string(nil), b.Metrics.Matches...), b.Metrics.Rules...) {
			if _, err := compileJMES(e); err != nil {
				key := fmt.Sprintf("%s.metrics.matches[%d]", p, j)
				if j >= len(b.Metrics.Matches) {
					key = fmt.Sprintf("%s.metrics.rules[%d]", p, j-len(b.Metrics.Matches))
				}
				return c.at(key, "%v", err)
			}
		}
		if len(b.Triggers) == 0 {
			return c.at(p+".triggers", "needs at least one trigger")
		}
		for j, t := range b.Triggers {
			tp := fmt.Sprintf("%s.triggers[%d]", p, j)
			switch t.Type {
			case "consecutive":
				if t.Threshold < 1 || t.Threshold != float64(int(t.Threshold)) || t.WindowSec != nil || t.MinSamples != nil {
					return c.at(tp, "a consecutive trigger takes an integer threshold of at least 1, and nothing else")
				}
			case "rate_over_window":
				if t.WindowSec == nil || !finitePositive(*t.WindowSec) || !(t.Threshold >= 0 && t.Threshold <= 1) || (t.MinSamples != nil && *t.MinSamples < 0) {
					return c.at(tp, "a rate_over_window trigger takes window_sec > 0, a threshold in [0, 1] and min_samples >= 0")
				}
			default:
				return c.at(tp+".type", "%q: want consecutive or rate_over_window", t.Type)
			}
		}
	}
	for i, n := range c.Load.CircuitBreakers {
		if !names[n] {
			return c.at(fmt.Sprintf("load.circuit_breakers[%d]", i), "no circuit breaker is named %q", n)
		}
	}
	return nil
}

// breakers makes the configuration's circuit breakers for each run (nil
// without any): all of them are fed every finished request, and one named
// in load.circuit_breakers that opens ends the run. The expressions are
// compiled once; each run's triggers start afresh.
func (c *Config) breakers() func() workload.Breaker {
	if len(c.CircuitBreakers) == 0 {
		return nil
	}
	var all []*breaker
	byName := map[string]int{}
	for i, b := range c.CircuitBreakers {
		br := &breaker{name: b.Name}
		for _, e := range b.Metrics.Matches {
			x, _ := compileJMES(e) // checked
			br.matches = append(br.matches, x)
		}
		for _, e := range b.Metrics.Rules {
			x, _ := compileJMES(e)
			br.rules = append(br.rules, x)
		}
		for _, t := range b.Triggers {
			if t.Type == "consecutive" {
				br.triggers = append(br.triggers, trigger{consecutive: int(t.Threshold)})
				continue
			}
			tr := trigger{window: workload.Seconds(*t.WindowSec), threshold: t.Threshold}
			if t.MinSamples != nil {
				tr.minSamples = *t.MinSamples
			}
			br.triggers = append(br.triggers, tr)
		}
		all = append(all, br)
		byName[b.Name] = i
	}
	var enabled []int
	for _, n := range c.Load.CircuitBreakers {
		enabled = append(enabled, byName[n])
	}
	return func() workload.Breaker {
		s := &breakerSet{enabled: enabled}
		for _, b := range all {
			fresh := *b
			fresh.triggers = slices.Clone(b.triggers)
			s.all = append(s.all, &fresh)
		}
		return s
	}
}

// breakerSet is one run's circuit breakers.
type breakerSet struct {
	all     []*breaker
	enabled []int // indexes in all of those named in load.circuit_breakers
}

// Trip shows every breaker the request's record (the fields of
// inference-perf's request lifecycle metric glassbox has) and reports
// whether one named in load.circuit_breakers is open.
func (s *breakerSet) Trip(r workload.Request, at time.Duration, o workload.Outcome) bool {
	rec := map[string]any{"stage_id": float64(r.Stage), "scheduled_time": r.Due.Seconds(), "end_time": at.Seconds(),
		"info": map[string]any{"input_tokens": float64(o.PromptTokens), "request_metrics": map[string]any{"text": map[string]any{"input_tokens": float64(o.PromptTokens)}},
			"response_metrics": map[string]any{"output_tokens": float64(o.OutputTokens)}}}
	if r.Model != "" {
		rec["info"].(map[string]any)["lora_adapter"] = r.Model
	}
	if !o.OK {
		rec["error"] = map[string]any{"error_type": o.ErrorType, "error_msg": o.Error}
	}
	for _, b := range s.all {
		b.feed(rec, at)
	}
	for _, i := range s.enabled {
		if s.all[i].open {
			return true
		}
	}
	return false
}

// feed shows the breaker one finished request's record, at when it
// finished.
func (b *breaker) feed(record map[string]any, at time.Duration) {
	if !anyTruthy(b.matches, record) {
		return
	}
	hit := len(b.rules) == 0 || anyTruthy(b.rules, record)
	for i := range b.triggers {
		if b.triggers[i].update(hitSample{at, hit}) {
			b.open = true
		}
	}
}

func anyTruthy(exprs []*jmesExpr, record map[string]any) bool {
	for _, e := range exprs {
		if truthy(e.eval(record)) {
			return true
		}
	}
	return false
}

// update adds a sample and reports whether the trigger has fired.
func (t *trigger) update(s hitSample) bool {
	if t.consecutive > 0 {
		if s.hit {
			t.run++
		} else {
			t.run = 0
		}
		return t.run >= t.consecutive
	}
	t.samples = append(t.samples, s)
	for len(t.samples) > 0 && t.samples[0].at < s.at-t.window {
		t.samples = t.samples[1:]
	}
	if len(t.samples) < t.minSamples || len(t.samples) == 0 {
		return false
	}
	hits := 0
	for _, x := range t.samples {
		if x.hit {
			hits++
		}
	}
	return float64(hits)/float64(len(t.samples)) >= t.threshold
}

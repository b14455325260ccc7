package inferenceperf

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// run drives a schedule with every request taking took, and returns when
// each was sent.
func run(s *workload.Schedule, took func(workload.Request) time.Duration, fail func(workload.Request) bool) (sent []time.Duration, reqs []workload.Request) {
	type flight struct {
		r   workload.Request
		end time.Duration
	}
	var live []flight
	now := time.Duration(0)
	for range 1_000_000 {
		ready, next := s.Poll(now)
		for _, r := range ready {
			sent, reqs = append(sent, now), append(reqs, r)
			live = append(live, flight{r, now + took(r)})
		}
		for _, c := range s.Cancelled() {
			for i := range live {
				if live[i].r.Index == c.Index {
					live[i].end = now
				}
			}
		}
		if s.Done() {
			return sent, reqs
		}
		soon := next
		for _, f := range live {
			if soon < 0 || f.end < soon {
				soon = f.end
			}
		}
		now = max(now, soon)
		kept := live[:0]
		for _, f := range live {
			if f.end <= now {
				s.Finished(f.r, now, workload.Outcome{OK: !fail(f.r), OutputTokens: 1, ErrorType: "TimeoutError"})
			} else {
				kept = append(kept, f)
			}
		}
		live = kept
	}
	panic("schedule did not finish")
}

// TestSweepFindsSaturation: a server that drains 10 requests a second
// (one at a time, 100 ms each) is found saturated at about 10 req/s, and
// the stages run from 1 to it.
func TestSweepFindsSaturation(t *testing.T) {
	// A server that answers one request at a time, in 100 ms.
	p := newPlan(t, "load: {sweep: {type: linear, num_requests: 60, num_stages: 4, stage_duration: 2, timeout: 30}}\ndata: {type: mock}", PlanOptions{})
	s := p.Start()
	free := time.Duration(0)
	var sent []time.Duration
	_, reqs := run(s, func(r workload.Request) time.Duration {
		now := r.Due
		if len(sent) > 0 {
			now = max(now, sent[len(sent)-1])
		}
		sent = append(sent, now)
		free = max(free, now) + 100*time.Millisecond
		return free - now
	}, func(workload.Request) bool { return false })
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	if sat := s.Saturation(); sat < 8 || sat > 12 {
		t.Errorf("saturation %.2f, want about 10", sat)
	}
	st := s.Stages()
	if len(st) != 4 || st[0].Rate != 1 || math.Abs(st[3].Rate-s.Saturation()) > 0.01 {
		t.Errorf("stages %v", st)
	}
	probe := 0
	for _, r := range reqs {
		if r.Stage < 0 {
			probe++
		}
	}
	if probe != 60 {
		t.Errorf("%d probe requests, want 60", probe)
	}
}

// TestSweepTimeoutAndTooFewSamples: a probe past its timeout is cut off
// (its requests abandoned), and one that saw no draining is an error.
func TestSweepTimeoutAndTooFewSamples(t *testing.T) {
	p := newPlan(t, "load: {sweep: {type: linear, num_requests: 20, timeout: 3}}\ndata: {type: mock}", PlanOptions{})
	s := p.Start()
	run(s, func(workload.Request) time.Duration { return time.Hour }, func(workload.Request) bool { return false })
	if s.Err() == nil || !strings.Contains(s.Err().Error(), "num_requests") {
		t.Errorf("a probe nothing drained in: %v", s.Err())
	}
}

// TestRequestTimeoutAndBreaker: load.request_timeout abandons slow
// requests; a named circuit breaker stops the run when they trip it.
func TestRequestTimeoutAndBreaker(t *testing.T) {
	p := newPlan(t, `load: {stages: [{rate: 10, duration: 2}, {rate: 10, duration: 2}], request_timeout: 0.5, circuit_breakers: [slow]}
data: {type: mock}
circuit_breakers:
- name: slow
  metrics: {matches: ["error.error_type == 'TimeoutError'"]}
  triggers: [{type: consecutive, threshold: 3}]`, PlanOptions{})
	s := p.Start()
	_, reqs := run(s, func(r workload.Request) time.Duration {
		if r.Index >= 5 {
			return time.Hour
		}
		return 10 * time.Millisecond
	}, func(r workload.Request) bool { return r.Index >= 5 })
	if len(reqs) >= 40 || len(reqs) < 8 {
		t.Errorf("%d requests sent; the breaker should have stopped the run a few timeouts after the fifth", len(reqs))
	}
}

// TestConcurrentStagesAndLoRA: a concurrent stage caps its own requests in
// flight; the LoRA split sends each request to an adapter by its weight.
func TestConcurrentStagesAndLoRA(t *testing.T) {
	p := newPlan(t, `load: {type: concurrent, stages: [{num_requests: 40, concurrency_level: 4}], lora_traffic_split: [{name: a, split: 0.75}, {name: b, split: 0.25}]}
data: {type: mock}`, PlanOptions{})
	s := p.Start()
	inFlight, most := 0, 0
	counts := map[string]int{}
	now := time.Duration(0)
	var live []workload.Request
	for !s.Done() {
		ready, _ := s.Poll(now)
		for _, r := range ready {
			counts[r.Model]++
			live = append(live, r)
		}
		inFlight = len(live)
		most = max(most, inFlight)
		now += time.Second
		if len(live) > 0 {
			s.Finished(live[0], now, workload.Outcome{OK: true})
			live = live[1:]
		}
	}
	if most != 4 {
		t.Errorf("at most %d in flight, want the concurrency level 4", most)
	}
	if counts["a"] < 22 || counts["b"] < 4 || counts["a"]+counts["b"] != 40 {
		t.Errorf("adapters %v, want about 30 a and 10 b", counts)
	}
}

// TestClientCap: num_workers × worker_max_concurrency caps the requests in
// flight, in current mode.
func TestClientCap(t *testing.T) {
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}], num_workers: 2, worker_max_concurrency: 10}", PlanOptions{}); p.MaxConcurrency != 20 {
		t.Errorf("cap %d, want 20", p.MaxConcurrency)
	}
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}]}", PlanOptions{Workers: 4}); p.MaxConcurrency != 400 {
		t.Errorf("default cap %d, want 4 workers × 100", p.MaxConcurrency)
	}
	if p := newPlan(t, "load: {stages: [{rate: 1, duration: 1}], num_workers: 2}", PlanOptions{NoClientCap: true}); p.MaxConcurrency != 0 {
		t.Errorf("no client cap: %d", p.MaxConcurrency)
	}
}

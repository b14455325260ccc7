package workload

import "time"

// Plan is a workload ready to run: its prompts and its stages.
type Plan struct {
	Prompts  []Sample
	Stages   []Stage
	Interval time.Duration // between a stage's last completion and the next stage's start, lead included
	// Sessions makes every request a round of its user's conversation
	// (inference-perf's enable_multi_turn_chat): user i%len(Prompts), at
	// most one request in flight each, each prompt carrying the last one
	// and its answer.
	Sessions bool
	// Agent, with Sessions, makes the requests the turns of agent
	// sessions (AgentPlan): each session's own prompts, tool latency
	// between turns.
	Agent *AgentPlan
	// Graph, when set, makes the requests the calls of graph sessions
	// (GraphPlan): the stages start sessions, not requests.
	Graph     *GraphPlan
	Chat      bool // api.type chat
	IgnoreEOS bool
	// Unary is api.streaming false: each request asks for the whole answer
	// at once, so a client sees no first token before the last.
	Unary bool
	// Continuous makes the prompts run on from stage to stage (ShareGPT's
	// one iterator in inference-perf) instead of starting over.
	Continuous bool
	// MaxConcurrency caps the requests in flight (vLLM's --max-concurrency,
	// inference-perf's num_workers × worker_max_concurrency; 0: none);
	// Until, when positive, stops sending at that offset (--duration).
	MaxConcurrency int
	Until          time.Duration
	// RequestTimeout, when positive, abandons a request that long after it
	// was sent (load.request_timeout).
	RequestTimeout time.Duration
	// Sweep, when set, runs inference-perf's saturation probe first and
	// generates the stages from what it measures (Stages is then empty).
	Sweep *Sweep
	// LoRA sends each request to one of these adapters (by model name),
	// drawn by their weights (load.lora_traffic_split).
	LoRA []LoRASplit
	// ResponseFormat is api.response_format as requests carry it, or nil.
	ResponseFormat map[string]any
	// Seed seeds what a running schedule draws: each request's adapter, a
	// sweep's generated stages.
	Seed uint64
	// Breaker, when set, makes each run's circuit breaker (Start calls it),
	// which is shown every finished request and can end the run.
	Breaker func() Breaker
	// Separator is the tokens of " ", which joins a session's conversation
	// and its next prompt when they are token ids (SetSeparator).
	Separator []int
	// SessionName, when set, names user's conv-th conversation of a
	// stage (from 0) as inference-perf names its user sessions: each
	// request carries the name and its round (Request.SessionID, Round).
	// A stage's first conversation keeps the user's name from the stage
	// before, as inference-perf re-primes its session under its last name.
	SessionName func(user, conv int) string
}

// OpenLoop is the plan of vLLM's bench serve: requests at the arrival
// offsets, cycling through the samples, at most maxConcurrency at once
// (0: no cap), sending stopping at until when it is positive.
func OpenLoop(samples []Sample, arr *Arrivals, maxConcurrency int, until time.Duration) *Plan {
	var offs []time.Duration
	for {
		off, ok := arr.Next()
		if !ok {
			break
		}
		offs = append(offs, off)
	}
	return &Plan{Prompts: samples, Stages: []Stage{{Rate: arr.rate, Duration: arr.duration, Offsets: offs}},
		MaxConcurrency: maxConcurrency, Until: until}
}

// LoRASplit sends Split of the requests to the LoRA adapter Name.
type LoRASplit struct {
	Name  string
	Split float64
}

// Stage is one stage's request offsets from its start.
type Stage struct {
	Rate     float64
	Duration time.Duration
	Offsets  []time.Duration
	// MaxConcurrency, when positive, caps this stage's requests in flight
	// instead of the plan's (load type concurrent's concurrency_level);
	// with graph sessions, the sessions running at once.
	MaxConcurrency int
	// Sessions is how many graph sessions the stage starts, and Timeout,
	// when positive, when it ends whatever is still running (GraphPlan).
	Sessions int
	Timeout  time.Duration
}

// Rate is the plan's offered request rate over its stages' durations.
func (p *Plan) Rate() float64 { return StagesRate(p.Stages) }

// StagesRate is the offered request rate of stages over their durations.
func StagesRate(stages []Stage) float64 {
	var d time.Duration
	n := 0
	for _, s := range stages {
		d += s.Duration
		n += len(s.Offsets)
	}
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// NumRequests is how many requests the plan's stages send (a sweep's
// probe, before it has run, counts as its own burst; agent sessions on
// their own clocks, every turn of every session).
func (p *Plan) NumRequests() int {
	n := 0
	if g := p.Graph; g != nil {
		next := 0
		for _, st := range p.Stages {
			for k := range st.Sessions {
				if next+k < len(g.Sessions) {
					n += len(g.Sessions[next+k].Calls)
				}
			}
			next += st.Sessions
		}
		return n
	}
	if a := p.Agent; a != nil && a.OwnClocks {
		for _, s := range a.Sessions {
			n += len(s.Turns)
		}
		return n
	}
	for _, s := range p.Stages {
		n += len(s.Offsets)
	}
	if p.Sweep != nil {
		n += len(p.Sweep.Probe.Offsets)
	}
	return n
}

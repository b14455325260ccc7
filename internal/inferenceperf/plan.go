package inferenceperf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/workload"
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
	// Fetch downloads a dataset the configuration names without a local
	// path (inference-perf's ShareGPT from the hub) and returns its local
	// path; nil refuses such a configuration.
	Fetch func(ctx context.Context, ref string) (string, error)
	// Workers is load.num_workers when the configuration does not set it:
	// inference-perf's default is the client machine's CPU count. The
	// client caps the requests in flight at num_workers ×
	// worker_max_concurrency; 0 leaves an unset num_workers uncapped.
	Workers int
	// NoClientCap drops that cap altogether (plan measures the server,
	// not a client).
	NoClientCap bool
}

// NewPlan builds the prompts and arrival schedules of an inference-perf
// configuration with tk (an IDTokenizer makes prompts of exact lengths).
func NewPlan(ctx context.Context, c *Config, tk workload.Tokenizer, o PlanOptions) (*workload.Plan, error) {
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
	p := &workload.Plan{Interval: 2 * time.Second, Chat: c.API.Type == "chat", IgnoreEOS: c.Server.IgnoreEOS == nil || *c.Server.IgnoreEOS,
		Unary: !c.API.Streaming, Continuous: c.Data.Type == "shareGPT", ResponseFormat: c.API.ResponseFormatBody(), Seed: uint64(o.Seed)}
	for _, l := range c.Load.LoRATrafficSplit {
		p.LoRA = append(p.LoRA, workload.LoRASplit(l))
	}
	if c.Load.Interval != nil {
		p.Interval = workload.Seconds(*c.Load.Interval) + time.Second // inference-perf sleeps the interval, then leads by 1 s
	}
	if t := c.Load.RequestTimeout; t != nil {
		p.RequestTimeout = workload.Seconds(*t)
	}
	p.Breaker = c.breakers()
	if o.Compat == Current && !o.NoClientCap {
		p.MaxConcurrency = clientCap(&c.Load, o.Workers)
	}
	var trace []workload.TraceEntry
	if c.Load.Trace != nil {
		var err error
		if trace, err = workload.ReadTrace(c.Load.Trace.File, c.Load.Trace.Format); err != nil {
			return nil, fmt.Errorf("plan workload: load.trace: %w", err)
		}
	}
	var dataTrace []workload.TraceEntry
	if c.Data.Trace != nil {
		var err error
		if dataTrace, err = workload.ReadTrace(c.Data.Trace.File, c.Data.Trace.Format); err != nil {
			return nil, fmt.Errorf("plan workload: data.trace: %w", err)
		}
	}
	most, err := planStages(p, c, trace, dataTrace, rng)
	if err != nil {
		return nil, err
	}
	if p.Prompts, err = prompts(ctx, c, p, most, dataTrace, tk, o, rng); err != nil {
		return nil, fmt.Errorf("plan workload: %w", err)
	}
	if len(p.Prompts) == 0 {
		return nil, fmt.Errorf("plan workload: data.type %s gave no prompts", c.Data.Type)
	}
	if c.Load.Type == "trace_session_replay" {
		if err := sessionStages(p, c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Bench sets what cfg sends from the configuration: its plan (built as o
// says, with the run's seed), its api block's headers (unless cfg has its
// own) and session header keys.
func (c *Config) Bench(cfg *bench.Config, o PlanOptions) {
	cfg.Plan = func(ctx context.Context, tk workload.Tokenizer, seed int64) (*workload.Plan, error) {
		o := o
		o.Seed = seed
		return NewPlan(ctx, c, tk, o)
	}
	if cfg.Headers == nil {
		cfg.Headers = c.API.Headers
	}
	if k := c.API.SessionIDHeaderKey; k != nil {
		cfg.SessionHeader = *k
	}
	if k := c.API.SessionTokenHeaderKey; k != nil {
		cfg.SessionTokenHeader = *k
	}
}

// clientCap is inference-perf's cap on requests in flight: num_workers
// worker processes of worker_max_concurrency each; 0 for none.
func clientCap(l *Load, defaultWorkers int) int {
	workers := defaultWorkers
	if l.NumWorkers != nil {
		workers = *l.NumWorkers
	}
	per := defaultWorkerConcurrency
	if l.WorkerMaxConcurrency != nil {
		per = *l.WorkerMaxConcurrency
	}
	if workers <= 0 {
		// num_workers 0 runs inference-perf's single-process loop, which
		// has no cap; an unknown default leaves none either.
		return 0
	}
	return workers * per
}

// planStages builds the configured stages (or the sweep's probe) and returns
// the most requests any one of them sends.
func planStages(p *workload.Plan, c *Config, trace, dataTrace []workload.TraceEntry, rng *rand.Rand) (int, error) {
	l := &c.Load
	most := 0
	if sw := l.Sweep; sw != nil {
		p.Sweep = &workload.Sweep{
			// The probe sends num_requests in 5 s, as inference-perf's.
			Probe:         workload.Stage{Rate: float64(*sw.NumRequests) / 5, Duration: 5 * time.Second, Offsets: workload.ConstantOffsets(*sw.NumRequests, 5, rng)},
			Timeout:       workload.Seconds(*sw.Timeout),
			NumStages:     *sw.NumStages,
			StageDuration: *sw.StageDuration,
			Percentile:    *sw.SaturationPercentile,
			Geometric:     sw.Type == "geometric",
			Poisson:       l.Type == "poisson",
		}
		return *sw.NumRequests, nil
	}
	if l.Type == "trace_session_replay" {
		return 0, nil // the sessions' stages, once the traces are read (sessionStages)
	}
	for i, s := range l.Stages {
		st := workload.Stage{Rate: s.Rate, Duration: workload.Seconds(s.Duration)}
		switch l.Type {
		case "poisson":
			st.Offsets = workload.PoissonOffsets(s.Rate, s.Duration, rng)
		case "concurrent":
			// inference-perf sends the stage's requests within one second
			// to workers capped at the concurrency level.
			st.Rate, st.Duration = float64(*s.NumRequests), time.Second
			st.Offsets = workload.ConstantOffsets(*s.NumRequests, 1, rng)
			st.MaxConcurrency = *s.ConcurrencyLevel
		case "trace_replay":
			// Each stage replays the trace from its start: as many requests
			// as the data's trace has, else rate × duration, at the trace's
			// times (to the hundredth of a second, as inference-perf reads
			// them).
			n := int(s.Rate * s.Duration)
			if dataTrace != nil {
				n = len(dataTrace)
			}
			if n > len(trace) {
				return 0, c.at(fmt.Sprintf("load.stages[%d]", i), "sends %d requests but load.trace has %d", n, len(trace))
			}
			for _, e := range trace[:n] {
				st.Offsets = append(st.Offsets, max(e.Centis, 0))
			}
			// The stage lasts as long as its requests take: inference-perf
			// waits for them, not for the configured duration.
			st.Duration = 0
			if n > 0 {
				st.Duration = slices.Max(st.Offsets)
			}
		default:
			st.Offsets = workload.ConstantOffsets(int(s.Rate*s.Duration), s.Duration, rng)
		}
		most = max(most, len(st.Offsets))
		p.Stages = append(p.Stages, st)
	}
	return most, nil
}

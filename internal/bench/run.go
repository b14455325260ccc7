package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Result is everything one bench invocation measured.
type Result struct {
	Config      Config
	Date        time.Time
	ModelID     string
	TokenizerID string
	Passes      []*Pass // one, or every pass of a sweep in the order run
	Sweep       *Sweep  // nil unless Config.Sweep
}

// Pass is one load run: its shape, its requests and their metrics, and what
// the server's /metrics said meanwhile.
type Pass struct {
	Name           string  // "main", "synchronous", "throughput" or "rate"
	RequestRate    float64 // +Inf for all at once
	Burstiness     float64
	MaxConcurrency int
	Ramp           *workload.Ramp
	Start          time.Time
	Outputs        []Output
	Metrics        Metrics
	Stages         []StageMetrics  // an inference-perf load's stages, when it has more than one
	Turns          []TurnMetrics   // an agent-session load's turns
	Sessions       *SessionMetrics // and its sessions
	Server         *ServerView     // nil when scraping is off or the server has no /metrics
	Chaos          *ChaosReport    // with Config.Chaos: what misbehaved and whether the server agrees
	Soak           *SoakReport     // with Config.Soak: the server over time
	// Schedule is the stages the load ran (a sweep's, once found), and
	// Saturation the rate a sweep's probe found; Probe its requests, which
	// no metric counts.
	Schedule   []workload.Stage
	Saturation float64
	Probe      []Output
}

// Run runs the benchmark cfg describes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		if cfg.Model, err = firstModel(ctx, &cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Dataset.Name == "random" {
		cfg.IgnoreEOS = true // random prompts must run to their length, as vLLM forces
	}
	res := &Result{Config: cfg, Date: cfg.Now(), ModelID: cfg.Model}
	tc := pickCounter(ctx, &cfg)
	res.TokenizerID = tc.ID()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x9e3779b97f4a7c15))
	r := &runner{cfg: &cfg, tc: tc, rng: rng}
	if cfg.Plan != nil {
		if r.plan, err = cfg.Plan(ctx, tc, cfg.Seed); err != nil {
			return nil, err
		}
		if err := checkAdapters(ctx, &cfg, r.plan.LoRA); err != nil {
			return nil, err
		}
		cfg.IgnoreEOS, cfg.NumPrompts, cfg.RequestRate = r.plan.IgnoreEOS, r.plan.NumRequests(), r.plan.Rate()
		cfg.ResponseFormat = r.plan.ResponseFormat
		res.Config = cfg
	} else if cfg.Dataset.Name == "trace" {
		// A trace is its own schedule: its requests at their times
		// (scaled to --request-rate when one is given).
		format, _ := workload.TraceFormatOf(cfg.Dataset.Path)
		trace, err := workload.ReadTrace(cfg.Dataset.Path, format)
		if err != nil {
			return nil, err
		}
		if r.plan, err = workload.TracePlan(ctx, trace, tc, cfg.NumPrompts, cfg.RequestRate, cfg.Seed); err != nil {
			return nil, err
		}
		r.plan.MaxConcurrency = cfg.MaxConcurrency
		cfg.NumPrompts, cfg.IgnoreEOS = r.plan.NumRequests(), true
		res.Config = cfg
	} else if cfg.Agent != nil {
		// Agent sessions run to their lengths, as random prompts do.
		if r.plan, err = cfg.AgentPlan(ctx, tc, rng); err != nil {
			return nil, err
		}
		cfg.NumPrompts, cfg.IgnoreEOS = r.plan.NumRequests(), true
		res.Config = cfg
	} else if r.samples, err = workload.LoadSamples(ctx, cfg.Dataset, cfg.NumPrompts, tc, rng); err != nil {
		return nil, err
	}
	r.st = newStreamer(&cfg)
	if r.plan != nil {
		r.st.unary = r.plan.Unary
	}
	if cfg.Chaos != nil {
		if cfg.Sweep {
			return nil, errors.New("check config: --chaos runs one pass, not a --sweep")
		}
	}
	if err := r.warmup(ctx); err != nil {
		return nil, err
	}
	if cfg.Chaos != nil {
		// After the warm-up, which is sent as it is and counts nowhere
		// (the reconciliation reads the server from the pass's start).
		if r.chaos, err = newChaosClient(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Sweep {
		res.Sweep, err = r.sweep(ctx)
		if res.Sweep != nil {
			res.Passes = res.Sweep.passes()
		}
		return res, err
	}
	p, err := r.pass(ctx, Pass{Name: "main", RequestRate: cfg.RequestRate, Burstiness: cfg.Burstiness,
		MaxConcurrency: cfg.MaxConcurrency, Ramp: cfg.Ramp})
	if p != nil && cfg.Plan != nil {
		// A sweep's stages are known only now.
		res.Config.NumPrompts, res.Config.RequestRate = p.numStaged(), workload.StagesRate(p.Schedule)
	} else if p != nil && cfg.Agent != nil {
		// The requests the run had, as vLLM's num_prompts is the requests
		// it sends: --duration stops starting sessions, so the turns of
		// those it never started are not among them.
		res.Config.NumPrompts = p.numStaged()
	}
	if err != nil {
		if p != nil && p.Metrics.Completed > 0 {
			res.Passes = []*Pass{p}
			return res, err
		}
		return nil, err
	}
	res.Passes = []*Pass{p}
	return res, nil
}

// checkAdapters refuses a plan's LoRA traffic split (inference-perf's
// load.lora_traffic_split) naming an adapter the server does not serve, as
// inference-perf's client does before it starts.
func checkAdapters(ctx context.Context, cfg *Config, split []workload.LoRASplit) error {
	if len(split) == 0 {
		return nil
	}
	models, err := listModels(ctx, cfg)
	if err != nil {
		return err
	}
	for _, l := range split {
		if !slices.Contains(models, l.Name) {
			return fmt.Errorf("load.lora_traffic_split: the server does not serve the LoRA adapter %q (its models: %s)", l.Name, strings.Join(models, ", "))
		}
	}
	return nil
}

// runner runs passes over one dataset.
type runner struct {
	cfg     *Config
	st      *streamer
	tc      workload.Tokenizer
	samples []workload.Sample
	plan    *workload.Plan // Config.Plan's (or a trace's, or agent sessions'), run by every pass
	rng     *rand.Rand
	chaos   *chaosClient // nil unless Config.Chaos
}

// warmup sends NumWarmups copies of the first sample, under the same
// concurrency cap, and waits for them; they count nowhere.
func (r *runner) warmup(ctx context.Context) error {
	if r.cfg.NumWarmups == 0 {
		return nil
	}
	var first workload.Sample
	if r.plan != nil {
		first = r.plan.Prompts[0]
	} else {
		first = r.samples[0]
	}
	arr := workload.NewArrivals(r.cfg.NumWarmups, 0, math.Inf(1), 1, nil, r.rng)
	outputs := r.drive(ctx, workload.OpenLoop([]workload.Sample{first}, arr, r.cfg.MaxConcurrency, 0).Start(), r.cfg.Now(), newProgress(nil, "", 0, 0, r.cfg.Now))
	if err := ctx.Err(); err != nil {
		return err
	}
	if !outputs[0].Success {
		return fmt.Errorf("warm up: %s", outputs[0].Error)
	}
	return nil
}

// pass sends one load and measures it. The duration runs from just before
// the first request is sent until the last one has finished.
func (r *runner) pass(ctx context.Context, p Pass) (*Pass, error) {
	plan := r.plan
	if plan == nil {
		arr := workload.NewArrivals(len(r.samples), r.cfg.Duration, p.RequestRate, p.Burstiness, p.Ramp, r.rng)
		plan = workload.OpenLoop(r.samples, arr, p.MaxConcurrency, r.cfg.Duration)
	}
	if n := len(r.cfg.LoRAModules); n > 0 && r.cfg.Plan == nil {
		q := *plan // each request to an adapter at random, as vLLM's bench
		q.LoRA = nil
		for _, m := range r.cfg.LoRAModules {
			q.LoRA = append(q.LoRA, workload.LoRASplit{Name: m, Split: 1 / float64(n)})
		}
		plan = &q
	}
	scr := startScraper(ctx, r.cfg)
	prog := newProgress(r.cfg.Progress, p.Name, plan.NumRequests(), r.cfg.Duration, r.cfg.Now)
	p.Start = r.cfg.Now()
	sch := plan.Start()
	stopBurst := r.startBurst(ctx, plan)
	outputs := r.drive(ctx, sch, p.Start, prog)
	stopBurst()
	dur := r.cfg.Now().Sub(p.Start)
	prog.finish()
	p.Server = scr.stop(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run %s pass: %w", p.Name, err)
	}
	if r.cfg.Soak && p.Server != nil {
		p.Soak = analyseSoak(scr.soak, dur)
	}
	if r.chaos != nil {
		var after *snapshot
		if scr.first != nil {
			var err error
			if after, err = settle(ctx, r.cfg, scr.first); err != nil {
				return nil, fmt.Errorf("run %s pass: read the server after the chaos: %w", p.Name, err)
			}
		}
		p.Chaos = reconcile(scr.first, after, outputs, r.chaos.outs, r.chaos.faults(len(outputs), r.cfg.Seed))
	}
	r.countMissingTokens(ctx, outputs)
	p.Outputs = outputs
	p.Schedule, p.Saturation = sch.Stages(), sch.Saturation()
	p.measure(r.cfg, dur, plan)
	if err := sch.Err(); err != nil {
		return &p, fmt.Errorf("run %s pass: %w", p.Name, err)
	}
	if p.Metrics.Completed == 0 && len(p.Outputs) > 0 {
		return &p, fmt.Errorf("run %s pass: every request failed, the first with: %s", p.Name, p.Outputs[0].Error)
	}
	return &p, nil
}

// drive runs the schedule on the wall clock from start: each request goes
// in its own goroutine when the schedule releases it and reports back
// here, so that stages, sessions and the concurrency cap see every
// completion, and the schedule's cancellations reach the request. It
// returns the outputs in schedule order once all are in (when ctx ends,
// once those in flight have given up).
func (r *runner) drive(ctx context.Context, sch *workload.Schedule, start time.Time, prog *progress) []Output {
	type done struct {
		req workload.Request
		out Output
	}
	var (
		outputs  []Output
		cancels  = map[int]context.CancelCauseFunc{}
		finished = make(chan done)
		timer    = time.NewTimer(time.Hour)
	)
	defer timer.Stop()
	record := func(d done) {
		delete(cancels, d.req.Index)
		if !d.out.Start.IsZero() {
			d.out.QueueTime = d.out.Start.Sub(start.Add(d.req.Due))
		}
		d.out.Stage, d.out.Turn, d.out.Session, d.out.Tool = d.req.Stage, d.req.Turn, d.req.User, d.req.Tool
		d.out.SessionID, d.out.Round, d.out.Call = d.req.SessionID, d.req.Round, d.req.Call
		outputs[d.req.Index] = d.out
		prog.done(d.out.Success)
		sch.Finished(d.req, r.cfg.Now().Sub(start), workload.Outcome{OK: d.out.Success, Text: d.out.GeneratedText, OutputTokens: d.out.OutputTokens,
			PromptTokens: d.out.PromptLen, ErrorType: d.out.ErrorType, Error: d.out.Error, ToolCalls: d.out.ToolCalls})
	}
	for ctx.Err() == nil {
		ready, next := sch.Poll(r.cfg.Now().Sub(start))
		for _, rq := range ready {
			if rq.Index >= len(outputs) {
				outputs = append(outputs, make([]Output, rq.Index+1-len(outputs))...)
			}
			rctx, cancel := context.WithCancelCause(ctx)
			cancels[rq.Index] = cancel
			go func() {
				defer cancel(nil)
				finished <- done{rq, r.send(rctx, rq)}
			}()
		}
		for _, c := range sch.Cancelled() {
			if cancel, ok := cancels[c.Index]; ok {
				cause := errCancelled
				if c.TimedOut {
					cause = errRequestTimeout
				}
				cancel(cause)
			}
		}
		if sch.Done() {
			break
		}
		var tick <-chan time.Time
		if next >= 0 {
			timer.Reset(max(next-r.cfg.Now().Sub(start), 0))
			tick = timer.C
		}
		select {
		case d := <-finished:
			record(d)
		case <-tick:
		case <-ctx.Done():
		}
	}
	for len(cancels) > 0 {
		record(<-finished)
	}
	return outputs
}

// send sends one request: as it is, or with its chaos fault.
func (r *runner) send(ctx context.Context, rq workload.Request) Output {
	if r.chaos != nil {
		return r.chaos.do(ctx, rq.Index, r.cfg.Seed, rq)
	}
	return r.st.do(ctx, rq)
}

// startBurst sends chaos's burst halfway through the pass (by its duration,
// or its requests at their rate); stop waits for it.
func (r *runner) startBurst(ctx context.Context, plan *workload.Plan) (stop func()) {
	if r.chaos == nil || r.cfg.Chaos.Burst == 0 {
		return func() {}
	}
	half := r.cfg.Duration / 2
	if half == 0 && !math.IsInf(plan.Rate(), 1) && plan.Rate() > 0 {
		half = time.Duration(float64(plan.NumRequests()) / plan.Rate() / 2 * float64(time.Second))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-time.After(half):
			r.chaos.burst(ctx, r.cfg.Chaos.Burst, workload.Request{Sample: plan.Prompts[0]})
		case <-ctx.Done():
		}
	})
	return wg.Wait
}

// errCancelled is the cause of a request abandoned with the run.
var errCancelled = errors.New("cancelled with the run (a sweep's probe past its timeout, or a circuit breaker)")

// countMissingTokens counts the generated text of successful requests whose
// server reported no usage, as vLLM re-tokenizes them.
func (r *runner) countMissingTokens(ctx context.Context, outputs []Output) {
	for i := range outputs {
		if o := &outputs[i]; o.Success && o.OutputTokens == 0 && o.GeneratedText != "" {
			if n, err := r.tc.Count(ctx, o.GeneratedText); err == nil {
				o.OutputTokens = n
			} else {
				o.OutputTokens = estimateTokens(o.GeneratedText)
			}
		}
	}
}

// errNoRate is returned when a sweep cannot derive rates.
var errNoRate = errors.New("the synchronous and throughput passes measured no request rate")

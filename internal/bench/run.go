package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
	Stages         []StageMetrics // an inference-perf load's stages, when it has more than one
	Server         *ServerView    // nil when scraping is off or the server has no /metrics
	Chaos          *ChaosReport   // with Config.Chaos: what misbehaved and whether the server agrees
	Soak           *SoakReport    // with Config.Soak: the server over time
}

// Run runs the benchmark cfg describes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Workload != nil && cfg.Workload.API.Type == "chat" && cfg.Backend == "" {
		cfg.Backend = "openai-chat"
	}
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
	if cfg.Workload != nil {
		if r.plan, err = workload.NewPlan(ctx, cfg.Workload, tc, workload.PlanOptions{Compat: cfg.Compat, Seed: cfg.Seed}); err != nil {
			return nil, err
		}
		cfg.IgnoreEOS, cfg.NumPrompts, cfg.RequestRate = r.plan.IgnoreEOS, r.plan.NumRequests(), r.plan.Rate()
		res.Config = cfg
	} else if r.samples, err = workload.LoadSamples(ctx, cfg.Dataset, cfg.NumPrompts, tc, rng); err != nil {
		return nil, err
	}
	r.st = newStreamer(&cfg)
	if cfg.Chaos != nil {
		if cfg.Sweep {
			return nil, errors.New("check config: --chaos runs one pass, not a --sweep")
		}
		if r.chaos, err = newChaosClient(&cfg); err != nil {
			return nil, err
		}
	}
	if err := r.warmup(ctx); err != nil {
		return nil, err
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
	if err != nil {
		return nil, err
	}
	res.Passes = []*Pass{p}
	return res, nil
}

// runner runs passes over one dataset.
type runner struct {
	cfg     *Config
	st      *streamer
	tc      workload.Tokenizer
	samples []workload.Sample
	plan    *workload.Plan // an inference-perf configuration's, run by every pass
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
	outputs := r.drive(ctx, workload.OpenLoop([]workload.Sample{first}, arr, r.cfg.MaxConcurrency, 0), r.cfg.Now(), newProgress(nil, "", 0, 0, r.cfg.Now))
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
	scr := startScraper(ctx, r.cfg)
	prog := newProgress(r.cfg.Progress, p.Name, plan.NumRequests(), r.cfg.Duration, r.cfg.Now)
	p.Start = r.cfg.Now()
	stopBurst := r.startBurst(ctx, plan)
	outputs := r.drive(ctx, plan, p.Start, prog)
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
			if after, err = settle(ctx, r.cfg); err != nil {
				return nil, fmt.Errorf("run %s pass: read the server after the chaos: %w", p.Name, err)
			}
		}
		p.Chaos = reconcile(scr.first, after, outputs, r.chaos.outs, r.chaos.faults(len(outputs), r.cfg.Seed))
	}
	r.countMissingTokens(ctx, outputs)
	p.Outputs = outputs
	p.measure(r.cfg, dur, plan)
	if p.Metrics.Completed == 0 && len(outputs) > 0 {
		return &p, fmt.Errorf("run %s pass: every request failed, the first with: %s", p.Name, outputs[0].Error)
	}
	return &p, nil
}

// drive runs plan's schedule on the wall clock from start: each request
// goes in its own goroutine when the schedule releases it and reports back
// here, so that stages, sessions and the concurrency cap see every
// completion. It returns the outputs in schedule order once all are in
// (when ctx ends, once those in flight have given up).
func (r *runner) drive(ctx context.Context, plan *workload.Plan, start time.Time, prog *progress) []Output {
	type done struct {
		req workload.Request
		out Output
	}
	var (
		outputs  []Output
		inFlight int
		finished = make(chan done)
		timer    = time.NewTimer(time.Hour)
	)
	defer timer.Stop()
	sch := plan.Start()
	record := func(d done) {
		inFlight--
		if !d.out.Start.IsZero() {
			d.out.QueueTime = d.out.Start.Sub(start.Add(d.req.Due))
		}
		d.out.Stage = d.req.Stage
		outputs[d.req.Index] = d.out
		prog.done(d.out.Success)
		sch.Finished(d.req, r.cfg.Now().Sub(start), d.out.Success, d.out.GeneratedText, nil, d.out.OutputTokens)
	}
	for ctx.Err() == nil {
		ready, next := sch.Poll(r.cfg.Now().Sub(start))
		for _, rq := range ready {
			if rq.Index >= len(outputs) {
				outputs = append(outputs, make([]Output, rq.Index+1-len(outputs))...)
			}
			inFlight++
			go func() { finished <- done{rq, r.send(ctx, rq)} }()
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
	for inFlight > 0 {
		record(<-finished)
	}
	return outputs
}

// send sends one request: as it is, or with its chaos fault.
func (r *runner) send(ctx context.Context, rq workload.Request) Output {
	if r.chaos != nil {
		return r.chaos.do(ctx, rq.Index, r.cfg.Seed, rq.Sample)
	}
	return r.st.do(ctx, rq.Sample)
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
			r.chaos.burst(ctx, r.cfg.Chaos.Burst, plan.Prompts[0])
		case <-ctx.Done():
		}
	})
	return wg.Wait
}

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

package bench

import (
	"context"
	"errors"
	"fmt"
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
	Server         *ServerView // nil when scraping is off or the server has no /metrics
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
	samples, err := workload.LoadSamples(ctx, cfg.Dataset, cfg.NumPrompts, tc, rng)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: &cfg, st: newStreamer(&cfg), tc: tc, samples: samples, rng: rng}
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
	rng     *rand.Rand
}

// warmup sends NumWarmups copies of the first sample, under the same
// concurrency cap, and waits for them; they count nowhere.
func (r *runner) warmup(ctx context.Context) error {
	if r.cfg.NumWarmups == 0 {
		return nil
	}
	sem := newSemaphore(r.cfg.MaxConcurrency)
	var wg sync.WaitGroup
	errs := make([]string, r.cfg.NumWarmups)
	for i := range r.cfg.NumWarmups {
		wg.Go(func() {
			if sem.acquire(ctx) != nil {
				return
			}
			defer sem.release()
			if o := r.st.do(ctx, r.samples[0]); !o.Success {
				errs[i] = o.Error
			}
		})
	}
	wg.Wait()
	if errs[0] != "" && ctx.Err() == nil {
		return fmt.Errorf("warm up: %s", errs[0])
	}
	return ctx.Err()
}

// pass sends one load and measures it. The duration runs from just before
// the first request is sent until the last one has finished.
func (r *runner) pass(ctx context.Context, p Pass) (*Pass, error) {
	n := len(r.samples)
	arr := workload.NewArrivals(n, r.cfg.Duration, p.RequestRate, p.Burstiness, p.Ramp, r.rng)
	scr := startScraper(ctx, r.cfg)
	prog := newProgress(r.cfg.Progress, p.Name, n, r.cfg.Duration, r.cfg.Now)
	sem := newSemaphore(p.MaxConcurrency)
	var (
		mu      sync.Mutex
		outputs []Output
		wg      sync.WaitGroup
	)
	p.Start = r.cfg.Now()
	timer := time.NewTimer(0)
	<-timer.C
	for i := 0; ; i++ {
		off, ok := arr.Next()
		if !ok {
			break
		}
		if wait := off - r.cfg.Now().Sub(p.Start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		outputs = append(outputs, Output{})
		mu.Unlock()
		sm := r.samples[i%n]
		wg.Go(func() {
			arrived := r.cfg.Now()
			if sem.acquire(ctx) != nil {
				store(&mu, &outputs, i, Output{Error: "canceled while waiting for a concurrency slot"})
				return
			}
			o := r.st.do(ctx, sm)
			sem.release()
			if !o.Start.IsZero() {
				o.QueueTime = o.Start.Sub(arrived)
			}
			store(&mu, &outputs, i, o)
			prog.done(o.Success)
		})
	}
	wg.Wait()
	dur := r.cfg.Now().Sub(p.Start)
	prog.finish()
	p.Server = scr.stop(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run %s pass: %w", p.Name, err)
	}
	r.countMissingTokens(ctx, outputs)
	p.Outputs = outputs
	p.Metrics = calculate(outputs, dur, r.cfg.Percentiles, r.cfg.Goodput, p.MaxConcurrency)
	if p.Metrics.Completed == 0 && len(outputs) > 0 {
		return &p, fmt.Errorf("run %s pass: every request failed, the first with: %s", p.Name, outputs[0].Error)
	}
	return &p, nil
}

// store writes output i; the slice may have grown (and moved) meanwhile, so
// it is read again under the lock.
func store(mu *sync.Mutex, outputs *[]Output, i int, o Output) {
	mu.Lock()
	(*outputs)[i] = o
	mu.Unlock()
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

// semaphore is the client-side --max-concurrency cap; nil means none.
type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n <= 0 {
		return nil
	}
	return make(semaphore, n)
}

func (s semaphore) acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s semaphore) release() {
	if s != nil {
		<-s
	}
}

// errNoRate is returned when a sweep cannot derive rates.
var errNoRate = errors.New("the synchronous and throughput passes measured no request rate")

// Package plan is glassbox plan, a capacity planner: for every server
// configuration of a grid (GPU, tensor parallelism, max-num-seqs, and for
// fleets the replicas and the router) it finds in virtual time the highest
// request rate one replica, or the fleet, sustains within the SLOs
// (bisection, as Vidur-Search does), then the replicas a target rate needs
// (estimated from one replica's rate, or simulated: the fewest that meet
// the SLOs at it) and what they cost, the doctor's reading of what limits
// the replica just above that rate, the Pareto front of cost against
// capacity, and the command lines that would serve the winner.
package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/source"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Load builds the workload sent at rate requests per second for duration.
type Load func(ctx context.Context, rate float64, duration time.Duration) (*workload.Plan, error)

// Config is one search.
type Config struct {
	// Base is the server every configuration starts from (the engine
	// flags given once); the grid overrides its hardware, tensor
	// parallelism and max-num-seqs.
	Base       replica.Config
	Hardware   []string
	TP         []int
	MaxNumSeqs []int

	Load Load
	SLOs []SLO
	// Prices are dollars per GPU-hour by hardware; a configuration
	// without one has no cost columns.
	Prices     map[string]float64
	TargetRate float64 // requests per second the fleet must serve; 0: price one replica

	// Fleets, when set, are the fleet sizes searched: each row's rate is
	// the fleet's, behind each of Routers (nil: round robin). FitReplicas,
	// with a TargetRate, instead finds per configuration and router the
	// fewest replicas (up to MaxReplicas, default 64) that meet the SLOs
	// at the target, simulated rather than scaled from one replica's rate.
	Fleets      []int
	Routers     []router.Config
	FitReplicas bool
	MaxReplicas int
	// Fleet sets the rest of each trial's fleet (the picker's refresh);
	// nil leaves simulate's defaults.
	Fleet func(*simulate.Config)

	Duration  time.Duration // virtual time each trial sends for; default 2 minutes
	MaxRate   float64       // the search's ceiling; default 2000 requests per second
	Precision float64       // stop when the bracket is this narrow, relative; default 0.025 (Vidur's)
	Workers   int           // configurations searched at once; default GOMAXPROCS
	Progress  func(done, total int)
	// Thresholds are the doctor's, for what it finds past a row's limit;
	// zero: the defaults.
	Thresholds doctor.Thresholds
}

// SLO is one objective: a percentile of a latency at most a limit.
type SLO struct {
	Metric     string // ttft, tpot, itl or e2el
	Percentile float64
	Limit      time.Duration
}

func (s SLO) String() string {
	return fmt.Sprintf("%s:p%s<=%s", s.Metric, strconv.FormatFloat(s.Percentile, 'f', -1, 64), s.Limit)
}

// ParseSLOs reads "ttft:p99<=500ms,tpot:p99<=50ms".
func ParseSLOs(s string) ([]SLO, error) {
	var out []SLO
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		metric, rest, ok1 := strings.Cut(part, ":")
		pct, limit, ok2 := strings.Cut(rest, "<=")
		if !ok1 || !ok2 || !strings.HasPrefix(pct, "p") {
			return nil, fmt.Errorf("parse SLO %q: want METRIC:pNN<=DURATION, e.g. ttft:p99<=500ms", part)
		}
		if !slices.Contains([]string{"ttft", "tpot", "itl", "e2el"}, metric) {
			return nil, fmt.Errorf("parse SLO %q: the metric must be ttft, tpot, itl or e2el", part)
		}
		p, err := strconv.ParseFloat(pct[1:], 64)
		if err != nil || !(p > 0 && p <= 100) {
			return nil, fmt.Errorf("parse SLO %q: the percentile must be in (0, 100]", part)
		}
		d, err := time.ParseDuration(limit)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("parse SLO %q: the limit must be a positive duration, e.g. 50ms", part)
		}
		out = append(out, SLO{Metric: metric, Percentile: p, Limit: d})
	}
	if len(out) == 0 {
		return nil, errors.New("parse SLOs: none given")
	}
	return out, nil
}

// Row is one configuration's outcome.
type Row struct {
	Hardware   string
	TP         int
	MaxNumSeqs int
	Fleet      int    // replicas the search simulated: 1, or one of Config.Fleets
	Router     string // the router's policy ("" for one replica)
	router     router.Config

	MaxRate          float64   // requests per second one replica sustains within the SLOs; 0 when none
	OutputTokensPerS float64   // at MaxRate
	AtMax            []float64 // each SLO's value at MaxRate, in its order (ms)
	Limit            string    // what broke just above MaxRate: the SLOs missed and the doctor's finding
	Trials           int

	Price          float64 // per GPU-hour; 0 unknown
	Replicas, GPUs int     // for the target rate (one replica without one), or the fleet's
	Fitted         bool    // Replicas was simulated at the target rate (FitReplicas)
	Short          bool    // the fleet falls short of the target rate
	DollarsPerHour float64 // the fleet's
	DollarsPerMTok float64 // per million output tokens at MaxRate
	Pareto         bool    // no other row has at least its capacity for at most its cost

	Err       string
	ServeArgs []string // glassbox serve's flags
	VLLMArgs  []string // vllm serve's
}

// Result is every row, and the best one (-1 when none met the SLOs).
type Result struct {
	Rows []Row
	Best int
}

func (c *Config) defaults() error {
	if c.Load == nil || len(c.SLOs) == 0 {
		return errors.New("plan: a load and at least one SLO are required")
	}
	if len(c.Hardware) == 0 || len(c.TP) == 0 || len(c.MaxNumSeqs) == 0 {
		return errors.New("plan: the grid needs at least one hardware, tensor-parallel size and max-num-seqs")
	}
	if c.Duration == 0 {
		c.Duration = 2 * time.Minute
	}
	if c.Thresholds == (doctor.Thresholds{}) {
		c.Thresholds = doctor.DefaultThresholds()
	}
	if c.MaxRate == 0 {
		c.MaxRate = 2000
	}
	if c.Precision == 0 {
		c.Precision = 0.025
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.MaxReplicas == 0 {
		c.MaxReplicas = 64
	}
	switch {
	case c.FitReplicas && c.TargetRate <= 0:
		return errors.New("plan: fitting the replicas needs a target rate")
	case c.FitReplicas && len(c.Fleets) > 0:
		return errors.New("plan: give fleet sizes or fit them, not both")
	}
	for _, n := range c.Fleets {
		if n < 1 {
			return errors.New("plan: fleet sizes must be at least 1")
		}
	}
	return nil
}

// routers are the routers searched: one replica needs none.
func (c *Config) routers() []router.Config {
	if len(c.Routers) == 0 {
		return []router.Config{{Policy: router.RoundRobin}}
	}
	return c.Routers
}

// fleets are the fleet sizes searched.
func (c *Config) fleets() []int {
	if len(c.Fleets) == 0 {
		return []int{1}
	}
	return c.Fleets
}

// fleetMode says the rows are fleets (or fitted ones) behind routers.
func (c *Config) fleetMode() bool { return len(c.Fleets) > 0 || c.FitReplicas || len(c.Routers) > 0 }

// Run searches every configuration of the grid.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	var rows []Row
	for _, hw := range cfg.Hardware {
		for _, tp := range cfg.TP {
			for _, seqs := range cfg.MaxNumSeqs {
				for _, n := range cfg.fleets() {
					for _, rt := range cfg.routers() {
						row := Row{Hardware: hw, TP: tp, MaxNumSeqs: seqs, Fleet: n}
						if cfg.fleetMode() {
							row.Router, row.router = rt.Policy, rt
						}
						rows = append(rows, row)
						if !cfg.fleetMode() {
							break
						}
					}
				}
			}
		}
	}
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
		sem  = make(chan struct{}, cfg.Workers)
	)
	for i := range rows {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			search(ctx, &cfg, &rows[i])
			mu.Lock()
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, len(rows))
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{Rows: rows, Best: -1}
	res.price(&cfg)
	return res, nil
}

// maxTrialRequests bounds one trial's memory (every request's token times).
const maxTrialRequests = 40000

// trial is one simulated run at one rate.
type trial struct {
	rate   float64
	meets  bool
	values []float64 // each SLO's, ms
	missed []string
	tokens float64        // output tokens per second
	window *doctor.Window // the replica's metrics over the run, for the doctor
}

// search brackets the highest rate meeting the SLOs: doubling up from one
// request per second (or halving down) until it brackets, then bisecting to
// the precision.
func search(ctx context.Context, cfg *Config, r *Row) {
	rc := cfg.Base
	rc.Sim.Hardware, rc.Sim.TensorParallel, rc.MaxNumSeqs = r.Hardware, r.TP, r.MaxNumSeqs
	r.ServeArgs, r.VLLMArgs = commandLines(rc)
	run := func(rate float64) (*trial, error) {
		r.Trials++
		return runFleetTrial(ctx, cfg, rc, r.Fleet, r.router, rate)
	}
	var lo, hi *trial
	t, err := run(1)
	if err != nil {
		r.Err = err.Error()
		return
	}
	if t.meets {
		lo = t
		for lo.rate < cfg.MaxRate {
			if t, err = run(min(2*lo.rate, cfg.MaxRate)); err != nil {
				r.Err = err.Error()
				return
			}
			if !t.meets {
				hi = t
				break
			}
			lo = t
		}
	} else {
		hi = t
		for hi.rate > 1.0/64 {
			if t, err = run(hi.rate / 2); err != nil {
				r.Err = err.Error()
				return
			}
			if t.meets {
				lo = t
				break
			}
			hi = t
		}
	}
	for lo != nil && hi != nil && (hi.rate-lo.rate)/hi.rate > cfg.Precision && ctx.Err() == nil {
		if t, err = run((lo.rate + hi.rate) / 2); err != nil {
			r.Err = err.Error()
			return
		}
		if t.meets {
			lo = t
		} else {
			hi = t
		}
	}
	if lo != nil {
		r.MaxRate, r.OutputTokensPerS, r.AtMax = lo.rate, lo.tokens, lo.values
		if cfg.FitReplicas {
			fitReplicas(ctx, cfg, rc, r)
		}
	}
	if hi == nil {
		r.Limit = fmt.Sprintf("meets the SLOs at the search's ceiling of %g requests/s", cfg.MaxRate)
		return
	}
	r.Limit = fmt.Sprintf("at %.3g req/s: %s", hi.rate, strings.Join(hi.missed, ", "))
	// Just over the limit the server is barely stressed; the doctor reads
	// it pushed half as far again, where what gives out shows.
	push := hi
	if lo != nil {
		if t, err := run(1.5 * lo.rate); err == nil {
			push = t
		}
	}
	if len(push.window.Snapshots) < 2 {
		return
	}
	// Only this trial is diagnosed: the search reads the clients' latencies.
	if rep := doctor.NewDiagnoser(cfg.Thresholds, doctor.Hints{}).Diagnose(push.window, nil); len(rep.Findings) > 0 {
		f := rep.Findings[0]
		r.Limit += fmt.Sprintf("; at %.3g req/s the doctor finds %s: %s", push.rate, f.Name, f.Title)
	}
}

// runTrial simulates one replica at one rate.
func runTrial(ctx context.Context, cfg *Config, rc replica.Config, rate float64) (*trial, error) {
	return runFleetTrial(ctx, cfg, rc, 1, router.Config{}, rate)
}

// runFleetTrial simulates a fleet of n replicas behind rt at one rate and
// judges it, keeping the metrics of its busiest replica over the run for
// the doctor.
func runFleetTrial(ctx context.Context, cfg *Config, rc replica.Config, n int, rt router.Config, rate float64) (*trial, error) {
	// At high rates a shorter trial holds as many requests: at most
	// maxTrialRequests, for at least a fifth of the duration asked.
	d := cfg.Duration
	if n := rate * d.Seconds(); n > maxTrialRequests {
		d = max(cfg.Duration/5, time.Duration(maxTrialRequests/rate*float64(time.Second)))
	}
	p, err := cfg.Load(ctx, rate, d)
	if err != nil {
		return nil, err
	}
	ws := map[int]*doctor.Window{}
	var obsErr error
	sc := simulate.Config{Replica: rc, Plan: p, Replicas: n, Router: rt, ObserveInterval: 5 * time.Second,
		Observe: func(at time.Time, in simulate.Instance) {
			mfs, err := in.Gatherer.Gather()
			if err != nil && obsErr == nil {
				obsErr = err
			}
			if ws[in.Index] == nil {
				ws[in.Index] = doctor.NewWindow("simulate", "virtual replica "+in.Name)
			}
			source.Append(ws[in.Index], at, promtext.FromFamilies(mfs))
		}}
	if cfg.Fleet != nil && n > 1 {
		cfg.Fleet(&sc)
	}
	res, err := simulate.Run(ctx, sc)
	if err != nil {
		return nil, err
	}
	if obsErr != nil {
		return nil, obsErr
	}
	w := busiest(ws)
	pcts := []float64{}
	for _, s := range cfg.SLOs {
		pcts = append(pcts, s.Percentile)
	}
	out, err := bench.Offline(bench.Config{PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: pcts}, rc.Sim.Model, "",
		bench.Pass{Outputs: res.Outputs}, res.Duration, p)
	if err != nil {
		return nil, err
	}
	m := out.Passes[0].Metrics
	t := &trial{rate: rate, meets: m.Failed == 0 && m.Completed > 0, tokens: m.OutputThroughput, window: w}
	if m.Failed > 0 {
		t.missed = append(t.missed, fmt.Sprintf("%d of %d requests failed", m.Failed, m.Failed+m.Completed))
	}
	for _, s := range cfg.SLOs {
		v := math.NaN()
		for _, pc := range m.Dists[s.Metric].Percentiles {
			if pc.P == s.Percentile {
				v = pc.Value
			}
		}
		t.values = append(t.values, v)
		if !(v <= float64(s.Limit)/float64(time.Millisecond)) {
			t.meets = false
			t.missed = append(t.missed, fmt.Sprintf("%s p%s %.0f ms > %s", s.Metric, strconv.FormatFloat(s.Percentile, 'f', -1, 64), v, s.Limit))
		}
	}
	return t, nil
}

// commandLines are the serve commands of a configuration.
func commandLines(rc replica.Config) (glassbox, vllm []string) {
	itoa := strconv.Itoa
	glassbox = []string{"glassbox", "serve", "--sim-hardware", rc.Sim.Hardware, "--sim-model", rc.Sim.Model,
		"--tensor-parallel-size", itoa(rc.Sim.TensorParallel), "--max-num-seqs", itoa(rc.MaxNumSeqs)}
	model := rc.Sim.Model
	if m, err := profiles.LookupModel(rc.Sim.Model); err == nil && len(m.HF) > 0 {
		model = m.HF[0]
	} else if filepath.Base(model) == "config.json" {
		model = filepath.Dir(model) // vLLM serves the checkpoint's directory
	}
	vllm = []string{"vllm", "serve", model, "--tensor-parallel-size", itoa(rc.Sim.TensorParallel), "--max-num-seqs", itoa(rc.MaxNumSeqs)}
	if rc.MaxNumBatchedTokens > 0 {
		glassbox = append(glassbox, "--max-num-batched-tokens", itoa(rc.MaxNumBatchedTokens))
		vllm = append(vllm, "--max-num-batched-tokens", itoa(rc.MaxNumBatchedTokens))
	}
	if rc.MaxModelLen > 0 {
		glassbox = append(glassbox, "--max-model-len", itoa(rc.MaxModelLen))
		vllm = append(vllm, "--max-model-len", itoa(rc.MaxModelLen))
	}
	if rc.GPUMemoryUtilization > 0 {
		g := strconv.FormatFloat(rc.GPUMemoryUtilization, 'f', -1, 64)
		glassbox = append(glassbox, "--gpu-memory-utilization", g)
		vllm = append(vllm, "--gpu-memory-utilization", g)
	}
	if rc.Sim.ExpertParallel {
		glassbox = append(glassbox, "--enable-expert-parallel")
		vllm = append(vllm, "--enable-expert-parallel")
	}
	if rc.NoPrefixCaching {
		glassbox = append(glassbox, "--no-enable-prefix-caching")
		vllm = append(vllm, "--no-enable-prefix-caching")
	}
	return glassbox, vllm
}

// price sizes the fleets, costs them, marks the Pareto front and picks the
// best: the cheapest fleet for the target rate, else the cheapest
// million output tokens, else (no prices) the most requests per GPU.
func (res *Result) price(cfg *Config) {
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.MaxRate <= 0 {
			continue
		}
		switch {
		case r.Fitted:
		case len(cfg.Fleets) > 0: // the row is the fleet
			r.Replicas = r.Fleet
			r.Short = cfg.TargetRate > 0 && r.MaxRate < cfg.TargetRate
		default:
			r.Replicas = 1
			if cfg.TargetRate > 0 {
				r.Replicas = int(math.Ceil(cfg.TargetRate / r.MaxRate * (1 - 1e-9)))
			}
		}
		r.GPUs = r.Replicas * r.TP
		if p, ok := cfg.Prices[r.Hardware]; ok {
			r.Price = p
			r.DollarsPerHour = float64(r.GPUs) * p
			if r.OutputTokensPerS > 0 {
				r.DollarsPerMTok = float64(r.Fleet*r.TP) * p / (r.OutputTokensPerS * 3600) * 1e6
			}
		}
	}
	cost := func(r *Row) float64 { // of what the search simulated: a replica or the fleet
		if r.Price > 0 {
			return float64(r.Fleet*r.TP) * r.Price
		}
		return float64(r.Fleet * r.TP)
	}
	for i := range res.Rows {
		a := &res.Rows[i]
		if a.MaxRate <= 0 {
			continue
		}
		a.Pareto = true
		for j := range res.Rows {
			b := &res.Rows[j]
			if i != j && b.MaxRate > 0 && b.MaxRate >= a.MaxRate && cost(b) <= cost(a) && (b.MaxRate > a.MaxRate || cost(b) < cost(a)) {
				a.Pareto = false
				break
			}
		}
	}
	better := func(a, b *Row) bool {
		switch {
		case a.Short != b.Short:
			return b.Short
		case cfg.TargetRate > 0 && a.DollarsPerHour > 0 && b.DollarsPerHour > 0:
			return a.DollarsPerHour < b.DollarsPerHour || a.DollarsPerHour == b.DollarsPerHour && a.GPUs < b.GPUs
		case a.DollarsPerMTok > 0 && b.DollarsPerMTok > 0:
			return a.DollarsPerMTok < b.DollarsPerMTok
		}
		return a.MaxRate/float64(a.Fleet*a.TP) > b.MaxRate/float64(b.Fleet*b.TP)
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.MaxRate > 0 && (res.Best < 0 || better(r, &res.Rows[res.Best])) {
			res.Best = i
		}
	}
}

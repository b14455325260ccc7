package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/plan"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// runPlan runs 'glassbox plan': serve's engine flags (with lists for
// --sim-hardware, --tensor-parallel-size and --max-num-seqs) and bench's
// load flags, searched in virtual time.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var ef engineFlags
	var lf loadFlags
	var ff fleetFlags
	var th thresholdFlags // the doctor's, for what limits each row above its rate
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef.register(fs)
	lf.register(fs)
	ff.register(fs, false)
	th.register(fs)
	replicas := fs.String("replicas", "", "fleet sizes to search, e.g. 2,4,8 (each row's rate is the fleet's), or auto with --target-rate: the fewest replicas meeting the SLOs there, simulated; empty: one replica, the fleet scaled from its rate")
	routers := fs.String("router", "", "the routers in front of the fleets, e.g. round-robin,endpoint-picker (default round-robin)")
	slo := fs.String("slo", "", "the SLOs every configuration must meet, e.g. ttft:p99<=500ms,tpot:p99<=50ms")
	prices := fs.String("price", "", "dollars per GPU-hour, e.g. h100=2.5/h,h200=3.6/h (without one a configuration has no cost)")
	target := fs.Float64("target-rate", 0, "requests per second the fleet must serve: replicas and the fleet's cost")
	trial := fs.Duration("trial-duration", 2*time.Minute, "virtual time each trial of the search sends its load for")
	maxRate := fs.Float64("max-rate", 2000, "the search's ceiling, requests per second")
	specSweep := fs.String("speculation-sweep", "", "request rates, e.g. 2,10,40,80: instead of searching, run one replica at each with --speculative-config and without, and say where speculation stops paying")
	if err := fs.Parse(spaceLists(joinGoodput(args), "lora-modules")); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("plan: unexpected argument %q", fs.Arg(0))
	}
	ef.visited(fs)
	lf.loadVisited(fs)
	ff.visited(fs)
	if err := lf.resolve(); err != nil {
		return err
	}
	lf.printNotes(stderr)
	cfg := plan.Config{TargetRate: *target, Duration: *trial, MaxRate: *maxRate}
	var err error
	if *specSweep != "" {
		// The sweep compares one replica's token times with and without
		// speculation: the search's flags would do nothing.
		var unused []string
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "slo", "replicas", "router", "target-rate", "price", "max-rate", "threshold", "thresholds":
				unused = append(unused, "--"+fl.Name)
			}
		})
		if len(unused) > 0 {
			return fmt.Errorf("plan: --speculation-sweep compares one replica with and without speculation; %s would do nothing beside it", strings.Join(unused, ", "))
		}
	}
	if *specSweep == "" { // the sweep compares token times, with no SLO
		if cfg.SLOs, err = plan.ParseSLOs(*slo); err != nil {
			return fmt.Errorf("--slo: %w", err)
		}
	}
	if cfg.Prices, err = parsePrices(*prices); err != nil {
		return err
	}
	if cfg.Thresholds, err = th.thresholds(); err != nil {
		return err
	}
	for _, hw := range strings.Split(ef.simHardware, ",") {
		cfg.Hardware = append(cfg.Hardware, strings.ToLower(strings.TrimSpace(hw))) // as --price names them
	}
	if cfg.TP, err = countList(ef.tensorParallel, 1); err != nil {
		return fmt.Errorf("--tensor-parallel-size: %w", err)
	}
	if cfg.MaxNumSeqs, err = countList(ef.maxNumSeqs, 256); err != nil {
		return fmt.Errorf("--max-num-seqs: %w", err)
	}
	ef.simHardware, ef.tensorParallel, ef.maxNumSeqs = cfg.Hardware[0], strconv.Itoa(cfg.TP[0]), strconv.Itoa(cfg.MaxNumSeqs[0])
	if cfg.Base, err = ef.replicaConfig(); err != nil {
		return err
	}
	if cfg.Load, err = planLoad(&lf); err != nil {
		return err
	}
	if *specSweep != "" {
		return planSpeculation(ctx, cfg, *specSweep, stdout)
	}
	if err := planFleet(&cfg, &ff, *replicas, *routers, lf.cfg.Seed); err != nil {
		return err
	}
	if isTerminal(stderr) && os.Getenv("CI") != "true" {
		start := time.Now()
		cfg.Progress = func(done, total int) {
			const width = 30
			n := done * width / total
			fmt.Fprintf(stderr, "\rplan [%s%s] %d/%d configurations, %s", strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total,
				time.Since(start).Round(100*time.Millisecond))
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	res, err := plan.Run(ctx, cfg)
	if err != nil {
		return err
	}
	what := "per replica"
	if len(cfg.Fleets) > 0 {
		what = "per fleet"
	}
	fmt.Fprintf(stdout, "Highest rate %s within %s, searched in %s of virtual time per trial:\n\n", what, *slo, trial.String())
	res.WriteTable(stdout, &cfg)
	return nil
}

// planLoad turns the load flags into the planner's load at any rate: an
// inference-perf configuration's data at one stage of that rate (its own
// stages and sweep are the planner's to choose; a trace replays its times
// scaled to the rate; no client caps the requests in flight), or bench's
// dataset as a Poisson load.
func planLoad(lf *loadFlags) (plan.Load, error) {
	tk := simulate.Tokenizer()
	c := lf.cfg
	if w := lf.workload; w != nil {
		if w.Load.Type == "trace_session_replay" {
			return nil, errors.New("plan: --config's load type trace_session_replay replays recorded sessions at their own pace, and plan searches a request rate: run it with bench or simulate")
		}
		o := lf.planOptions
		o.Seed, o.NoClientCap = c.Seed, true
		return func(ctx context.Context, rate float64, d time.Duration) (*workload.Plan, error) {
			one := *w
			one.Load.Sweep = nil
			one.Load.Stages = []inferenceperf.Stage{{Rate: rate, Duration: d.Seconds()}}
			switch one.Load.Type {
			case "concurrent":
				one.Load.Type = "constant"
			case "trace_replay":
				p, err := inferenceperf.NewPlan(ctx, &one, tk, o)
				if err != nil {
					return nil, err
				}
				return p.Rescaled(rate, d), nil
			}
			return inferenceperf.NewPlan(ctx, &one, tk, o)
		}, nil
	}
	c, err := c.ClientDefaults() // bench's checks and defaults (burstiness 1)
	if err != nil {
		return nil, err
	}
	if c.Dataset.Name == "trace" {
		format, _ := workload.TraceFormatOf(c.Dataset.Path)
		trace, err := workload.ReadTrace(c.Dataset.Path, format)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, rate float64, d time.Duration) (*workload.Plan, error) {
			p, err := workload.TracePlan(ctx, trace, tk, c.NumPrompts, 0, c.Seed)
			if err != nil {
				return nil, err
			}
			return p.Rescaled(rate, d), nil
		}, nil
	}
	var (
		once    sync.Once
		samples []workload.Sample
	)
	burst := c.Burstiness
	return func(ctx context.Context, rate float64, d time.Duration) (*workload.Plan, error) {
		once.Do(func() {
			samples, err = workload.LoadSamples(ctx, c.Dataset, max(c.NumPrompts, 1), tk, rand.New(rand.NewPCG(uint64(c.Seed), 1)))
		})
		if err != nil {
			return nil, err
		}
		arr := workload.NewArrivals(len(samples), d, rate, burst, nil, rand.New(rand.NewPCG(uint64(c.Seed), 2)))
		return workload.OpenLoop(samples, arr, c.MaxConcurrency, d), nil
	}, nil
}

// planSpeculation is plan --speculation-sweep: one replica of the first
// configuration at each rate, with its --speculative-config and without.
func planSpeculation(ctx context.Context, cfg plan.Config, rates string, stdout io.Writer) error {
	var rs []float64
	for _, f := range strings.Split(rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) {
			return fmt.Errorf("--speculation-sweep: %q is not a positive request rate", f)
		}
		rs = append(rs, r)
	}
	pts, err := plan.SpeculationSweep(ctx, cfg, rs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "One %s replica of %s, %s of virtual time per rate, with --speculative-config and without:\n\n", cfg.Base.Sim.Hardware, cfg.Base.Sim.Model, cfg.Duration)
	plan.WriteSpecTable(stdout, pts)
	return nil
}

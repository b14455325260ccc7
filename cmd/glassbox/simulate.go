package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// simulateFlags are simulate's command line: serve's engine flags and
// bench's load flags, so that a simulated run is the pair of commands that
// would run it for real.
type simulateFlags struct {
	engineFlags
	loadFlags
	fleet           fleetFlags
	replay          string
	metricsOut      string
	metricsInterval time.Duration
	metricsInstance string
	requestTimeout  time.Duration
}

func parseSimulateFlags(args []string, stderr io.Writer) (*simulateFlags, error) {
	f := &simulateFlags{}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.engineFlags.register(fs)
	f.loadFlags.register(fs)
	f.fleet.register(fs, true)
	fs.StringVar(&f.replay, "replay", "", "replay a 'glassbox bench --save-detailed' result's requests, or a request trace (Azure LLM inference CSV, 2023 or 2024, or BurstGPT's), at their send times with their token counts, instead of a generated load")
	fs.StringVar(&f.metricsOut, "metrics-out", "", "write the run's /metrics over virtual time here, as OpenMetrics for 'promtool tsdb create-blocks-from openmetrics'")
	fs.DurationVar(&f.metricsInterval, "metrics-interval", 15*time.Second, "virtual time between two readings of --metrics-out")
	fs.StringVar(&f.metricsInstance, "metrics-instance", simulate.DefaultInstance, "the instance label of --metrics-out's series (runs with different ones load into one Prometheus as a fleet)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 0, "each client's limit, as bench's: a request not answered by then is given up and the engine aborts it (0: none)")
	if err := fs.Parse(spaceLists(joinGoodput(args), "lora-modules")); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("simulate: unexpected argument %q", fs.Arg(0))
	}
	f.engineFlags.visited(fs)
	f.loadVisited(fs)
	f.fleet.visited(fs)
	if f.metricsInterval <= 0 {
		return nil, errors.New("--metrics-interval must be positive")
	}
	if strings.TrimSpace(f.metricsInstance) == "" {
		return nil, errors.New("--metrics-instance must not be empty")
	}
	if f.requestTimeout < 0 {
		return nil, errors.New("--request-timeout must not be negative")
	}
	return f, f.loadFlags.resolve()
}

// runSimulate runs 'glassbox simulate'.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "calibrate" {
		return runCalibrate(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "step" {
		return runSimulateStep(args[1:], stdout, stderr)
	}
	f, err := parseSimulateFlags(args, stderr)
	if err != nil {
		return err
	}
	f.printNotes(stderr)
	rc, err := f.replicaConfig()
	if err != nil {
		return err
	}
	rc.Version = version
	plan, err := f.plan(ctx)
	if err != nil {
		return err
	}
	cfg := simulate.Config{Replica: rc, Plan: plan, RequestTimeout: f.requestTimeout}
	if err := f.fleet.apply(&cfg, f.cfg.Seed); err != nil {
		return err
	}
	if f.metricsOut != "" {
		cfg.Series = simulate.NewSeries(f.metricsInterval)
		cfg.Series.Instance = f.metricsInstance
	}
	var readings []bench.Snapshot
	if f.workload != nil || f.cfg.Agent != nil {
		// The server's metrics each virtual second, as bench scrapes them,
		// for the server view (what explains an agent run's per-turn
		// figures) and inference-perf's Prometheus report.
		cfg.ObserveInterval = time.Second
		// A fleet's first replica stands for the server (its members
		// are in the summary's fleet table).
		cfg.Observe = func(at time.Time, in simulate.Instance) {
			if in.Index != 0 {
				return
			}
			if mfs, err := in.Gatherer.Gather(); err == nil {
				readings = append(readings, bench.Snapshot{At: at, Scrape: promtext.FromFamilies(mfs)})
			}
		}
	}
	res, err := simulate.Run(ctx, cfg)
	if err != nil {
		return err
	}
	load := f.cfg
	if load.Label == "" {
		load.Label = "glassbox-simulate"
	}
	name := rc.Sim.Model
	if len(rc.ServedModelNames) > 0 {
		name = rc.ServedModelNames[0]
	}
	if f.workload != nil || f.replay != "" {
		load.RequestRate, load.NumPrompts = workload.StagesRate(res.Stages), staged(res.Outputs)
	} else if f.cfg.Agent != nil {
		load.NumPrompts = staged(res.Outputs) // the turns sent, as bench counts them
	}
	out, err := bench.Offline(load, name, "glassbox-sim", bench.Pass{Name: "main", RequestRate: load.RequestRate, Burstiness: load.Burstiness,
		MaxConcurrency: load.MaxConcurrency, Ramp: load.Ramp, Start: res.Start, Outputs: res.Outputs, Schedule: res.Stages, Saturation: res.Saturation,
		Server: bench.NewServerView(readings, f.cfg.Percentiles)},
		res.Duration, plan)
	if err != nil {
		return err
	}
	out.WriteSummary(stdout)
	fleet := ""
	if len(res.Replicas) != 1 || cfg.Autoscaler != nil {
		fleet = fmt.Sprintf("%d replicas (%s) of ", len(res.Replicas), cfg.Router.Policy)
	}
	fmt.Fprintf(stdout, "Simulated %s of %s%s on %d× %s in %s (%.0f× real time, %d engine steps)\n", res.Duration.Round(time.Millisecond),
		fleet, rc.Sim.Model, max(rc.Sim.TensorParallel, 1), rc.Sim.Hardware, res.Wall.Round(time.Millisecond), res.Speedup(), res.Steps)
	if fleet != "" {
		writeFleet(stdout, res)
	}
	if err := f.write(out, stdout); err != nil {
		return err
	}
	if cfg.Series != nil {
		fh, err := os.Create(f.metricsOut)
		if err != nil {
			return fmt.Errorf("--metrics-out: %w", err)
		}
		if err := errors.Join(cfg.Series.WriteOpenMetrics(fh), fh.Close()); err != nil {
			return fmt.Errorf("--metrics-out: %w", err)
		}
		inst := fmt.Sprintf("instance=%q", res.Replicas[0].Instance)
		if len(res.Replicas) > 1 {
			inst = fmt.Sprintf("an instance per replica, %s to %s", res.Replicas[0].Instance, res.Replicas[len(res.Replicas)-1].Instance)
		}
		fmt.Fprintf(stdout, "Metrics over virtual time (the engine's as job=%q, its GPU's dcgm-exporter as job=%q, %s) written to %s (%d points; load them with: promtool tsdb create-blocks-from openmetrics %s DATA-DIR)\n",
			simulate.JobEngine, simulate.JobDCGM, inst, f.metricsOut, cfg.Series.Samples(), f.metricsOut)
	}
	return nil
}

// plan is the load the flags describe: a replay, an inference-perf
// configuration, or bench's dataset and arrival flags.
func (f *simulateFlags) plan(ctx context.Context) (*workload.Plan, error) {
	tk := simulate.Tokenizer()
	c := &f.cfg
	if c.Dataset.Name == "trace" && f.replay == "" && f.workload == nil {
		f.replay = c.Dataset.Path // bench's trace dataset is simulate's replay
		f.numPromptsSet = true
	}
	switch {
	case f.replay != "":
		if format, ok := workload.TraceFormatOf(f.replay); ok {
			entries, err := workload.ReadTrace(f.replay, format)
			if err != nil {
				return nil, fmt.Errorf("--replay: %w", err)
			}
			return workload.TracePlan(ctx, entries, tk, f.replayCount(), c.RequestRate, c.Seed)
		}
		fh, err := os.Open(f.replay)
		if err != nil {
			return nil, fmt.Errorf("--replay: %w", err)
		}
		defer fh.Close()
		return workload.ReplayPlan(ctx, fh, tk, c.Seed)
	case f.workload != nil:
		return c.Plan(ctx, tk, c.Seed)
	}
	lc, err := c.ClientDefaults() // bench's checks, before the run rather than after it
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x9e3779b97f4a7c15))
	if lc.Agent != nil {
		return lc.AgentPlan(ctx, tk, rng)
	}
	samples, err := workload.LoadSamples(ctx, c.Dataset, lc.NumPrompts, tk, rng)
	if err != nil {
		return nil, err
	}
	arr := workload.NewArrivals(len(samples), c.Duration, lc.RequestRate, lc.Burstiness, c.Ramp, rng)
	return workload.OpenLoop(samples, arr, c.MaxConcurrency, c.Duration), nil
}

// staged counts the requests a result measured (a sweep's probe aside).
func staged(outs []bench.Output) int {
	n := 0
	for _, o := range outs {
		if o.Stage >= 0 {
			n++
		}
	}
	return n
}

// replayCount is how many of a trace's requests --replay sends: all,
// unless --num-prompts was given.
func (f *simulateFlags) replayCount() int {
	if f.numPromptsSet {
		return f.cfg.NumPrompts
	}
	return 0
}

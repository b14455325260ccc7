// Package simulate runs glassbox's own engine, scheduler, KV cache and
// metrics over the simulated GPU in virtual time: glassbox simulate. A
// workload's requests are sent on a virtual clock, every engine step moves
// the clock on by the step's simulated cost, and each request is measured
// as a client of vLLM's API server would measure it, the server's frontend
// (HTTP, tokenisation, streaming) modelled by the hardware profile's
// Frontend. A twenty-minute run takes seconds.
//
// A fleet is many such replicas, each with its own engine, clock, KV cache
// and metrics, behind a router (internal/router) and optionally an
// autoscaler (internal/autoscaler); one global event loop always steps the
// replica whose next step starts earliest and handles the clients', the
// router's and the autoscaler's events at the step boundaries.
//
// It assembles its replicas through internal/replica, as serve does, and
// drives each engine with Advance instead of Run; it serves nothing and
// reads no flags or environment.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/autoscaler"
	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Epoch is where the virtual clock starts unless told otherwise.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is one simulated run.
type Config struct {
	// Replica is the server as serve would build it from the same flags;
	// it must be the simulator (no Model). Clock, the time scale and the
	// registry are simulate's.
	Replica replica.Config
	Plan    *workload.Plan
	Start   time.Time // the virtual clock's start; zero is Epoch

	// Replicas is the fleet's size at the start (0: one); with an
	// autoscaler, its minimum is used when this is smaller.
	Replicas int
	// Router spreads the requests over the ready replicas.
	Router router.Config
	// RouterRefresh is how often the endpoint picker reads the replicas'
	// metrics (its --refresh-metrics-interval); 0 is its default, 50 ms.
	RouterRefresh time.Duration
	// Autoscaler, when set, resizes the fleet on the requests waiting
	// that Prometheus scrapes every ScrapeInterval (0: 5 s, the chart's
	// monitoring.interval); a replica it adds is ready StartupDelay later,
	// one it removes leaves the router at once and finishes what it holds
	// within ShutdownTimeout (0: 30 s, the chart's), aborting the rest.
	Autoscaler      *autoscaler.Config
	ScrapeInterval  time.Duration
	StartupDelay    time.Duration
	ShutdownTimeout time.Duration

	// Series, when set, records every replica's /metrics at its interval
	// of virtual time (see Series).
	Series *Series
	// Observe, when set, sees each replica's registry at every interval
	// of virtual time, and its dcgm-exporter when Replica.DCGM is set (nil
	// otherwise): the doctor builds its windows this way. One replica's
	// readings come in time order; the replicas' interleave.
	Observe         func(at time.Time, in Instance)
	ObserveInterval time.Duration

	// RequestTimeout, when positive, is each client's limit, as bench's
	// --request-timeout: a request not answered by then is given up, the
	// client disconnects and the engine aborts it.
	RequestTimeout time.Duration
}

// Instance is one replica's metrics as a scrape would read them.
type Instance struct {
	Index    int
	Name     string // its instance label (Series' and the doctor's)
	Gatherer prometheus.Gatherer
	DCGM     http.Handler // nil without Replica.DCGM
}

// Result is a run: every request as its client saw it, in schedule order.
type Result struct {
	Outputs []bench.Output
	// Tokens is, per output, when the engine sampled its first and last
	// tokens and how long those steps took (what a calibration needs to
	// tell engine time from the frontend's).
	Tokens   []TokenTimes
	Start    time.Time           // virtual
	Duration time.Duration       // virtual: from the start to the last answer
	Wall     time.Duration       // what it took here
	Steps    uint64              // over every replica
	Gatherer prometheus.Gatherer // the first replica's metrics at the end
	Frontend profiles.Frontend
	Engine   engine.Config

	// Stages are the stages the plan ran (a sweep's, once its probe found
	// them); Saturation the rate its probe found.
	Stages     []workload.Stage
	Saturation float64

	// Replicas is every replica that ran, in the order they started.
	Replicas []ReplicaResult
	// Scaling is the autoscaler's decisions, in time order.
	Scaling []ScaleEvent
	// Unrouted counts requests refused at the gateway for want of a
	// ready replica.
	Unrouted int
}

// ReplicaResult is one replica's share of a run.
type ReplicaResult struct {
	Instance        string
	Gatherer        prometheus.Gatherer
	Steps           uint64
	Requests        int // routed to it
	Started, Ready  time.Time
	Stopped         time.Time // zero when it ran to the end
	PrefixHitTokens int64     // prompt tokens its prefix cache served
}

// ScaleEvent is one change of the fleet's desired size.
type ScaleEvent struct {
	At       time.Time
	From, To int
	Waiting  float64 // the metric the decision read
}

// Speedup is virtual time over wall time.
func (r *Result) Speedup() float64 { return r.Duration.Seconds() / max(r.Wall.Seconds(), 1e-9) }

// Run simulates cfg.Plan against the replicas cfg describes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	wallStart := time.Now()
	if cfg.Replica.Model != "" {
		return nil, errors.New("simulate: it runs the simulated GPU; a GGUF --model is for serve")
	}
	if cfg.Plan == nil || len(cfg.Plan.Prompts) == 0 {
		return nil, errors.New("simulate: no workload")
	}
	if cfg.Replicas < 0 || cfg.RouterRefresh < 0 || cfg.ScrapeInterval < 0 || cfg.StartupDelay < 0 || cfg.ShutdownTimeout < 0 {
		return nil, errors.New("simulate: replicas, intervals and delays must not be negative")
	}
	format, err := responseFormat(cfg.Plan.ResponseFormat)
	if err != nil {
		return nil, err
	}
	if err := checkAdapters(cfg); err != nil {
		return nil, err
	}
	start := cfg.Start
	if start.IsZero() {
		start = Epoch
	}
	calib, err := calibration(cfg.Replica.Sim)
	if err != nil {
		return nil, err
	}
	d, err := newDriver(&cfg, start, calib.Frontend)
	if err != nil {
		return nil, err
	}
	d.format = format
	defer d.close()
	if err := d.run(ctx); err != nil {
		return nil, err
	}
	if err := d.sch.Err(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	res := &Result{Outputs: d.outputs, Tokens: d.tokens, Start: start, Duration: d.last.Sub(start),
		Frontend: calib.Frontend, Scaling: d.scaling, Unrouted: d.unrouted, Stages: d.sch.Stages(), Saturation: d.sch.Saturation()}
	for _, n := range d.all {
		n.eng.Stop()
		st := n.eng.Stats()
		res.Steps += st.Steps
		res.Replicas = append(res.Replicas, ReplicaResult{Instance: n.name, Gatherer: n.registry, Steps: st.Steps, Requests: n.routed,
			Started: n.started, Ready: n.readyAt, Stopped: n.stopped, PrefixHitTokens: n.steps.hits})
	}
	if len(d.all) > 0 {
		first := d.all[0]
		res.Gatherer, res.Engine = first.registry, first.rep.EngineConfig
	}
	res.Wall = time.Since(wallStart)
	return res, nil
}

// checkAdapters refuses a LoRA traffic split naming an adapter the
// simulated server does not serve, as inference-perf's client does.
func checkAdapters(cfg Config) error {
	var served []string
	if cfg.Replica.LoRA != nil {
		for _, m := range cfg.Replica.LoRA.Modules {
			served = append(served, m.Name)
		}
	}
	for _, l := range cfg.Plan.LoRA {
		if !slices.Contains(served, l.Name) {
			return fmt.Errorf("simulate: load.lora_traffic_split sends to the LoRA adapter %q, which the simulated server does not serve: give --enable-lora --lora-modules %s=PATH", l.Name, l.Name)
		}
	}
	return nil
}

// TokenTimes are one request's first and last tokens on the engine's
// clock, how long the steps that sampled them took, how many tokens the
// API server handled back to back up to and including each (a step's
// come to it at once: with no Stream time, its place in the step).
type TokenTimes struct {
	First, Last             time.Time
	FirstStep, LastStep     time.Duration
	FirstQueued, LastQueued int
}

// calibration is the coefficients the executor will use.
func calibration(c sim.Config) (profiles.Calibration, error) {
	if c.Calib != nil {
		return *c.Calib, nil
	}
	hw, err := profiles.LookupHardware(c.Hardware)
	if err != nil {
		return profiles.Calibration{}, fmt.Errorf("simulate: %w", err)
	}
	return hw.Calib, nil
}

// Clock is virtual time: Sleep moves it on at once. Each replica has its
// own.
type Clock struct{ now time.Time }

func (c *Clock) Now() time.Time        { return c.now }
func (c *Clock) Sleep(d time.Duration) { c.now = c.now.Add(d) }

// stepSeqs records which requests each step ran, so that the driver reads
// only their streams, and the prompt tokens the prefix cache served.
type stepSeqs struct {
	ids  []string
	hits int64
}

func (s *stepSeqs) ObserveStep(ev *engine.StepEvent) {
	for _, q := range ev.Seqs {
		s.ids = append(s.ids, q.ID)
	}
	s.hits += int64(ev.PrefixHits)
}
func (s *stepSeqs) ObserveFinished(*engine.FinishedEvent) {}

package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/autoscaler"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// fleetFlags are simulate's and plan's fleet: the replicas, the router in
// front of them and the autoscaler, each flag one value of
// deploy/helm/glassbox (docs/simulator.md has the table; a test holds the
// defaults to the chart's).
type fleetFlags struct {
	replicas     int
	router       string
	scorers      string
	refresh      time.Duration
	prefixBlock  int
	prefixLRU    int
	preciseBlock int

	autoscaler    string
	minReplicas   int
	maxReplicas   int
	targetWaiting float64
	stabilization time.Duration
	polling       time.Duration
	cooldown      time.Duration
	activation    float64
	scrape        time.Duration
	startup       time.Duration
	shutdown      time.Duration

	set       map[string]bool // the flags the command line gave
	anyPicker bool            // plan: one of its routers is the endpoint picker
}

// The flags only the endpoint picker reads, and only an autoscaler.
var (
	pickerFlags     = []string{"router-scorers", "router-refresh-metrics-interval", "router-prefix-block-size", "router-prefix-lru-capacity", "router-precise-block-size"}
	autoscalerFlags = []string{"min-replicas", "max-replicas", "target-waiting-per-replica", "scale-down-stabilization", "keda-polling-interval",
		"keda-cooldown-period", "keda-activation-waiting", "scrape-interval", "replica-startup-delay", "shutdown-timeout"}
)

// visited records what the parsed command line set explicitly, so that a
// flag nothing would read is refused rather than ignored.
func (f *fleetFlags) visited(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
}

// unread names the first of flags the command line set.
func (f *fleetFlags) unread(flags []string) string {
	for _, name := range flags {
		if f.set[name] {
			return "--" + name
		}
	}
	return ""
}

// register adds the flags; plan takes lists of replicas and routers, so it
// registers those itself (withCounts false).
func (f *fleetFlags) register(fs *flag.FlagSet, withCounts bool) {
	as := autoscaler.Defaults(autoscaler.HPA)
	if withCounts {
		fs.IntVar(&f.replicas, "replicas", 1, "replicas of the server behind the router (the chart's replicaCount; the autoscaler's minimum when that is larger)")
		fs.StringVar(&f.router, "router", router.RoundRobin, "how requests are spread: round-robin, least-requests, random, or endpoint-picker (the llm-d router's, the chart's router.enabled)")
	}
	fs.StringVar(&f.scorers, "router-scorers", router.FormatScorers(router.DefaultScorers()),
		"the endpoint picker's scorers and weights (the chart's router.weights): queue-scorer, kv-cache-utilization-scorer, prefix-cache-scorer (approximate) or precise-prefix-cache-scorer (the engines' KV blocks)")
	fs.DurationVar(&f.refresh, "router-refresh-metrics-interval", simulate.DefaultRouterRefresh, "how often the endpoint picker reads each replica's metrics (its --refresh-metrics-interval)")
	fs.IntVar(&f.prefixBlock, "router-prefix-block-size", 0, "the approximate prefix scorer's block in tokens (blockSizeTokens; 0: the engines' block size, at least 64, as llm-d auto-tunes it)")
	fs.IntVar(&f.prefixLRU, "router-prefix-lru-capacity", 0, "blocks the approximate prefix scorer remembers per replica (lruCapacityPerServer; 0: the replica's KV blocks)")
	fs.IntVar(&f.preciseBlock, "router-precise-block-size", 16, "the precise prefix scorer's block in tokens (tokenProcessorConfig.blockSize)")
	fs.StringVar(&f.autoscaler, "autoscaler", "", "scale the fleet on vllm:num_requests_waiting: keda or hpa (the chart's autoscaling.keda.enabled or autoscaling.hpa.enabled; empty: a fixed fleet)")
	fs.IntVar(&f.minReplicas, "min-replicas", as.MinReplicas, "the autoscaler's minimum (autoscaling.minReplicas; 0 only with keda)")
	fs.IntVar(&f.maxReplicas, "max-replicas", as.MaxReplicas, "the autoscaler's maximum (autoscaling.maxReplicas)")
	fs.Float64Var(&f.targetWaiting, "target-waiting-per-replica", as.TargetWaitingPerReplica, "requests waiting per replica the autoscaler aims at (autoscaling.targetWaitingPerReplica)")
	fs.DurationVar(&f.stabilization, "scale-down-stabilization", as.ScaleDownStabilization, "how long the fleet must be quiet before a scale-down (autoscaling.scaleDownStabilizationSeconds)")
	fs.DurationVar(&f.polling, "keda-polling-interval", as.PollingInterval, "KEDA's polling interval (autoscaling.keda.pollingInterval)")
	fs.DurationVar(&f.cooldown, "keda-cooldown-period", as.CooldownPeriod, "KEDA's wait before scaling to zero (autoscaling.keda.cooldownPeriod)")
	fs.Float64Var(&f.activation, "keda-activation-waiting", as.ActivationWaiting, "requests waiting that activate KEDA from zero replicas (autoscaling.keda.activationWaiting)")
	fs.DurationVar(&f.scrape, "scrape-interval", simulate.DefaultScrapeInterval, "Prometheus' scrape of the replicas, which the autoscaler reads (the chart's monitoring.interval)")
	fs.DurationVar(&f.startup, "replica-startup-delay", 0, "from a scale-up to the new replica's readiness: scheduling, image pull and model load")
	fs.DurationVar(&f.shutdown, "shutdown-timeout", simulate.DefaultShutdownTimeout, "a removed replica's time to finish what it holds before the rest is aborted (shutdownTimeoutSeconds)")
}

// apply puts the fleet into a simulation's configuration.
func (f *fleetFlags) apply(cfg *simulate.Config, seed int64) error {
	if f.replicas < 1 && (f.autoscaler == "" || f.replicas < 0) {
		return errors.New("--replicas must be at least 1 (0 only with an --autoscaler: its minimum)")
	}
	if name := f.unread(autoscalerFlags); name != "" && f.autoscaler == "" {
		return fmt.Errorf("%s: the fleet has no --autoscaler to read it", name)
	}
	rc, err := f.routerConfig(f.router, seed)
	if err != nil {
		return err
	}
	cfg.Replicas, cfg.Router, cfg.RouterRefresh = f.replicas, rc, f.refresh
	if f.refresh <= 0 || f.scrape <= 0 || f.startup < 0 || f.shutdown < 0 {
		return errors.New("--router-refresh-metrics-interval and --scrape-interval must be positive, --replica-startup-delay and --shutdown-timeout not negative")
	}
	if f.autoscaler != "" {
		as := autoscaler.Defaults(f.autoscaler)
		as.MinReplicas, as.MaxReplicas, as.TargetWaitingPerReplica = f.minReplicas, f.maxReplicas, f.targetWaiting
		as.ScaleDownStabilization, as.PollingInterval, as.CooldownPeriod, as.ActivationWaiting = f.stabilization, f.polling, f.cooldown, f.activation
		if err := as.Check(); err != nil {
			return fmt.Errorf("--autoscaler: %w", err)
		}
		cfg.Autoscaler = &as
	}
	cfg.ScrapeInterval, cfg.StartupDelay, cfg.ShutdownTimeout = f.scrape, f.startup, f.shutdown
	return nil
}

// routerConfig is one router of the flags.
func (f *fleetFlags) routerConfig(policy string, seed int64) (router.Config, error) {
	rc := router.Config{Policy: policy, Seed: uint64(seed), PrefixBlockSize: f.prefixBlock, PrefixLRUCapacity: f.prefixLRU, PreciseBlockSize: f.preciseBlock}
	if name := f.unread(pickerFlags); name != "" && policy != router.EndpointPicker && !f.anyPicker {
		return rc, fmt.Errorf("%s: only --router endpoint-picker reads it", name)
	}
	if policy == router.EndpointPicker {
		ss, err := router.ParseScorers(f.scorers)
		if err != nil {
			return rc, fmt.Errorf("--router-scorers: %w", err)
		}
		rc.Scorers = ss
	}
	if f.prefixBlock < 0 || f.prefixLRU < 0 || f.preciseBlock < 1 {
		return rc, errors.New("--router-prefix-block-size and --router-prefix-lru-capacity must not be negative, --router-precise-block-size must be positive")
	}
	// The precise scorer's KV index is the simulation's: check the rest now.
	check := rc
	if check.KV == nil {
		check.KV = noKV{}
	}
	if _, err := router.New(check); err != nil {
		return rc, fmt.Errorf("--router: %w", err)
	}
	return rc, nil
}

type noKV struct{}

func (noKV) CachedTokens(string, *router.Request) int { return 0 }

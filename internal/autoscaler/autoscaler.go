// Package autoscaler decides a simulated fleet's replica count as
// Kubernetes' HorizontalPodAutoscaler does, driven by queue depth
// (vllm:num_requests_waiting summed over the fleet, as deploy/helm/
// glassbox's KEDA ScaledObject and HPA read it): the desired count is the
// metric over the target per replica, rounded up, left alone within the
// HPA's 10 % tolerance; scale-ups take the HPA's default policies (at most
// double, or four more pods, per 15 s), scale-downs wait out the
// stabilisation window (the highest recommendation within it wins) and go
// one pod a minute, as the chart configures; KEDA adds scaling to and
// from zero: active above its activation threshold, back to zero after
// its cooldown period. It is pure: the caller passes the time and the
// metric, and creates and removes the replicas.
package autoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Kinds of autoscaler (autoscaling.keda.enabled, autoscaling.hpa.enabled).
const (
	KEDA = "keda"
	HPA  = "hpa"
)

// Config is the chart's autoscaling values, one field each, and the
// cluster's HPA settings.
type Config struct {
	Kind string // keda or hpa

	MinReplicas             int     // autoscaling.minReplicas (KEDA may take 0)
	MaxReplicas             int     // autoscaling.maxReplicas
	TargetWaitingPerReplica float64 // autoscaling.targetWaitingPerReplica
	// ScaleDownStabilization is autoscaling.scaleDownStabilizationSeconds.
	ScaleDownStabilization time.Duration

	// KEDA's: autoscaling.keda.pollingInterval, cooldownPeriod and
	// activationWaiting.
	PollingInterval   time.Duration
	CooldownPeriod    time.Duration
	ActivationWaiting float64

	// SyncPeriod is how often the HPA evaluates (kube-controller-manager's
	// --horizontal-pod-autoscaler-sync-period, 15 s); Tolerance the ratio
	// within which it does nothing (--horizontal-pod-autoscaler-tolerance,
	// 0.1).
	SyncPeriod time.Duration
	Tolerance  float64
}

// Defaults are the chart's values.yaml and Kubernetes' defaults.
func Defaults(kind string) Config {
	return Config{Kind: kind, MinReplicas: 1, MaxReplicas: 8, TargetWaitingPerReplica: 4, ScaleDownStabilization: 300 * time.Second,
		PollingInterval: 15 * time.Second, CooldownPeriod: 300 * time.Second, SyncPeriod: 15 * time.Second, Tolerance: 0.1}
}

// The scaling policies: the HPA's default scale-up (Percent 100 and Pods
// 4 per 15 s, the larger wins) and the chart's scale-down (Pods 1 per 60 s).
const (
	upPeriod     = 15 * time.Second
	upPods       = 4
	downPeriod   = 60 * time.Second
	downPodsStep = 1
)

// Check reports a configuration the chart's schema or Kubernetes would
// refuse.
func (c *Config) Check() error {
	switch c.Kind {
	case KEDA, HPA:
	default:
		return fmt.Errorf("autoscaler %q: want %s or %s", c.Kind, KEDA, HPA)
	}
	switch {
	case c.MinReplicas < 0 || c.Kind == HPA && c.MinReplicas < 1:
		return errors.New("autoscaler: the minimum replicas must be at least 1 (0 only with keda)")
	case c.MaxReplicas < max(c.MinReplicas, 1):
		return errors.New("autoscaler: the maximum replicas must be at least the minimum and at least 1")
	case !(c.TargetWaitingPerReplica > 0) || math.IsInf(c.TargetWaitingPerReplica, 0):
		return errors.New("autoscaler: the target of requests waiting per replica must be positive")
	case c.ScaleDownStabilization < 0 || c.CooldownPeriod < 0 || c.PollingInterval <= 0 || c.SyncPeriod <= 0:
		return errors.New("autoscaler: the polling and sync intervals must be positive, the windows not negative")
	case !(c.ActivationWaiting >= 0) || !(c.Tolerance >= 0):
		return errors.New("autoscaler: the activation threshold and tolerance must not be negative")
	}
	return nil
}

// Autoscaler is one ScaledObject or HPA. Not safe for concurrent use.
type Autoscaler struct {
	cfg        Config
	recs       []rec // recommendations within the stabilisation window
	events     []scaleEvent
	lastActive time.Time
}

type rec struct {
	at time.Time
	n  int
}

type scaleEvent struct {
	at    time.Time
	delta int
}

// New checks cfg.
func New(cfg Config) (*Autoscaler, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return &Autoscaler{cfg: cfg}, nil
}

// Config is what it runs with.
func (a *Autoscaler) Config() Config { return a.cfg }

// Interval is how often Desired is asked: the HPA's sync period, or
// KEDA's polling interval when it is shorter (its activation checks).
func (a *Autoscaler) Interval() time.Duration {
	if a.cfg.Kind == KEDA {
		return min(a.cfg.SyncPeriod, a.cfg.PollingInterval)
	}
	return a.cfg.SyncPeriod
}

// Desired is the replica count to run from now, given the current count
// (the Deployment's, starting pods included) and the metric as Prometheus
// last scraped it (ok false: no series, as with no pod running). hpaDue
// says the HPA evaluates at this call (every SyncPeriod); KEDA's activation
// is checked at every call.
func (a *Autoscaler) Desired(now time.Time, current int, waiting float64, ok, hpaDue bool) int {
	if a.cfg.Kind == KEDA {
		active := ok && waiting > a.cfg.ActivationWaiting
		if active {
			a.lastActive = now
		}
		switch {
		case current == 0 && active:
			return a.record(now, current, max(1, a.cfg.MinReplicas))
		case current == 0:
			return 0
		case a.cfg.MinReplicas == 0 && !active && !a.lastActive.IsZero() && now.Sub(a.lastActive) >= a.cfg.CooldownPeriod:
			return a.record(now, current, 0)
		case a.cfg.MinReplicas == 0 && !active && a.lastActive.IsZero():
			a.lastActive = now // the cooldown counts from the first poll
		}
	}
	if !hpaDue || current == 0 {
		return current
	}
	desired := current
	if ok {
		desired = a.metricReplicas(current, waiting)
	}
	desired = a.stabilize(now, current, desired)
	desired = a.limitRate(now, current, desired)
	return a.record(now, current, desired)
}

// metricReplicas is the HPA's replica calculation for an AverageValue
// target: the metric over the target, rounded up, unless the ratio to
// what the current count would hold is within the tolerance.
func (a *Autoscaler) metricReplicas(current int, waiting float64) int {
	target := a.cfg.TargetWaitingPerReplica
	ratio := waiting / (target * float64(current))
	if math.Abs(1-ratio) <= a.cfg.Tolerance {
		return current
	}
	return int(math.Ceil(waiting / target))
}

// stabilize keeps the highest recommendation of the scale-down window
// (scale-up's window is 0: a rise is followed at once).
func (a *Autoscaler) stabilize(now time.Time, current, desired int) int {
	cut := now.Add(-a.cfg.ScaleDownStabilization)
	keep := a.recs[:0]
	down := desired
	for _, r := range a.recs {
		if r.at.After(cut) {
			keep = append(keep, r)
			down = max(down, r.n)
		}
	}
	a.recs = append(keep, rec{now, desired})
	out := current
	if out < desired {
		out = desired
	}
	if out > down {
		out = down
	}
	return out
}

// limitRate applies the scaling policies over their periods and the
// bounds.
func (a *Autoscaler) limitRate(now time.Time, current, desired int) int {
	lo, hi := max(a.cfg.MinReplicas, 1), a.cfg.MaxReplicas
	switch {
	case desired > current:
		added := 0
		for _, e := range a.events {
			if e.delta > 0 && now.Sub(e.at) < upPeriod {
				added += e.delta
			}
		}
		start := current - added
		limit := max(start+upPods, 2*start)
		desired = min(desired, limit)
	case desired < current:
		removed := 0
		for _, e := range a.events {
			if e.delta < 0 && now.Sub(e.at) < downPeriod {
				removed -= e.delta
			}
		}
		start := current + removed
		desired = max(desired, start-downPodsStep)
	}
	return min(max(desired, lo), hi)
}

// record notes a change for the rate limits.
func (a *Autoscaler) record(now time.Time, current, desired int) int {
	if desired != current {
		a.events = append(a.events, scaleEvent{now, desired - current})
		keep := a.events[:0]
		for _, e := range a.events {
			if now.Sub(e.at) < max(upPeriod, downPeriod) {
				keep = append(keep, e)
			}
		}
		a.events = keep
	}
	return desired
}

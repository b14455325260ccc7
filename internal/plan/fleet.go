package plan

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/replica"
)

// fitReplicas finds the fewest replicas behind the row's router that meet
// the SLOs at the target rate: from the estimate one replica's rate gives,
// down while a smaller fleet still meets them, or up until one does. A
// router that balances worse than the estimate assumes needs more.
func fitReplicas(ctx context.Context, cfg *Config, rc replica.Config, r *Row) {
	var trialErr error // a trial that could not run is not a fleet too small
	try := func(n int) bool {
		r.Trials++
		t, err := runFleetTrial(ctx, cfg, rc, n, r.router, cfg.TargetRate)
		if err != nil && trialErr == nil {
			trialErr = err
		}
		return err == nil && t.meets
	}
	n := min(max(1, int(math.Ceil(cfg.TargetRate/r.MaxRate*(1-1e-9)))), cfg.MaxReplicas)
	if try(n) {
		for n > 1 && ctx.Err() == nil && trialErr == nil && try(n-1) {
			n--
		}
	} else {
		for {
			if trialErr != nil {
				r.Err = fmt.Sprintf("a trial of %d replicas failed: %v", n, trialErr)
				return
			}
			if n == cfg.MaxReplicas || ctx.Err() != nil {
				r.Err = fmt.Sprintf("%d replicas do not meet the SLOs at %.3g requests/s", n, cfg.TargetRate)
				return
			}
			n++
			if try(n) {
				break
			}
		}
	}
	if trialErr != nil {
		r.Err = fmt.Sprintf("a fleet trial failed: %v", trialErr)
		return
	}
	r.Replicas, r.Fitted = n, true
}

// busiest is the replica whose window saw the most requests waiting: the
// one the doctor reads (for one replica, that one).
func busiest(ws map[int]*doctor.Window) *doctor.Window {
	var best *doctor.Window
	most := -1.0
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w == nil {
			continue
		}
		sum := 0.0
		for _, p := range w.Gauge(metricspec.NumRequestsWaiting) {
			sum += p.V
		}
		if sum > most {
			best, most = w, sum
		}
	}
	if best == nil {
		best = doctor.NewWindow("simulate", "virtual replica")
	}
	return best
}

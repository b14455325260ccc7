package doctor

import (
	"math"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// What the registry reads off the series' shape rather than off one
// series: the arrival rate, the sequence cap's plateau, a token budget
// below 2048 from chunked prompts, the queue's growth, restarts.

// arrivalRate is requests finished plus the change in those in the engine,
// per second.
func arrivalRate(v *view) float64 {
	run, wait := v.w.Gauge(metricspec.NumRequestsRunning), v.w.Gauge(metricspec.NumRequestsWaiting)
	if len(run) < 2 || len(wait) < 2 || !(v.seconds() > 0) {
		return math.NaN()
	}
	inFlight := func(i int) float64 { return run[i].V + wait[i].V }
	return math.Max(0, (zeroNaN(v.inc(metricspec.RequestSuccess))+inFlight(len(run)-1)-inFlight(0))/v.seconds())
}

// chunkedBudget is a budget below 2048 read off vLLM's series: requests
// wait through most of the window while the KV cache has room for them,
// so the scheduler packs every step to its budget; the load is
// prompt-heavy and its prompts' computed tokens average more than a step
// holds, so they are cut into chunks; and the mean step sits at one of
// 256, 512 or 1024 (within 2 % of it): the budget is that round number.
// (vLLM's step histogram cannot say it: it records a prompt's tokens at
// the step its prefill ends, all of them.) 0 when the series say nothing
// of it.
func chunkedBudget(v *view) float64 {
	step := v.sig(SigStepTokens)
	prompt := ratio(v.inc(metricspec.PromptTokens)-zeroNaN(v.inc(metricspec.PromptTokensCached)), v.inc(metricspec.TimeToFirstToken+"_count"))
	th := v.th()
	if !(v.sig(SigWaitingShare) >= th.WaitingPersistent) || !(v.sig(SigPromptPerGen) >= th.PromptHeavy) || kvLimited(v.sig, th) {
		return 0
	}
	for _, b := range []float64{256, 512, 1024} {
		if step >= 0.98*b && step <= 1.02*b && prompt > b {
			return b
		}
	}
	return 0
}

// slope is the least-squares slope of a gauge's readings over their
// times, per second; NaN with fewer than two readings or none apart.
func slope(ps []Point) float64 {
	if len(ps) < 2 {
		return math.NaN()
	}
	var st, sv float64
	for _, p := range ps {
		st += p.T.Sub(ps[0].T).Seconds()
		sv += p.V
	}
	n := float64(len(ps))
	mt, mv := st/n, sv/n
	var cov, vt float64
	for _, p := range ps {
		dt := p.T.Sub(ps[0].T).Seconds() - mt
		cov += dt * (p.V - mv)
		vt += dt * dt
	}
	return ratio(cov, vt)
}

// plateau infers max_num_seqs from vLLM's series: a plateau of the running
// gauge with requests waiting is a cap, unless the KV cache holds it there
// or full steps (the budget admits no more prefill) do.
func plateau(v *view) float64 {
	n := v.sig(SigRunningPeak)
	th := v.th()
	if !(n >= 2) || !(v.sig(SigWaitingShare) >= th.WaitingPersistent) || kvLimited(v.sig, th) || v.sig(SigFill) >= th.FillInferred {
		return math.NaN()
	}
	if v.share(metricspec.NumRequestsRunning, func(x float64) bool { return x >= th.PinnedNear*n-1 }) < th.PinnedShare {
		return math.NaN()
	}
	return n / float64(v.cfg().engines) // each data-parallel rank's
}

// restarts counts the readings at which the finished-request or the
// generated-token counter fell: the process behind the series restarted.
func restarts(v *view) float64 {
	n := 0
	snaps := v.w.Snapshots
	for i := 1; i < len(snaps); i++ {
		for _, key := range []string{metricspec.RequestSuccess, metricspec.GenerationTokens} {
			a, ok1 := snaps[i-1].Values[key]
			b, ok2 := snaps[i].Values[key]
			if ok1 && ok2 && b < a {
				n++
				break
			}
		}
	}
	return float64(n)
}

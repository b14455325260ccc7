package doctor

import (
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// requiredFamilies are the vLLM families every rule leans on; a target
// without one is misconfigured or not a vLLM-compatible engine.
func requiredFamilies() []string {
	return []string{metricspec.NumRequestsRunning, metricspec.NumRequestsWaiting, metricspec.KVCacheUsagePerc, metricspec.GenerationTokens, metricspec.RequestSuccess, metricspec.TimeToFirstToken}
}

// absentFamilies are the required families the window never saw.
func absentFamilies(w *Window) []string {
	var absent []string
	for _, f := range requiredFamilies() {
		if !w.Present[f] && !w.Has(f) && !w.Has(f+"_count") {
			absent = append(absent, f)
		}
	}
	return absent
}

// stalled: requests ran but no token was generated (and, with glassbox's
// series, no step was run).
func (s *Signals) stalled() bool {
	return s.v(SigRunning) >= 1 && s.v(SigGenerated) == 0 && !(s.v(SigSteps) > 0)
}

func stale(s *Signals) bool {
	return s.w.Missed > 0 || len(absentFamilies(s.w)) > 0 || s.stalled() || s.v(SigRestarts) > 0
}

// metricsStale reports scrape problems: readings that failed or found the
// target down, families that never appeared, and counters that stopped
// while requests were running.
func metricsStale(s *Signals, _ *diagnosis) *Finding {
	w, p := s.w, s.p
	absent, stalled := absentFamilies(w), s.stalled()
	total := len(w.Snapshots) + w.Missed
	missedShare := float64(w.Missed) / float64(max(total, 1))
	sev := Warning
	if stalled || missedShare >= s.th.StaleShare {
		sev = Critical
	}
	evs := []Evidence{ev("share of readings that failed or found the target down", missedShare, "ratio", "1 - avg_over_time(min("+p.s(FamilyUp)+")["+p.window+":"+p.step+"])")}
	var parts []string
	if w.Missed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d readings failed (%s)", w.Missed, total, strings.Join(w.Problems, "; ")))
	}
	if n := s.v(SigRestarts); n > 0 {
		parts = append(parts, fmt.Sprintf("the target restarted %.0f time(s): its counters fell back to zero, and every rate here counts from zero after the restart, as Prometheus's rate() does", n))
		evs = append(evs, s.ev(SigRestarts))
	}
	if len(absent) > 0 {
		parts = append(parts, "never exported: "+join(absent))
		evs = append(evs, ev("required families absent", float64(len(absent)), "", "absent("+p.s(absent[0])+")"))
	}
	if stalled {
		parts = append(parts, fmt.Sprintf("%.1f requests were running on average but no token was generated", s.v(SigRunning)))
		evs = append(evs, s.evs(SigRunning, SigGenRate)...)
	}
	return &Finding{Severity: sev, Title: "metrics missing or stale: the window is incomplete",
		Evidence:  evs,
		Inference: strings.Join(parts, "; ") + ". Findings drawn from the rest of the window may miss what happened in the gaps.",
		Changes: []Change{{Why: "check the target is up and its /metrics reachable (Prometheus → Status → Targets), " +
			"and if counters stopped with requests running, take a goroutine dump (kill -QUIT) and restart (runbook GlassboxEngineStalled)"}}}
}

// singleReading is the report of a window of one reading: gauges say
// what the target is doing now; counters and histograms need two readings
// to say anything about rates, latencies or trends.
func singleReading(s *Signals) Finding {
	p := s.p
	evs := []Evidence{ev("requests running", s.v(SigRunning), "", p.s(metricspec.NumRequestsRunning)),
		ev("requests waiting", s.v(SigWaiting), "", p.s(metricspec.NumRequestsWaiting)),
		ev("KV-cache usage", s.v(SigKV), "ratio", p.s(metricspec.KVCacheUsagePerc))}
	if c := s.cfg.kvMaxConcurrency; c > 0 {
		evs = append(evs, ev("kv_cache_max_concurrency", c, "", p.info(metricspec.CacheConfigInfo)))
	}
	return Finding{Name: "single-reading", Severity: Info, Sources: []string{string(srcVLLM)}, Confidence: "low",
		Title:     "one reading: a snapshot of the gauges, nothing about rates, latencies or trends",
		Evidence:  evs,
		Inference: "Counters (tokens, finished requests, preemptions) and histograms (latencies) need two readings to give a rate or a distribution over a window, so no bottleneck can be named from one scrape. The gauges above are the target's state at that instant.",
		Changes:   []Change{{Why: "sample the live target over a window (--metrics-url with --duration), or read its history from Prometheus (--prometheus-url)"}}}
}

// notWhileDead are the findings a dead engine's window cannot support:
// every rule of the table but engine-dead and metrics-stale (the scrape's
// own). Its requests fail at once, so its load, latencies and capacity
// describe the failure, not the server; a rule added to the table is
// excluded with the rest, not left to a list to remember it.
func notWhileDead(table []rule) []string {
	var out []string
	for _, r := range table {
		if r.name != "engine-dead" && r.name != "metrics-stale" {
			out = append(out, r.name)
		}
	}
	return out
}

// deadReason is what glassbox_engine_dead says killed the engine in the
// window's first reading that has it dead ("" if none did): a target
// restarted since (a liveness probe on /health) still had the death.
func (s *Signals) deadReason() string {
	for _, snap := range s.w.Snapshots {
		for _, r := range metricspec.EngineDeadReasons {
			if snap.Values[keyEngineDead(r)] >= 1 {
				return r
			}
		}
	}
	return ""
}

// deadAdvice is what each reason asks of the operator.
var deadAdvice = map[string]string{
	"executor_error": "a sticky device fault (an illegal address, a failed launch, an ECC error): read the engine's log line and the kernel's (dmesg: NVIDIA Xid), check the GPU with nvidia-smi; only a new process recovers the device",
	"step_timeout":   "a step ran past --step-timeout (a hung kernel, or a step legitimately longer: a long prefill on a CPU): read the log's step; raise --step-timeout only if steps really take that long",
	"executor_panic": "the executor panicked (a bug): the log holds its stack; file it with the request that ran",
}

// engineDead reports an engine that stopped: every request fails until the
// process restarts.
func engineDead(s *Signals, _ *diagnosis) *Finding {
	r := s.deadReason()
	return &Finding{Severity: Critical, Title: "engine dead: every request fails until the server restarts",
		Evidence: []Evidence{ev("engine dead, reason "+r, 1, "", "max_over_time(max("+s.p.s(metricspec.EngineDead, `reason="`+r+`"`)+")["+s.p.window+":"+s.p.step+"])")},
		Inference: "glassbox_engine_dead says the engine stopped (" + r + "): in-flight requests ended with a 503 error, new ones are refused with it, and /health answers 503. " +
			"The window's load, latencies and capacity describe the failure, not the server, so no other finding is drawn from them.",
		Changes: []Change{{Why: "restart the server (a Kubernetes liveness probe on /health does; runbook GlassboxEngineDead), then: " + deadAdvice[r]}}}
}

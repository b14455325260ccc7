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

// metricsStale reports scrape problems: readings that failed or found the
// target down, families that never appeared, and counters that stopped
// while requests were running.
func metricsStale(s *signals, p promql) *Finding {
	w := s.w
	var absent []string
	for _, f := range requiredFamilies() {
		if !w.Present[f] && !w.Has(f) && !w.Has(f+"_count") {
			absent = append(absent, f)
		}
	}
	stalled := s.run.mean >= 1 && w.Increase(metricspec.GenerationTokens) == 0 && (!s.glassbox || w.Increase(metricspec.EngineSteps) == 0)
	total := len(w.Snapshots) + w.Missed
	missedShare := float64(w.Missed) / float64(max(total, 1))
	if w.Missed == 0 && len(absent) == 0 && !stalled {
		return nil
	}
	sev := Warning
	if stalled || missedShare >= staleShare {
		sev = Critical
	}
	evs := []Evidence{ev("share of readings that failed or found the target down", missedShare, "ratio", "1 - avg_over_time(min("+p.s(mUp)+")["+p.window+":"+p.step+"])")}
	var parts []string
	if w.Missed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d readings failed (%s)", w.Missed, total, strings.Join(w.Problems, "; ")))
	}
	if len(absent) > 0 {
		parts = append(parts, "never exported: "+join(absent))
		evs = append(evs, ev("required families absent", float64(len(absent)), "", "absent("+p.s(absent[0])+")"))
	}
	if stalled {
		parts = append(parts, fmt.Sprintf("%.1f requests were running on average but no token was generated", s.run.mean))
		evs = append(evs, s.evRunning(p), s.evGen(p))
	}
	return &Finding{Severity: sev, Title: "metrics missing or stale: the window is incomplete",
		Evidence:  evs,
		Inference: strings.Join(parts, "; ") + ". Findings drawn from the rest of the window may miss what happened in the gaps.",
		Changes: []Change{{Why: "check the target is up and its /metrics reachable (Prometheus → Status → Targets), " +
			"and if counters stopped with requests running, take a goroutine dump (kill -QUIT) and restart (runbook GlassboxEngineStalled)"}}}
}

// utilisationUnavailable says why the utilisation rules were skipped.
func utilisationUnavailable(p promql) Finding {
	return Finding{Name: "utilisation-unavailable", Severity: Info,
		Title:     "no glassbox_* series: the utilisation rules were skipped",
		Evidence:  []Evidence{ev("glassbox executor series present", 0, "", "count("+p.s(metricspec.ExecutorBusySeconds)+")")},
		Inference: "The target exports vLLM's metrics only (a vLLM server), so executor utilisation and the scheduler's limits are unknown: KV-capacity bound, compute bound, concurrency cap and under-loaded cannot be told apart and are not reported.",
		Changes:   []Change{{Why: "for those rules, run glassbox, or read GPU utilisation from DCGM beside this report"}}}
}

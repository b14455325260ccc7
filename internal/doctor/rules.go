package doctor

import (
	"slices"
	"time"
)

// Question is one of the three every report answers first.
type Question string

const (
	QCompute   Question = "compute" // is compute saturated?
	QKV        Question = "kv"      // is the KV cache the limit?
	QScheduler Question = "scheduler"
)

// rule is one row of the rule table (docs/doctor.md): its name, the
// questions it answers, its severity, the findings it excludes when it
// fires, when it fires, the signals whose sources it rests on, and its
// advice (evidence, inference and remedies).
type rule struct {
	name     string
	answers  []Question
	severity Severity
	// excludes are findings that cannot hold beside this one, or that it
	// says better; an excluder comes before what it excludes in the table.
	excludes []string
	uses     []SignalName
	when     func(s *Signals) bool
	advise   func(s *Signals, d *diagnosis) *Finding
}

// diagnosis is what advice may read besides the signals: the findings the
// report holds.
type diagnosis struct{ names []string }

func (d *diagnosis) has(name string) bool { return slices.Contains(d.names, name) }

// rules is the rule table, in the order exclusion is applied (and findings
// are listed before sorting by severity).
func rules() []rule {
	capacity := []SignalName{SigBusy, SigBudget, SigMaxSeqs}
	table := []rule{
		{name: "engine-dead", severity: Critical, when: func(s *Signals) bool { return s.deadReason() != "" }, advise: engineDead},
		{name: "metrics-stale", severity: Warning, when: stale, advise: metricsStale},
		{name: "compute-and-kv-bound", answers: []Question{QCompute, QKV}, severity: Warning,
			excludes: []string{"kv-capacity-bound", "compute-bound", "concurrency-cap", "under-loaded"}, uses: append(capacity, SigPeakFLOPs),
			when: func(s *Signals) bool { return s.computeSaturated() && s.kvLimited() && s.queued() }, advise: computeAndKVBound},
		{name: "kv-capacity-bound", answers: []Question{QKV}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: capacity,
			when: func(s *Signals) bool { return s.kvLimited() && s.queued() }, advise: kvCapacityBound},
		{name: "compute-bound", answers: []Question{QCompute}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: append(capacity, SigPeakFLOPs),
			when: func(s *Signals) bool { return s.computeSaturated() && s.queued() }, advise: computeBound},
		{name: "token-budget", answers: []Question{QCompute, QScheduler}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: []SignalName{SigBusy, SigBudget, SigPeakFLOPs},
			when: func(s *Signals) bool { return s.budgetLimited() && s.queued() }, advise: tokenBudget},
		{name: "host-bound", answers: []Question{QScheduler}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: []SignalName{SigHostShare, SigEngineBusy, SigMaxSeqs},
			when: (*Signals).hostBound, advise: hostBound},
		{name: "concurrency-cap", answers: []Question{QScheduler}, severity: Warning, uses: []SignalName{SigBudget, SigMaxSeqs, SigBusy},
			when: func(s *Signals) bool { return s.capSuggestion() > 0 }, advise: concurrencyCap},
		{name: "under-loaded", answers: []Question{QScheduler}, severity: Info, uses: []SignalName{SigBusy},
			when: (*Signals).noWork, advise: underLoaded},
		{name: "preemption-storm", answers: []Question{QKV}, severity: Warning,
			when: func(s *Signals) bool { return s.v(SigPreemptRate) > s.th.PreemptionRate }, advise: preemptionStorm},
		{name: "prefill-bound", severity: Warning, excludes: []string{"decode-bound"}, when: prefillBoundWhen, advise: prefillBound},
		{name: "decode-bound", severity: Warning, when: (*Signals).itlGrowsWithBatch, advise: decodeBound},
		{name: "queueing-dominates", severity: Warning, when: func(s *Signals) bool { return s.v(SigQueueShare) > s.th.QueueShare }, advise: queueingDominates},
		{name: "client-timeouts", severity: Warning, when: clientTimeoutsWhen, advise: clientTimeouts},
		{name: "prefix-caching", severity: Warning, excludes: []string{"prefix-reuse"}, when: func(s *Signals) bool { return s.prefixAdvice() != 0 }, advise: prefixCaching},
		{name: "prefix-reuse", severity: Info, uses: []SignalName{SigHitRate}, when: prefixReuseWhen, advise: prefixReuse},
		{name: "speculation-costly", severity: Warning, uses: []SignalName{SigSpecAcceptance, SigBusy, SigSpecVerifyPerStep},
			when: func(s *Signals) bool { return s.specCost() != "" }, advise: speculationCostly},
	}
	table[0].excludes = notWhileDead(table)
	return table
}

// medianStep is the typical time between readings.
func medianStep(w *Window) time.Duration {
	var d []time.Duration
	for i := 1; i < len(w.Snapshots); i++ {
		d = append(d, w.Snapshots[i].T.Sub(w.Snapshots[i-1].T))
	}
	if len(d) == 0 {
		return time.Second
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// RuleNames are the rule table's findings, in table order (and the
// fleet's load-imbalance and the single-reading report).
func RuleNames() []string {
	var out []string
	for _, r := range rules() {
		out = append(out, r.name)
	}
	return append(out, "load-imbalance", "single-reading")
}

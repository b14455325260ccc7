package doctor

import (
	"slices"
	"sort"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
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
	uses     []string
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
	capacity := []string{sigBusy, sigBudget, sigMaxSeqs}
	return []rule{
		{name: "metrics-stale", severity: Warning, when: stale, advise: metricsStale},
		{name: "compute-and-kv-bound", answers: []Question{QCompute, QKV}, severity: Warning,
			excludes: []string{"kv-capacity-bound", "compute-bound", "concurrency-cap", "under-loaded"}, uses: append(capacity, sigPeakFLOPs),
			when: func(s *Signals) bool { return s.computeSaturated() && s.kvLimited() && s.queued() }, advise: computeAndKVBound},
		{name: "kv-capacity-bound", answers: []Question{QKV}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: capacity,
			when: func(s *Signals) bool { return s.kvLimited() && s.queued() }, advise: kvCapacityBound},
		{name: "compute-bound", answers: []Question{QCompute}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: append(capacity, sigPeakFLOPs),
			when: func(s *Signals) bool { return s.computeSaturated() && s.queued() }, advise: computeBound},
		{name: "host-bound", answers: []Question{QScheduler}, severity: Warning, excludes: []string{"concurrency-cap", "under-loaded"}, uses: []string{sigHostShare, sigEngineBusy, sigMaxSeqs},
			when: (*Signals).hostBound, advise: hostBound},
		{name: "concurrency-cap", answers: []Question{QScheduler}, severity: Warning, uses: []string{sigBudget, sigMaxSeqs, sigBusy},
			when: func(s *Signals) bool { return s.capSuggestion() > 0 }, advise: concurrencyCap},
		{name: "under-loaded", answers: []Question{QScheduler}, severity: Info, uses: []string{sigBusy},
			when: (*Signals).noWork, advise: underLoaded},
		{name: "preemption-storm", answers: []Question{QKV}, severity: Warning,
			when: func(s *Signals) bool { return s.v(sigPreemptRate) > s.th.PreemptionRate }, advise: preemptionStorm},
		{name: "prefill-bound", severity: Warning, excludes: []string{"decode-bound"}, when: prefillBoundWhen, advise: prefillBound},
		{name: "decode-bound", severity: Warning, when: func(s *Signals) bool { return s.decodeFit() != nil }, advise: decodeBound},
		{name: "queueing-dominates", severity: Warning, when: func(s *Signals) bool { return s.v(sigQueueShare) > s.th.QueueShare }, advise: queueingDominates},
		{name: "client-timeouts", severity: Warning, when: clientTimeoutsWhen, advise: clientTimeouts},
		{name: "prefix-caching", severity: Warning, excludes: []string{"prefix-reuse"}, when: func(s *Signals) bool { return s.prefixAdvice() != 0 }, advise: prefixCaching},
		{name: "prefix-reuse", severity: Info, uses: []string{sigHitRate}, when: prefixReuseWhen, advise: prefixReuse},
		{name: "speculation-costly", severity: Warning, uses: []string{sigSpecAcceptance, sigBusy, sigSpecVerifyPerStep},
			when: func(s *Signals) bool { return s.specCost() != "" }, advise: speculationCostly},
	}
}

// Diagnose runs every rule over the window with the default thresholds;
// client is a bench result's view, or nil.
func Diagnose(w *Window, client *ClientView) *Report {
	return DiagnoseWith(w, client, DefaultThresholds())
}

// DiagnoseWith runs every rule over the window with th: the three answers
// first, then the findings that fire and are not excluded, worst first.
func DiagnoseWith(w *Window, client *ClientView, th Thresholds) *Report {
	s := evaluate(w, th)
	s.client = client
	rep := &Report{Source: w.Source, Target: w.Target, Selector: w.Selector, Readings: len(w.Snapshots),
		Missed: w.Missed, Engine: "glassbox", Client: client, Findings: []Finding{}}
	if n := len(w.Snapshots); n > 0 {
		rep.Start, rep.End = w.Snapshots[0].T, w.Snapshots[n-1].T
	}
	if !w.Has(metricspec.ExecutorBusySeconds) {
		rep.Engine = "vllm"
	}
	if len(w.Snapshots) == 1 {
		rep.Questions = s.snapshotAnswers()
		rep.Findings = append(rep.Findings, singleReading(s))
		return rep
	}
	d := &diagnosis{}
	var fired []rule
	excluded := map[string]bool{}
	for _, r := range rules() {
		if excluded[r.name] || !r.when(s) {
			continue
		}
		fired = append(fired, r)
		d.names = append(d.names, r.name)
		for _, x := range r.excludes {
			excluded[x] = true
		}
	}
	for _, r := range fired {
		f := r.advise(s, d)
		f.Name, f.Answers = r.name, r.answers
		if f.Severity < r.severity {
			f.Severity = r.severity
		}
		f.Sources, f.Confidence = s.provenance(r.uses)
		rep.Findings = append(rep.Findings, *f)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Severity > rep.Findings[j].Severity })
	rep.Questions = s.answers()
	return rep
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

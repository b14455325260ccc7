// Package doctor is `glassbox doctor`'s pure core: a Diagnoser (the
// thresholds and what the user says of the target) reads a serving
// engine's signal window and names the bottleneck with evidence (the
// numbers and the PromQL that reproduces each one), the inference and the
// recommended change (DESIGN.md §5, docs/doctor.md). Verify judges a
// recommendation by replaying the observed load through a Replay its
// caller provides.
//
// It owns the window's shape and schema (what a source must read), the
// signal registry, the thresholds, the rules, the report and the verdict
// of a replay. It does no I/O: internal/source reads windows (a direct
// scrape, Prometheus, a saved scrape), cmd/glassbox wires a source to a
// Diagnoser and runs the replays. It must never import net/http or
// internal/source (internal/layering enforces this), nor the engine side
// (engine, sched, kvcache, an executor), nor internal/metrics; it names the
// few families it reads itself (names.go). It reads no flags and no
// environment.
package doctor

import (
	"sort"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Diagnoser is the doctor: thresholds and hints in, and then a window in,
// a diagnosis out. Each window's signals are evaluated once, and the
// report keeps them (Report.Signals). The zero value has zero thresholds:
// make one with NewDiagnoser.
type Diagnoser struct {
	th    Thresholds
	hints Hints
}

// Hints describe the target beyond its series; zero is unknown. A vLLM
// server exports neither its GPU nor its scheduler limits: the user says
// them (--gpu, --max-num-seqs, --max-num-batched-tokens).
type Hints struct {
	GPU                 string // a hardware profile name, for peak FLOP/s and bandwidth
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// Quantization is the target's --quantization ("" or "fp8"): FP8
	// weights run their GEMMs at the GPU's FP8 peak, which MFU and the
	// roofline are then read against.
	Quantization string
}

// NewDiagnoser is a doctor with th (DefaultThresholds, or the user's) and
// hints.
func NewDiagnoser(th Thresholds, hints Hints) Diagnoser {
	return Diagnoser{th: th, hints: hints}
}

// Thresholds are the numbers d compares signals with.
func (d Diagnoser) Thresholds() Thresholds { return d.th }

// Evaluate resolves every signal of the registry over w: what the live
// page charts of a window it does not diagnose.
func (d Diagnoser) Evaluate(w *Window) *Signals { return evaluate(w, d.th, d.hints) }

// Diagnose evaluates the window's signals once and runs every rule over
// them: the three answers first, then the findings that fire and are not
// excluded, worst first. client is a bench result's view, or nil.
func (d Diagnoser) Diagnose(w *Window, client *ClientView) *Report {
	s := evaluate(w, d.th, d.hints)
	s.client = client
	rep := &Report{Source: w.Source, Target: w.Target, Selector: w.Selector, Readings: len(w.Snapshots),
		Missed: w.Missed, Engine: "glassbox", Client: client, Findings: []Finding{}, signals: s}
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
	dg := &diagnosis{}
	var fired []rule
	excluded := map[string]bool{}
	for _, r := range rules() {
		if excluded[r.name] || !r.when(s) {
			continue
		}
		fired = append(fired, r)
		dg.names = append(dg.names, r.name)
		for _, x := range r.excludes {
			excluded[x] = true
		}
	}
	for _, r := range fired {
		f := r.advise(s, dg)
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

// Report is the doctor's answer.
type Report struct {
	Source   string    `json:"source"` // metrics or prometheus
	Target   string    `json:"target"`
	Selector string    `json:"selector"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Readings int       `json:"readings"`
	Missed   int       `json:"missed_readings"`
	Engine   string    `json:"engine"` // glassbox or vllm (no glassbox_* series)
	// Questions are the three answers every report opens with; nil only
	// for a fleet's own report, whose instances each have theirs.
	Questions    *Questions    `json:"questions,omitempty"`
	Findings     []Finding     `json:"findings"`
	Client       *ClientView   `json:"client,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
	// Fleet holds every instance's report when the selector matched
	// several (Findings then holds the fleet's own).
	Fleet *Fleet `json:"fleet,omitempty"`

	// signals are the window's, as the rules read them; nil for a fleet's
	// own report.
	signals *Signals
}

// Signals are the signals the report was drawn from, so that nothing
// evaluates its window again (the live page charts them); nil for a
// fleet's own report.
func (r *Report) Signals() *Signals { return r.signals }

// Worst is the highest severity among the findings (Info with none).
func (r *Report) Worst() Severity {
	worst := Info
	if r.Fleet != nil {
		worst = r.Fleet.worst()
	}
	for _, f := range r.Findings {
		worst = max(worst, f.Severity)
	}
	return worst
}

// ExitCode is the process status docs/doctor.md documents: 0 nothing
// above info, 1 a warning, 2 something critical. (3, a usage or read
// error, is cmd's.)
func (r *Report) ExitCode() int {
	switch r.Worst() {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Names lists the findings' names, in report order.
func (r *Report) Names() []string {
	out := make([]string, len(r.Findings))
	for i, f := range r.Findings {
		out[i] = f.Name
	}
	return out
}

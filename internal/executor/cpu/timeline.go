package cpu

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// The executor's own phases around the forward pass's (model.Phase*).
const (
	phaseSample = "sample" // sampling (and verifying drafts), spread over the threads
	phaseDraft  = "draft"  // the draft model's passes, nested inside
)

// timeline times a step's phases with the wall clock while a profile
// records (TimeKernels): it is the runners' model.Tracer and takes the
// executor's own phases. Its methods do nothing on a nil timeline, which
// is the executor's state while no profile records.
type timeline struct {
	start time.Time
	open  []int // indexes in recs of the phases begun and not ended
	recs  []engine.KernelTime
}

var _ model.Tracer = (*timeline)(nil)

// reset starts a step's timeline now.
func (t *timeline) reset() {
	if t == nil {
		return
	}
	t.start, t.open, t.recs = time.Now(), t.open[:0], t.recs[:0]
}

// Begin opens a phase inside the one open, if any.
func (t *timeline) Begin(name string) {
	if t == nil {
		return
	}
	t.open = append(t.open, len(t.recs))
	t.recs = append(t.recs, engine.KernelTime{Name: name, Start: time.Since(t.start)})
}

// End closes the phase begun last.
func (t *timeline) End() {
	if t == nil || len(t.open) == 0 {
		return
	}
	i := t.open[len(t.open)-1]
	t.open = t.open[:len(t.open)-1]
	t.recs[i].Duration = time.Since(t.start) - t.recs[i].Start
}

// finish closes what an error left open and returns the step's phases.
func (t *timeline) finish() []engine.KernelTime {
	if t == nil {
		return nil
	}
	for len(t.open) > 0 {
		t.End()
	}
	return t.recs
}

// TimeKernels turns the timeline on or off (engine.KernelTimer): while
// on, Execute reports its phases in StepResult.Kernels — per layer the
// norms, the QKV, output and MLP matmuls, RoPE with the K/V write and
// attention, then the LM head, sampling and any drafting — measured
// with the wall clock; while off it measures nothing.
func (e *Executor) TimeKernels(on bool) {
	switch {
	case on && e.tl == nil:
		e.tl = &timeline{}
	case !on:
		e.tl = nil
	}
	var tr model.Tracer
	if e.tl != nil {
		tr = e.tl
	}
	e.runner.Trace = tr
	if e.draft != nil {
		e.draft.runner.Trace = tr
	}
}

var _ engine.KernelTimer = (*Executor)(nil)

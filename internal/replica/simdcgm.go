package replica

import (
	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// simCounters shows the simulated dcgm-exporter each engine step: dcgm
// knows no engine, so the wiring turns a StepEvent into the dcgm.Step it
// reads (execution starts after the step's scheduling), and the activity
// the simulated executor carried on the step back into the cost model's.
type simCounters struct{ e *dcgm.Exporter }

var _ engine.Observer = simCounters{}

func (c simCounters) ObserveStep(s *engine.StepEvent) {
	c.e.Observe(dcgm.Step{Start: s.Start.Add(s.ScheduleTime), Busy: s.ExecuteTime,
		Tokens: s.NumTokens, Sampled: s.GenerationTokens, Activity: costmodel.Activity(s.Activity)})
}

// ObserveFinished: requests leave no trace on a GPU's counters.
func (simCounters) ObserveFinished(*engine.FinishedEvent) {}

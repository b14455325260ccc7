package engine

// Observers fans events out to several observers, in order, on the engine
// goroutine: metrics, tracing and the profiler each see every event. Each
// must not block, as for a single Observer.
type Observers []Observer

// ObserveStep passes s to every observer.
func (os Observers) ObserveStep(s *StepEvent) {
	for _, o := range os {
		o.ObserveStep(s)
	}
}

// ObserveFinished passes f to every observer.
func (os Observers) ObserveFinished(f *FinishedEvent) {
	for _, o := range os {
		o.ObserveFinished(f)
	}
}

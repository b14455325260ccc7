package metrics

import (
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

func benchStep() *engine.StepEvent {
	t0 := time.Now()
	return &engine.StepEvent{
		Start: t0, End: t0.Add(20 * time.Millisecond), ExecuteTime: 15 * time.Millisecond,
		NumSeqs: 64, NumTokens: 576, PromptTokens: 512, CachedTokens: 128, GenerationTokens: 64,
		IterationTokens: 448, PrefixQueries: 512, PrefixHits: 128,
		TTFTs: make([]float64, 4), ITLs: make([]float64, 60), FLOPs: 1e13,
	}
}

func benchFinished() *engine.FinishedEvent {
	t0 := time.Now()
	return &engine.FinishedEvent{
		Reason: engine.FinishStop, PromptTokens: 512, CachedTokens: 128, GenerationTokens: 200, MaxTokens: 256,
		Timing: engine.Timing{Arrival: t0, Queued: t0, FirstScheduled: t0.Add(time.Millisecond),
			FirstToken: t0.Add(50 * time.Millisecond), LastToken: t0.Add(3 * time.Second), Finished: t0.Add(3 * time.Second)},
	}
}

// TestObserveDoesNotAllocate guards the engine goroutine: the Observer
// methods must stay allocation-free for the common (n = 1) case.
func TestObserveDoesNotAllocate(t *testing.T) {
	m, _ := newTestMetrics(t, testConfig())
	s, f := benchStep(), benchFinished()
	if a := testing.AllocsPerRun(100, func() { m.ObserveStep(s) }); a != 0 {
		t.Errorf("ObserveStep allocates %v times per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { m.ObserveFinished(f) }); a != 0 {
		t.Errorf("ObserveFinished allocates %v times per call", a)
	}
}

func BenchmarkObserveStep(b *testing.B) {
	m, _ := newTestMetrics(b, testConfig())
	s := benchStep()
	for b.Loop() {
		m.ObserveStep(s)
	}
}

func BenchmarkObserveFinished(b *testing.B) {
	m, _ := newTestMetrics(b, testConfig())
	f := benchFinished()
	for b.Loop() {
		m.ObserveFinished(f)
	}
}

func BenchmarkScrape(b *testing.B) {
	m, reg := newTestMetrics(b, testConfig())
	m.ObserveStep(benchStep())
	for b.Loop() {
		scrape(b, reg)
	}
}

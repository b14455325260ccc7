package engine

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// timedExec is a KernelTimer: while on, each step reports two nested
// parts.
type timedExec struct {
	countExec
	on      bool
	toggles []bool
	kernels []KernelTime
}

func (x *timedExec) TimeKernels(on bool) { x.on = on; x.toggles = append(x.toggles, on) }

func (x *timedExec) Execute(b *Batch, r *StepResult) error {
	if x.on {
		x.kernels = append(x.kernels[:0], KernelTime{Name: "layer 0", Duration: time.Millisecond},
			KernelTime{Name: "attention", Start: 100 * time.Microsecond, Duration: 200 * time.Microsecond})
		r.Kernels = x.kernels
	}
	return x.countExec.Execute(b, r)
}

// kernelCounts records how many kernels each step event carried.
type kernelCounts struct {
	mu     sync.Mutex
	counts []int
	names  []string
}

func (k *kernelCounts) ObserveStep(ev *StepEvent) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.counts = append(k.counts, len(ev.Kernels))
	for _, kt := range ev.Kernels {
		k.names = append(k.names, kt.Name)
	}
}
func (k *kernelCounts) ObserveFinished(*FinishedEvent) {}

func (k *kernelCounts) take() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.counts
	k.counts = nil
	return c
}

// TestKernelTimerFollowsTheProfile: the executor times its kernels only
// while a profile records, is told once per change, and the step events
// carry its kernels then and none otherwise.
func TestKernelTimerFollowsTheProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var recording atomic.Bool
		cfg := testConfig()
		cfg.Profiling = recording.Load
		x, obs := &timedExec{}, &kernelCounts{}
		e, stop := start(t, cfg, x, obs)
		defer stop()
		run := func(id string) []int {
			s, err := e.Submit(&Request{ID: id, Prompt: prompt(4, 0), Params: params(3)})
			if err != nil {
				t.Fatal(err)
			}
			collect(s)
			return obs.take()
		}
		if c := run("before"); slices.ContainsFunc(c, func(n int) bool { return n != 0 }) {
			t.Errorf("kernels %v before any profile", c)
		}
		recording.Store(true)
		if c := run("during"); len(c) == 0 || slices.ContainsFunc(c, func(n int) bool { return n != 2 }) {
			t.Errorf("kernels %v while recording, want 2 a step", c)
		}
		recording.Store(false)
		if c := run("after"); slices.ContainsFunc(c, func(n int) bool { return n != 0 }) {
			t.Errorf("kernels %v after the profile", c)
		}
		if !slices.Equal(x.toggles, []bool{true, false}) {
			t.Errorf("TimeKernels calls %v, want on then off", x.toggles)
		}
		if !slices.Contains(obs.names, "attention") {
			t.Errorf("names %v", obs.names)
		}
	})
}

// TestNoProfilerNoTiming: without Config.Profiling a KernelTimer is never
// switched on.
func TestNoProfilerNoTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := &timedExec{}
		e, stop := start(t, testConfig(), x, nil)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(4, 0), Params: params(3)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		if len(x.toggles) != 0 {
			t.Errorf("TimeKernels called %v without a profiler", x.toggles)
		}
	})
}

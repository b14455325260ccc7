package profiler

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// stepClock is a virtual engine clock that moves only when slept on, an
// hour ahead of the recording's wall-clock start.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time        { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) Sleep(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// kernelExec takes a virtual millisecond a step and, while timed,
// reports a layer holding attention and an MLP, the LM head, and a part
// that runs past the step's end.
type kernelExec struct {
	clock *stepClock
	on    bool
	ks    []engine.KernelTime
}

func (x *kernelExec) TimeKernels(on bool) { x.on = on }

func (x *kernelExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	x.clock.Sleep(time.Millisecond)
	for i, s := range b.Seqs {
		r.Samples[i] = sampling.Result{Token: s.History[len(s.History)-1] + 1}
	}
	if x.on {
		us := time.Microsecond
		x.ks = append(x.ks[:0],
			engine.KernelTime{Name: "layer 0", Start: 0, Duration: 600 * us},
			engine.KernelTime{Name: "attention", Start: 100 * us, Duration: 200 * us},
			engine.KernelTime{Name: "mlp", Start: 300 * us, Duration: 300 * us},
			engine.KernelTime{Name: "lm_head", Start: 600 * us, Duration: 300 * us},
			engine.KernelTime{Name: "overrun", Start: 950 * us, Duration: 2 * time.Millisecond})
		r.Kernels = x.ks
	}
	return nil
}

// perfettoNS is a time in the trace as Perfetto's JSON importer reads it:
// microseconds times 1000, truncated.
func perfettoNS(us float64) int64 { return int64(us * 1000) }

// checkNesting checks that the complete (X) events of each track nest as
// a reader that truncates to nanoseconds sees them: sorted by start (file
// order among equals), each either inside the one open or after it.
func checkNesting(t *testing.T, evs []event) {
	t.Helper()
	type span struct {
		name       string
		start, end int64
	}
	tracks := map[[2]int][]span{}
	for _, e := range evs {
		if e.Ph != "X" {
			continue
		}
		s := perfettoNS(e.Ts)
		tracks[[2]int{e.Pid, e.Tid}] = append(tracks[[2]int{e.Pid, e.Tid}], span{e.Name, s, s + perfettoNS(*e.Dur)})
	}
	for track, spans := range tracks {
		slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		var open []span
		for _, s := range spans {
			for len(open) > 0 && open[len(open)-1].end <= s.start {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.end > open[len(open)-1].end {
				p := open[len(open)-1]
				t.Errorf("track %v: %s [%d, %d] starts inside %s [%d, %d] and ends after it", track, s.name, s.start, s.end, p.name, p.start, p.end)
			}
			open = append(open, s)
		}
	}
}

// TestKernelSlicesNestInExecute: a KernelTimer's parts are laid inside
// each step's execute slice, where they ran, clipped to it, and the
// trace nests as Perfetto reads it; the executor times only while the
// profile records.
func TestKernelSlicesNestInExecute(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	clk := &stepClock{t: time.Now().Add(time.Hour)}
	x := &kernelExec{clock: clk}
	cfg := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 16, MaxModelLen: 64, BlockSize: 4, NumBlocks: 32, MaxWaiting: 10,
		EOS: []int{-1}, Clock: clk, Profiling: p.Recording}
	eng, err := engine.New(cfg, x, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	serve := func(id string) {
		params := sampling.Defaults()
		params.MaxTokens = 5
		s, err := eng.Submit(&engine.Request{ID: id, Prompt: []int{1, 2, 3}, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, ok := s.Next(context.Background()); !ok {
				return
			}
		}
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	serve("a")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	serve("b") // after the profile: the executor is told to stop on this step
	if x.on {
		t.Error("the executor still times its kernels after the profile")
	}
	tf := readTrace(t, dir)
	checkNesting(t, tf.TraceEvents)
	steps := int(tf.OtherData["steps"].(float64))
	var execs []event
	kernels := map[string][]event{}
	for _, e := range tf.TraceEvents {
		switch {
		case e.Name == "execute":
			execs = append(execs, e)
		case e.Cat == "kernel":
			kernels[e.Name] = append(kernels[e.Name], e)
		}
	}
	if steps == 0 || len(execs) != steps {
		t.Fatalf("%d execute slices for %d steps", len(execs), steps)
	}
	for name, want := range map[string][2]float64{
		"layer 0": {0, 600}, "attention": {100, 200}, "mlp": {300, 300}, "lm_head": {600, 300}, "overrun": {950, 50}, // clipped at the step's end
	} {
		got := kernels[name]
		if len(got) != steps {
			t.Errorf("%d %q slices, want one a step (%d)", len(got), name, steps)
			continue
		}
		for i, k := range got {
			off, d := k.Ts-execs[i].Ts, *k.Dur
			if math.Abs(off-want[0]) > 1e-9 || math.Abs(d-want[1]) > 1e-9 || k.Pid != pidEngine || k.Tid != tidLoop {
				t.Errorf("step %d: %s at +%v µs for %v µs on %d/%d, want +%v for %v on the loop track", i, name, off, d, k.Pid, k.Tid, want[0], want[1])
			}
		}
	}
}

// TestTraceTimesSurviveTruncation: the trace's times are on a grid that a
// reader truncating µs×1000 to nanoseconds reads back exactly (1.001 µs
// would read as 1000 ns).
func TestTraceTimesSurviveTruncation(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	rec := &recording{start: start}
	for i := range 2000 {
		at := start.Add(time.Duration(i) * 1001 * time.Nanosecond)
		rec.steps = append(rec.steps, step{start: at, end: at.Add(1001 * time.Nanosecond), schedule: 1, execute: 1000})
	}
	for _, e := range buildEvents(rec) {
		if e.Ph != "X" {
			continue
		}
		for _, v := range []float64{e.Ts, *e.Dur} {
			if ns := perfettoNS(v); float64(ns) != v*1000 || ns%int64(tick) != 0 {
				t.Fatalf("%s: %v µs reads back as %d ns", e.Name, v, ns)
			}
		}
	}
	checkNesting(t, buildEvents(rec))
}

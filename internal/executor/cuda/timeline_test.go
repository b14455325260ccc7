package cuda

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// fakeEvents is an eventClock whose n-th mark lands at at(n); failAt
// fails that mark.
type fakeEvents struct {
	at     func(n int) time.Duration
	n      int
	failAt int
	resets int
}

func (f *fakeEvents) mark() (int, error) {
	if f.n == f.failAt {
		return 0, errors.New("cuEventRecord: CUDA_ERROR_LAUNCH_FAILED (719)")
	}
	f.n++
	return f.n - 1, nil
}

func (f *fakeEvents) between(a, b int) (time.Duration, error) { return f.at(b) - f.at(a), nil }
func (f *fakeEvents) reset()                                  { f.n = 0; f.resets++ }

// oneLayer drives a timeline as forward does a layer: the layer's span
// around a kernel and a GEMM, then the LM head's GEMM and sampling.
func oneLayer(d *Device) {
	tl := d.tl
	tl.begin(tl.layer(0))
	tl.begin("rmsnorm_bf16")
	tl.end()
	tl.begin("qkv_proj")
	tl.end()
	tl.end()
	tl.begin("lm_head")
	tl.end()
	tl.begin("sample")
	tl.end()
}

// TestTimelineTimesEachLaunch: the spans come out in the order they
// began, with the GPU times between their events, from the step's first
// event; the layer holds its kernels.
func TestTimelineTimesEachLaunch(t *testing.T) {
	// Mark n lands at n×10 µs, plus 1 µs for each mark after the origin
	// (so no two spans share a time by accident).
	clk := &fakeEvents{at: func(n int) time.Duration {
		return time.Duration(n)*10*time.Microsecond + time.Duration(min(n, 1))*time.Microsecond
	}, failAt: -1}
	tl := &timeline{clk: clk}
	d := &Device{}
	for step := range 2 {
		tl.start()
		d.tl = tl
		oneLayer(d)
		got := tl.finish()
		us := func(n int) time.Duration { return clk.at(n) - clk.at(0) }
		want := []engine.KernelTime{
			{Name: "layer 0", Start: us(1), Duration: us(6) - us(1)},
			{Name: "rmsnorm_bf16", Start: us(2), Duration: us(3) - us(2)},
			{Name: "qkv_proj", Start: us(4), Duration: us(5) - us(4)},
			{Name: "lm_head", Start: us(7), Duration: us(8) - us(7)},
			{Name: "sample", Start: us(9), Duration: us(10) - us(9)},
		}
		if !slices.Equal(got, want) {
			t.Errorf("step %d: %v\nwant %v", step, got, want)
		}
	}
	if clk.resets != 2 {
		t.Errorf("the event pool was reset %d times for 2 steps", clk.resets)
	}
}

// TestTimelineLostStep: a failed event loses the step's timeline, which
// says so in the trace, not the step; the next step times again.
func TestTimelineLostStep(t *testing.T) {
	clk := &fakeEvents{at: func(n int) time.Duration { return time.Duration(n) * time.Microsecond }, failAt: 3}
	tl := &timeline{clk: clk}
	d := &Device{tl: tl}
	tl.start()
	oneLayer(d)
	got := tl.finish()
	if len(got) != 1 || !strings.Contains(got[0].Name, "kernel timing lost: cuEventRecord") {
		t.Errorf("a failed event: %v", got)
	}
	clk.failAt = -1
	tl.start()
	oneLayer(d)
	if got := tl.finish(); len(got) != 5 {
		t.Errorf("the step after: %v", got)
	}
	// An unbalanced timeline (a bug) is reported as lost too.
	tl.start()
	tl.begin("layer 0")
	if got := tl.finish(); len(got) != 1 || !strings.Contains(got[0].Name, "left open") {
		t.Errorf("an open span: %v", got)
	}
}

// TestTimelineOffIsNil: without a profile the device's timeline is nil and
// every call on it does nothing.
func TestTimelineOffIsNil(t *testing.T) {
	d := &Device{}
	d.tl.begin("x")
	d.tl.end()
	e := planExecutor(true)
	e.TimeKernels(true)
	e.TimeKernels(false)
	if e.timing || e.dev.tl != nil {
		t.Error("timing left on")
	}
}

// TestTimedDecodeRunsEagerly: while the kernels are timed a decode step
// does not replay a graph (it cannot be split into kernels); after, it
// does again.
func TestTimedDecodeRunsEagerly(t *testing.T) {
	e := planExecutor(true)
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	var b engine.Batch
	for i := range 3 {
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{i + 1}, Pos: 20, BlockTable: []int{2 * i, 2*i + 1}, Sample: true, Params: &greedy})
	}
	b.NumTokens = 3
	for _, c := range []struct {
		timing bool
		bucket int
	}{{false, 4}, {true, 0}, {false, 4}} {
		e.TimeKernels(c.timing)
		if err := e.plan(&b); err != nil {
			t.Fatal(err)
		}
		if e.p.bucket != c.bucket {
			t.Errorf("timing %v: graph bucket %d, want %d", c.timing, e.p.bucket, c.bucket)
		}
	}
}

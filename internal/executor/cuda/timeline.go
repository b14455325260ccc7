package cuda

import (
	"fmt"
	"strconv"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// The kernel timeline: while a profile records (TimeKernels), an event is
// recorded on the stream around every launch and every cuBLASLt GEMM,
// and around each layer; once the step has finished, the times between
// them are the step's KernelTimes. A CUDA graph replays as one unit, so
// while the timeline is on, decode steps run kernel by kernel (plan). Off,
// it costs a nil check a launch.

// eventClock is what the timeline needs of the GPU: an event recorded on
// the stream now, and, once the stream has passed them, the time between
// two. The device's events in the executor; a fake in the tests.
type eventClock interface {
	mark() (int, error)
	between(a, b int) (time.Duration, error)
	reset() // the next step's marks start over
}

// span is a timed part: its name and the marks that open and close it
// (-1 while open).
type span struct {
	name       string
	begin, end int
}

// timeline gathers a step's spans, properly nested. Its methods do nothing
// on a nil timeline, which is the device's state while no profile records.
type timeline struct {
	clk    eventClock
	origin int   // the step's first mark: the device's start of the step
	err    error // the first failure: this step's timeline is lost, not the step
	open   []int
	spans  []span
	recs   []engine.KernelTime
	layers []string // "layer 0", …
}

// start begins a step's timeline where the step's start event is.
func (t *timeline) start() {
	t.clk.reset()
	t.err, t.open, t.spans = nil, t.open[:0], t.spans[:0]
	t.origin, t.err = t.clk.mark()
}

func (t *timeline) begin(name string) {
	if t == nil || t.err != nil {
		return
	}
	m, err := t.clk.mark()
	if err != nil {
		t.err = err
		return
	}
	t.open = append(t.open, len(t.spans))
	t.spans = append(t.spans, span{name: name, begin: m, end: -1})
}

func (t *timeline) end() {
	if t == nil || t.err != nil || len(t.open) == 0 {
		return
	}
	m, err := t.clk.mark()
	if err != nil {
		t.err = err
		return
	}
	i := t.open[len(t.open)-1]
	t.open = t.open[:len(t.open)-1]
	t.spans[i].end = m
}

// layer is layer l's span name, made once.
func (t *timeline) layer(l int) string {
	for len(t.layers) <= l {
		t.layers = append(t.layers, "layer "+strconv.Itoa(len(t.layers)))
	}
	return t.layers[l]
}

// finish reads the times once the stream has passed every mark. A step
// whose events failed reports that, in a part of its own, instead of
// its kernels.
func (t *timeline) finish() []engine.KernelTime {
	t.recs = t.recs[:0]
	if t.err == nil && len(t.open) > 0 {
		t.err = fmt.Errorf("%d spans left open", len(t.open))
	}
	for _, s := range t.spans {
		if t.err != nil {
			break
		}
		from, err := t.clk.between(t.origin, s.begin)
		if err != nil {
			t.err = err
			break
		}
		d, err := t.clk.between(s.begin, s.end)
		if err != nil {
			t.err = err
			break
		}
		t.recs = append(t.recs, engine.KernelTime{Name: s.name, Start: from, Duration: d})
	}
	if t.err != nil {
		return append(t.recs[:0], engine.KernelTime{Name: "kernel timing lost: " + t.err.Error()})
	}
	return t.recs
}

// deviceEvents is the executor's eventClock: a pool of CUDA events on
// its stream, grown as a step needs them. Its methods run on the
// device's thread.
type deviceEvents struct {
	ctx *cuda.Context
	s   *cuda.Stream
	evs []*cuda.Event
	n   int
}

func (d *deviceEvents) mark() (int, error) {
	if d.n == len(d.evs) {
		ev, err := d.ctx.NewEvent()
		if err != nil {
			return 0, err
		}
		d.evs = append(d.evs, ev)
	}
	if err := d.evs[d.n].Record(d.s); err != nil {
		return 0, err
	}
	d.n++
	return d.n - 1, nil
}

func (d *deviceEvents) between(a, b int) (time.Duration, error) {
	ms, err := d.evs[b].Elapsed(d.evs[a])
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

func (d *deviceEvents) reset() { d.n = 0 }

func (d *deviceEvents) destroy() {
	for _, ev := range d.evs {
		ev.Destroy()
	}
	d.evs, d.n = nil, 0
}

// TimeKernels turns the kernel timeline on or off (engine.KernelTimer):
// while on, Execute reports every kernel's and GEMM's GPU time, grouped
// by layer, in StepResult.Kernels, and decode steps run eagerly (a
// graph's replay cannot be split into its kernels).
func (e *Executor) TimeKernels(on bool) { e.timing = on }

var _ engine.KernelTimer = (*Executor)(nil)

package tensor

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// countTask records how often each item was run and by which workers.
type countTask struct {
	hits    []atomic.Int32
	workers []atomic.Int32
}

func (c *countTask) Run(worker, lo, hi int) {
	c.workers[worker].Add(1)
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

// TestPoolCoversEveryItemOnce runs many operations of many shapes through
// pools of several sizes: every item runs exactly once per operation, and
// only valid worker indices appear.
func TestPoolCoversEveryItemOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		p := NewPool(threads)
		if p.Size() != threads {
			t.Errorf("Size() = %d, want %d", p.Size(), threads)
		}
		for op := range 300 {
			total, chunk := 1+op*7%257, 1+op%13
			c := &countTask{hits: make([]atomic.Int32, total), workers: make([]atomic.Int32, threads)}
			p.Run(c, total, chunk)
			for i := range c.hits {
				if got := c.hits[i].Load(); got != 1 {
					t.Fatalf("threads %d op %d: item %d ran %d times", threads, op, i, got)
				}
			}
		}
		p.Close()
		p.Close() // idempotent
	}
}

// TestPoolUsesWorkers: an operation of many chunks is shared, so a worker
// other than the caller takes part at least once over a few runs.
func TestPoolUsesWorkers(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	c := &countTask{hits: make([]atomic.Int32, 1<<12), workers: make([]atomic.Int32, 2)}
	for i := 0; i < 1000 && c.workers[1].Load() == 0; i++ {
		p.Run(c, len(c.hits), 1)
	}
	if c.workers[1].Load() == 0 {
		t.Error("the worker never ran a chunk")
	}
}

// TestPoolTinyOpsStayOnCaller: a range within one chunk runs on the
// calling goroutine, without waking a worker.
func TestPoolTinyOpsStayOnCaller(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	c := &countTask{hits: make([]atomic.Int32, 16), workers: make([]atomic.Int32, 4)}
	p.Run(c, 16, 16)
	if c.workers[0].Load() != 1 || c.workers[1].Load()+c.workers[2].Load()+c.workers[3].Load() != 0 {
		t.Errorf("workers %v, want only the caller", c.workers)
	}
}

// TestPoolRunAfterClose runs on the caller alone.
func TestPoolRunAfterClose(t *testing.T) {
	p := NewPool(3)
	p.Close()
	c := &countTask{hits: make([]atomic.Int32, 100), workers: make([]atomic.Int32, 3)}
	p.Run(c, 100, 1)
	if c.workers[0].Load() != 1 {
		t.Errorf("workers %v after Close", c.workers)
	}
}

// TestPoolParkAndWake lets the workers park (a pool with no spinning) and
// checks that every operation still completes with their help.
func TestPoolParkAndWake(t *testing.T) {
	p := newPool(3, 0)
	defer p.Close()
	for range 200 {
		c := &countTask{hits: make([]atomic.Int32, 64), workers: make([]atomic.Int32, 3)}
		p.Run(c, 64, 1)
		for i := range c.hits {
			if c.hits[i].Load() != 1 {
				t.Fatalf("item %d ran %d times", i, c.hits[i].Load())
			}
		}
	}
}

// TestPoolLateWakeUp makes the submitter's wake-up land late: the worker
// sees the new operation before the submitter wakes it, serves it alone,
// and parks again; only then does the submitter's CAS find it parked and
// send a token. That token carries no new operation. Before the fix the
// worker served the operation a second time, reading the pool's fields
// while the next Run wrote them (a data race under -race) and counting
// itself out of pending twice, so a later Run could return before its
// items were done, or never.
func TestPoolLateWakeUp(t *testing.T) {
	p := newPool(2, 20000)
	defer p.Close()
	w := p.workers[0]
	c := &countTask{hits: make([]atomic.Int32, 2), workers: make([]atomic.Int32, 2)}
	check := func() {
		t.Helper()
		for i := range c.hits {
			if h := c.hits[i].Swap(0); h != 1 {
				t.Fatalf("item %d ran %d times when Run returned", i, h)
			}
		}
	}
	late := 0
	p.afterPublish = func() {
		// A worker still spinning serves the operation alone; then wait
		// for it to park, so that the wake-up below comes late.
		for p.pending.Load() != 0 {
			if w.state.Load() == workerParked {
				return // it parked before seeing the operation: a normal wake-up
			}
			runtime.Gosched()
		}
		for w.state.Load() != workerParked {
			runtime.Gosched()
		}
		late++
	}
	for range 200 {
		before := late
		p.Run(c, 2, 1) // the worker spins for a while after this
		check()
		if late != before {
			for w.state.Load() != workerParked { // it took the late token
				runtime.Gosched()
			}
			if n := p.pending.Load(); n != 0 {
				t.Fatalf("after a late wake-up the pool counts %d workers still in an operation that has ended", n)
			}
		}
	}
	if late == 0 {
		t.Fatal("no wake-up came late: the test did not arrange what it tests")
	}
}

func TestPoolZeroAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	c := &countTask{hits: make([]atomic.Int32, 256), workers: make([]atomic.Int32, 2)}
	if n := testing.AllocsPerRun(100, func() { p.Run(c, 256, 8) }); n != 0 {
		t.Errorf("%v allocations per Run, want 0", n)
	}
}

// TestEvenChunk: decode's chunks of a matrix bigger than one split evenly
// between the threads (to within one unit of rows), stay multiples of the
// unit (16, or AVX2's four runs of eight-row groups) near the size asked
// for, and a matrix within one chunk stays whole.
func TestEvenChunk(t *testing.T) {
	for _, unit := range []int{16, 32} {
		for _, c := range []struct{ rows, want, threads int }{{896, 288, 2}, {896, 48, 2}, {4864, 288, 2}, {4864, 53, 2}, {151936, 288, 2}, {896, 288, 3}, {1000, 64, 4}, {128, 288, 2}, {17, 16, 2}} {
			got := evenChunk(c.rows, c.want, unit, c.threads)
			if c.rows <= c.want {
				if got != c.want {
					t.Errorf("unit %d, %+v: chunk %d, want it whole", unit, c, got)
				}
				continue
			}
			if got%unit != 0 || got < c.want/2-unit || got > 2*max(c.want, unit) {
				t.Errorf("unit %d, %+v: chunk %d", unit, c, got)
			}
			chunks := (c.rows + got - 1) / got
			busiest := (chunks + c.threads - 1) / c.threads * got
			if ideal := (c.rows + c.threads - 1) / c.threads; busiest > ideal+got/2+unit {
				t.Errorf("unit %d, %+v: chunk %d leaves the busiest thread %d rows of %d (ideal %d)", unit, c, got, busiest, c.rows, ideal)
			}
		}
	}
}

// panicTask panics on the thread named by on, after making sure that a
// worker (not only the caller) takes part: the caller's chunk waits for a
// worker's.
type panicTask struct {
	on        int // 0: the caller; 1: a worker
	workerRan chan struct{}
	once      atomic.Bool
}

func (p *panicTask) Run(worker, lo, hi int) {
	if worker == 0 {
		if p.on == 0 {
			panic("caller's kernel")
		}
		<-p.workerRan
		return
	}
	if p.once.CompareAndSwap(false, true) {
		p.workerRan <- struct{}{} // buffered: the package's close shadows the builtin
		if p.on != 0 {
			panic(fmt.Sprintf("worker's kernel at %d", lo))
		}
	}
}

// TestPoolPanicIsRaisedOnTheCaller: a task that panics on a worker
// goroutine (which would end the process) or on the caller is raised by
// Run on its caller as a *KernelPanic with the panicking thread's stack,
// once every thread has left the operation; the pool works on after it.
func TestPoolPanicIsRaisedOnTheCaller(t *testing.T) {
	for _, on := range []int{0, 1} {
		p := NewPool(2)
		task := &panicTask{on: on, workerRan: make(chan struct{}, 1)}
		v := func() (v any) {
			defer func() { v = recover() }()
			p.Run(task, 2, 1)
			return nil
		}()
		kp, ok := v.(*KernelPanic)
		if !ok {
			t.Fatalf("panic on thread %d: Run raised %#v, want a *KernelPanic", on, v)
		}
		if (kp.Worker == 0) != (on == 0) || !strings.Contains(fmt.Sprint(kp.Value), "kernel") {
			t.Errorf("panic on thread %d: %+v", on, kp)
		}
		if !strings.Contains(string(kp.PanicStack()), "(*panicTask).Run") {
			t.Errorf("panic on thread %d: the stack does not show the task:\n%s", on, kp.Stack)
		}
		c := &countTask{hits: make([]atomic.Int32, 64), workers: make([]atomic.Int32, 2)}
		p.Run(c, 64, 1)
		for i := range c.hits {
			if c.hits[i].Load() != 1 {
				t.Fatalf("after the panic: item %d ran %d times", i, c.hits[i].Load())
			}
		}
		p.Close()
	}
}

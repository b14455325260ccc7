package tensor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Task is one parallel operation: Run is called with disjoint [lo, hi)
// ranges that together cover the range given to Pool.Run, from worker
// indices 0..Pool.Size()-1 (0 is the caller). Implement it on a pointer to
// a long-lived struct: converting a pointer to an interface does not
// allocate, so a step stays free of heap allocations.
type Task interface {
	Run(worker, lo, hi int)
}

// Pool is a fixed set of compute goroutines, created once per model runner
// and reused for every operation of every step: no per-op goroutine
// spawning. Work is handed out in chunks through an atomic counter and each
// Run ends with one barrier. Between operations the workers spin for a
// short while (operations follow each other within microseconds during a
// forward pass) and then park on a channel, so an idle server burns no CPU.
//
// Run must be called from one goroutine at a time; the pool's own
// goroutines end with Close. A task that panics on a worker does not take
// the process down: Run raises it again on its caller (a *KernelPanic),
// where the engine recovers it.
type Pool struct {
	workers []*poolWorker
	wg      sync.WaitGroup // worker goroutines, for Close

	// The current operation, published by the epoch increment.
	task      Task
	total     int
	chunk     int
	next      atomic.Int64 // next unclaimed item
	pending   atomic.Int32 // workers still inside the operation
	epoch     atomic.Uint64
	closed    atomic.Bool
	closeOnce sync.Once
	spinLimit int
	panicked  atomic.Pointer[KernelPanic] // the operation's first panic

	afterPublish func() // test seam: runs between publishing and waking
}

type poolWorker struct {
	state atomic.Int32 // workerRunning or workerParked
	wake  chan struct{}
}

const (
	workerRunning int32 = iota
	workerParked
)

// KernelPanic is a task's panic on one of the pool's threads, raised again
// by Run on its caller once every thread has left the operation: a panic
// on a worker goroutine would otherwise end the process, past any
// recover. It carries the stack of the thread it happened on.
type KernelPanic struct {
	Worker int // 0 is Run's caller
	Value  any
	Stack  []byte
}

func (p *KernelPanic) Error() string {
	return fmt.Sprintf("compute thread %d panicked: %v", p.Worker, p.Value)
}

// PanicStack is where the task panicked.
func (p *KernelPanic) PanicStack() []byte { return p.Stack }

// NewPool starts threads-1 worker goroutines (the caller of Run is the
// other thread). threads < 1 counts as 1.
func NewPool(threads int) *Pool { return newPool(threads, 20000) }

// newPool lets tests choose how long idle workers spin before parking.
func newPool(threads, spinLimit int) *Pool {
	p := &Pool{spinLimit: spinLimit}
	for range max(1, threads) - 1 {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
	}
	for i, w := range p.workers {
		p.wg.Add(1)
		go p.loop(i+1, w)
	}
	return p
}

// Size is the number of threads that run a task, the caller included.
func (p *Pool) Size() int { return len(p.workers) + 1 }

// Run calls t.Run over [0, total) in chunks of chunk items and returns when
// all of them are done. When the whole range fits in one chunk, or the pool
// has one thread, the caller runs it alone without waking anyone: tiny
// operations are cheaper than a barrier.
func (p *Pool) Run(t Task, total, chunk int) {
	if total <= 0 {
		return
	}
	chunk = max(1, chunk)
	if len(p.workers) == 0 || total <= chunk || p.closed.Load() {
		t.Run(0, 0, total)
		return
	}
	p.task, p.total, p.chunk = t, total, chunk
	p.next.Store(0)
	p.pending.Store(int32(len(p.workers)))
	p.epoch.Add(1) // publishes the fields above to the workers
	if p.afterPublish != nil {
		p.afterPublish()
	}
	for _, w := range p.workers {
		if w.state.CompareAndSwap(workerParked, workerRunning) {
			w.wake <- struct{}{}
		}
	}
	p.safeWork(0)
	for i := 0; p.pending.Load() != 0; i++ {
		if i > 64 {
			runtime.Gosched()
		}
	}
	p.task = nil // the pool must not keep the task's data reachable
	if kp := p.panicked.Swap(nil); kp != nil {
		panic(kp)
	}
}

// safeWork is work with a panic kept for Run to raise: the thread stops
// taking chunks, the others finish the operation's.
func (p *Pool) safeWork(worker int) {
	defer func() {
		if v := recover(); v != nil {
			p.panicked.CompareAndSwap(nil, &KernelPanic{Worker: worker, Value: v, Stack: debug.Stack()})
		}
	}()
	p.work(worker)
}

func (p *Pool) work(worker int) {
	for {
		hi := int(p.next.Add(int64(p.chunk)))
		lo := hi - p.chunk
		if lo >= p.total {
			return
		}
		p.task.Run(worker, lo, min(hi, p.total))
	}
}

func (p *Pool) loop(id int, w *poolWorker) {
	defer p.wg.Done()
	var seen uint64 // the epoch before any Run; Run may already have moved it
	for {
		if !p.await(w, seen) {
			return
		}
		seen = p.epoch.Load()
		if p.closed.Load() {
			return
		}
		p.safeWork(id)
		p.pending.Add(-1)
	}
}

// await returns once the epoch moves past seen (true) or the pool closes
// (false). It spins first, then parks; the state word makes sure a wake-up
// sent between the last check and the park is not lost. A wake-up can also
// come late: the submitter's CAS may land after this worker has already
// seen the epoch, served it and parked again. Such a token carries no new
// epoch, so the worker parks again instead of serving an operation twice
// (which would read the fields while the next Run writes them and count
// itself out of pending twice).
func (p *Pool) await(w *poolWorker, seen uint64) bool {
	for i := 0; i < p.spinLimit; i++ {
		if p.epoch.Load() != seen {
			return !p.closed.Load()
		}
		if i&63 == 63 {
			runtime.Gosched()
		}
	}
	for {
		w.state.Store(workerParked)
		if p.epoch.Load() != seen && w.state.CompareAndSwap(workerParked, workerRunning) {
			return !p.closed.Load()
		}
		<-w.wake // the submitter moved us to running and sent exactly one token
		if p.epoch.Load() != seen {
			return !p.closed.Load()
		}
	}
}

// Close stops the workers and waits for them. Run after Close runs on the
// caller alone. Close is idempotent.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.epoch.Add(1)
		for _, w := range p.workers {
			if w.state.CompareAndSwap(workerParked, workerRunning) {
				w.wake <- struct{}{}
			}
		}
		p.wg.Wait()
	})
}

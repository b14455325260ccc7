package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sched"
)

// Offload is the CPU KV offload tier (vLLM's --kv-offloading-size with the
// native backend); the zero value has none. The engine prices its
// transfers itself: each direction of the host link carries one transfer
// at a time, at Bandwidth, as vLLM's DMA copies run on their own streams
// beside the model's work.
type Offload struct {
	Blocks int // host blocks of BlockSize tokens
	// BlockBytes is one block's K/V over every GPU of the model, what a
	// transfer of it moves (vLLM's kv_offload_*_bytes count it so).
	BlockBytes int64
	// Bandwidth is the host link's bytes/s each way, every GPU's link
	// together (each moves its share of a block at once).
	Bandwidth float64
}

// Enabled reports whether there is a tier.
func (o Offload) Enabled() bool { return o.Blocks > 0 }

func (o Offload) validate(prefixCaching bool) error {
	switch {
	case o.Blocks < 0:
		return fmt.Errorf("the KV offload tier cannot hold %d blocks", o.Blocks)
	case o.Blocks == 0:
		return nil
	case !prefixCaching:
		return fmt.Errorf("--kv-offloading-size needs prefix caching: offloaded blocks are found by their prefix-cache hashes")
	case o.BlockBytes < 1 || !(o.Bandwidth > 0) || math.IsInf(o.Bandwidth, 0):
		return fmt.Errorf("the KV offload tier needs a block size in bytes and a host link bandwidth, got %d bytes at %v B/s", o.BlockBytes, o.Bandwidth)
	}
	return nil
}

// OffloadEvent is what the offload tier did since the previous step:
// transfers that completed (a load per request, a store per request and
// step, as vLLM's worker reports its jobs), the blocks of each store
// started, and stores dropped for want of an evictable host block.
type OffloadEvent struct {
	Loads, Stores      []Transfer
	StoreBlocks        []int
	AllocationFailures int
}

// Transfer is one completed copy between the GPU and host memory.
type Transfer struct {
	Bytes   float64
	Seconds float64
}

// OffloadStats is the tier at one moment, for the gauges: host blocks
// read by loads and written by stores in flight, blocks held, and the
// requests waiting on loads by stage (their transfer queued behind
// others on the link, copying, or done and waiting to run).
type OffloadStats struct {
	Blocks, Loading, Storing, Held int
	LoadsQueued, LoadsInFlight     int
	LoadsDone                      int
}

type loadJob struct {
	rs          *reqState
	start, done time.Time
	bytes       float64
}

type storeJob struct {
	blocks      int
	start, done time.Time
}

// transfers is the engine's side of the offload tier: the copies in
// flight on the host link and what completed since the last step. Engine
// goroutine only.
type transfers struct {
	cfg                 Offload
	loadFree, storeFree time.Time // when each direction of the link is next idle
	loads               []loadJob // in start order
	stores              []storeJob
	ev                  OffloadEvent
}

func (t *transfers) seconds(blocks int) float64 {
	return float64(int64(blocks)*t.cfg.BlockBytes) / t.cfg.Bandwidth
}

// startLoads queues the loads the step's plan started, each behind the
// previous on the link.
func (e *Engine) startLoads(p *sched.Plan, now time.Time) {
	t := e.xfer
	for _, q := range p.Loads {
		rs := e.slots[q.ID]
		n := q.LoadingBlocks()
		start := later(now, t.loadFree)
		done := start.Add(time.Duration(t.seconds(n) * float64(time.Second)))
		t.loadFree = done
		t.loads = append(t.loads, loadJob{rs: rs, start: start, done: done, bytes: float64(int64(n) * t.cfg.BlockBytes)})
		rs.loading = true
	}
}

// startStores queues the stores the step's Cache calls started: their
// blocks were computed by the step that ended at end.
func (e *Engine) startStores(end time.Time) {
	t := e.xfer
	ops, failures := e.kv.TakeStores()
	t.ev.AllocationFailures += failures
	for _, n := range ops {
		start := later(end, t.storeFree)
		done := start.Add(time.Duration(t.seconds(n) * float64(time.Second)))
		t.storeFree = done
		t.stores = append(t.stores, storeJob{blocks: n, start: start, done: done})
		t.ev.StoreBlocks = append(t.ev.StoreBlocks, n)
	}
}

// completeTransfers applies every transfer done by now: stored blocks
// become loadable, and loaded requests wait to run.
func (e *Engine) completeTransfers(now time.Time) {
	t := e.xfer
	if t == nil {
		return
	}
	n, blocks := 0, 0
	for n < len(t.stores) && !t.stores[n].done.After(now) {
		s := t.stores[n]
		blocks += s.blocks
		t.ev.Stores = append(t.ev.Stores, Transfer{Bytes: float64(int64(s.blocks) * t.cfg.BlockBytes), Seconds: s.done.Sub(s.start).Seconds()})
		n++
	}
	if n > 0 {
		e.kv.CompleteStores(blocks)
		t.stores = append(t.stores[:0], t.stores[n:]...)
	}
	kept := t.loads[:0]
	for _, l := range t.loads {
		if l.done.After(now) {
			kept = append(kept, l)
			continue
		}
		t.ev.Loads = append(t.ev.Loads, Transfer{Bytes: l.bytes, Seconds: l.done.Sub(l.start).Seconds()})
		l.rs.loading, l.rs.loaded = false, true
		e.sched.LoadDone(&l.rs.seq)
	}
	clear(t.loads[len(kept):])
	t.loads = kept
}

// dropLoad forgets the load of a request that ends mid-load (the
// scheduler frees its blocks and pins); the link stays busy until the
// copy would have ended, as the DMA already issued runs on.
func (e *Engine) dropLoad(rs *reqState) {
	t := e.xfer
	for i, l := range t.loads {
		if l.rs == rs {
			t.loads = append(t.loads[:i], t.loads[i+1:]...)
			break
		}
	}
	rs.loading = false
}

// nextLoad is when the earliest load in flight ends.
func (t *transfers) nextLoad() (time.Time, bool) {
	var first time.Time
	for i, l := range t.loads {
		if i == 0 || l.done.Before(first) {
			first = l.done
		}
	}
	return first, len(t.loads) > 0
}

// nextTransfer is when the earliest transfer in flight ends.
func (t *transfers) nextTransfer() (time.Time, bool) {
	first, ok := t.nextLoad()
	if len(t.stores) > 0 && (!ok || t.stores[0].done.Before(first)) {
		first, ok = t.stores[0].done, true
	}
	return first, ok
}

// takeEvent moves what completed since the last step into ev, reusing
// ev's slices.
func (t *transfers) takeEvent(ev *OffloadEvent) {
	ev.Loads = append(ev.Loads[:0], t.ev.Loads...)
	ev.Stores = append(ev.Stores[:0], t.ev.Stores...)
	ev.StoreBlocks = append(ev.StoreBlocks[:0], t.ev.StoreBlocks...)
	ev.AllocationFailures = t.ev.AllocationFailures
	t.ev.Loads, t.ev.Stores, t.ev.StoreBlocks, t.ev.AllocationFailures = t.ev.Loads[:0], t.ev.Stores[:0], t.ev.StoreBlocks[:0], 0
}

// stats is the tier now.
func (e *Engine) offloadStats(now time.Time) OffloadStats {
	t := e.xfer
	if t == nil {
		return OffloadStats{}
	}
	st := OffloadStats{Blocks: t.cfg.Blocks}
	st.Storing, st.Loading, st.Held = e.kv.HostState()
	for _, l := range t.loads {
		if l.start.After(now) {
			st.LoadsQueued++
		} else {
			st.LoadsInFlight++
		}
	}
	for _, q := range e.sched.Waiting() {
		if rs := e.slots[q.ID]; rs != nil && rs.loaded {
			st.LoadsDone++
		}
	}
	return st
}

// awaitLoad lets time pass to the end of the earliest load, when nothing
// else can run (Advance: the clock is the driver's).
func (e *Engine) awaitLoad() {
	if done, ok := e.xfer.nextLoad(); ok {
		if d := done.Sub(e.clock.Now()); d > 0 {
			e.clock.Sleep(d)
		}
	}
	e.completeTransfers(e.clock.Now())
}

// waitLoad is awaitLoad for Run: a submission or an abort that arrives
// meanwhile ends the wait, so that what can run runs. It takes the
// wake-up: Run drains next, and a wake-up given back would end the next
// wait at once, and every one after it (a spin for as long as the load
// lasts, for ever in a frozen clock).
func (e *Engine) waitLoad(ctx context.Context) {
	w, ok := e.clock.(waker)
	done, pending := e.xfer.nextLoad()
	if !ok || !pending {
		e.awaitLoad()
		return
	}
	if d := done.Sub(e.clock.Now()); d > 0 {
		select {
		case <-w.After(d):
		case <-e.wake:
		case <-ctx.Done():
		}
	}
	e.completeTransfers(e.clock.Now())
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// carried are the look-ups and preemptions of plans that ran no step (every
// sequence that could run waited on a load), reported with the next step.
type carried struct {
	prefixQueries, prefixHits, externalQueries, externalHits, externalLookups int
	preempted                                                                 []string
}

func (e *Engine) carry(p *sched.Plan, now time.Time) {
	c := &e.carried
	c.prefixQueries += p.PrefixQueries
	c.prefixHits += p.PrefixHits
	c.externalQueries += p.ExternalQueries
	c.externalHits += p.ExternalHits
	c.externalLookups += p.ExternalLookups
	e.preempt += uint64(len(p.Preempted))
	for _, q := range p.Preempted {
		rs := e.slots[q.ID]
		rs.loaded = false // as step's
		c.preempted = append(c.preempted, rs.req.ID)
		if e.cfg.RecordPhases {
			rs.phases = append(rs.phases, Phase{Kind: PhasePreempted, Start: now, End: now})
		}
	}
}

func (e *Engine) takeCarried(ev *StepEvent) {
	c := &e.carried
	ev.PrefixQueries += c.prefixQueries
	ev.PrefixHits += c.prefixHits
	ev.ExternalQueries += c.externalQueries
	ev.ExternalHits += c.externalHits
	ev.ExternalLookups += c.externalLookups
	ev.Preemptions += len(c.preempted)
	ev.Preempted = append(ev.Preempted, c.preempted...)
	*c = carried{preempted: c.preempted[:0]}
}

// settleTransfers lets the stores still in flight end before the engine
// idles, so that the tier's gauges do not stay at what the last step
// left (they are copies of a few milliseconds). A submission, an abort or
// ctx's end cuts the wait short (Run then serves it at once, as vLLM's
// asynchronous stores never hold its scheduler); the stores left end
// with a later step.
func (e *Engine) settleTransfers(ctx context.Context) {
	if e.xfer == nil {
		return
	}
	w, interruptible := e.clock.(waker)
	for {
		done, ok := e.xfer.nextTransfer()
		if !ok {
			return
		}
		if d := done.Sub(e.clock.Now()); d > 0 {
			if !interruptible {
				e.clock.Sleep(d)
			} else {
				select {
				case <-w.After(d):
				case <-e.wake:
					e.signal() // for Run's idle wait, which drains after it
					return
				case <-ctx.Done():
					return
				}
			}
		}
		e.completeTransfers(e.clock.Now())
	}
}

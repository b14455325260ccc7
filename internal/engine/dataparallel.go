package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// DPStatsInterval is how often vLLM's data-parallel coordinator publishes
// the engines' request counts to the API server (stats_update_interval_ms).
const DPStatsInterval = 100 * time.Millisecond

// Balancer picks the data-parallel rank of each new request as vLLM's API
// server does (DPLBAsyncMPClient): the rank of least waiting×4 + running,
// the first on a tie, from counts read at most every DPStatsInterval and
// counted up locally for each request sent meanwhile. Not safe for
// concurrent use.
type Balancer struct {
	counts [][2]int // waiting, running
	read   time.Time
}

// NewBalancer balances over n ranks.
func NewBalancer(n int) *Balancer { return &Balancer{counts: make([][2]int, n)} }

// Pick returns the rank for a request at now; counts reads a rank's
// waiting and running requests when the last reading is stale.
func (b *Balancer) Pick(now time.Time, counts func(rank int) (waiting, running int)) int {
	if b.read.IsZero() || now.Sub(b.read) >= DPStatsInterval {
		for i := range b.counts {
			w, r := counts(i)
			b.counts[i] = [2]int{w, r}
		}
		b.read = now
	}
	best := 0
	for i, c := range b.counts {
		if c[0]*4+c[1] < b.counts[best][0]*4+b.counts[best][1] {
			best = i
		}
	}
	b.counts[best][0]++ // until the next reading, as vLLM's client counts its own
	return best
}

// DataParallel is vLLM's --data-parallel-size behind one API server:
// engine ranks, each with its own KV cache, scheduler and executor, and a
// Balancer that sends each request (each sample of a group's prompt
// together) to one. Its methods are safe from any goroutine.
type DataParallel struct {
	ranks []*Engine
	mu    sync.Mutex
	lb    *Balancer
	clock Clock
}

// NewDataParallel balances over ranks (at least one), on the first rank's
// clock.
func NewDataParallel(ranks []*Engine) (*DataParallel, error) {
	if len(ranks) == 0 {
		return nil, errors.New("data parallel: no engine rank")
	}
	return &DataParallel{ranks: slices.Clone(ranks), lb: NewBalancer(len(ranks)), clock: ranks[0].clock}, nil
}

// Ranks are the engines, in rank order.
func (d *DataParallel) Ranks() []*Engine { return d.ranks }

// pick is the balancer's rank for the next request; a dead rank, while
// one is, so that every new request is refused with its reason (one rank
// dead is the server dead, as vLLM's engine client sees it).
func (d *DataParallel) pick() *Engine {
	for _, e := range d.ranks {
		if e.Health() != nil {
			return e
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.lb.Pick(d.clock.Now(), func(r int) (int, int) {
		st := d.ranks[r].Stats()
		return st.Waiting, st.Running
	})
	return d.ranks[i]
}

// Submit sends r to the balancer's rank.
func (d *DataParallel) Submit(r *Request) (*Stream, error) { return d.pick().Submit(r) }

// NewGroup starts a group whose prompts each go to the balancer's rank.
func (d *DataParallel) NewGroup(id string, n int) *Group {
	g := d.ranks[0].NewGroup(id, n)
	g.pick = d.pick
	return g
}

// Config is the ranks' configuration (they share one).
func (d *DataParallel) Config() Config { return d.ranks[0].Config() }

// Health is the first dead rank's error (nil while every rank serves):
// /health answers 503 when any rank died.
func (d *DataParallel) Health() error {
	for _, e := range d.ranks {
		if err := e.Health(); err != nil {
			return err
		}
	}
	return nil
}

// Closed reports whether the ranks have shut down.
func (d *DataParallel) Closed() bool { return d.ranks[0].Closed() }

// Snapshot joins the ranks' snapshots: their queues (in rank order), and
// their block pools and counters added up.
func (d *DataParallel) Snapshot(ctx context.Context) (*Snapshot, error) {
	var out *Snapshot
	for _, e := range d.ranks {
		s, err := e.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = s
			continue
		}
		out.Steps += s.Steps
		out.Preemptions += s.Preemptions
		out.Running = append(out.Running, s.Running...)
		out.Waiting = append(out.Waiting, s.Waiting...)
		b := &out.Blocks
		b.Total += s.Blocks.Total
		b.Free += s.Blocks.Free
		b.Cached += s.Blocks.Cached
		b.InUse += s.Blocks.InUse
		b.Usage = float64(b.InUse) / float64(max(b.Total, 1))
	}
	out.Config.NumBlocks = out.Blocks.Total
	return out, nil
}

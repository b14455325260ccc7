package engine

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// BlockEviction is one sampled GPU block's life, reported when its
// content is evicted, as vLLM's KVCacheMetricsCollector reports it: from
// allocation to eviction, from its last access (a prefix hit) to
// eviction, and the gaps between its last accesses (up to four kept).
type BlockEviction struct {
	Lifetime, Idle float64 // seconds
	Gaps           [3]float64
	NumGaps        int
}

// ReuseGaps are the gaps between the block's last accesses, in seconds.
func (b *BlockEviction) ReuseGaps() []float64 { return b.Gaps[:b.NumGaps] }

// blockLife is a sampled block's timestamps.
type blockLife struct {
	born, last time.Time
	accesses   [4]time.Time // the last accesses, oldest first
	n          int
}

// residency is the engine's kvcache.Tracker for --kv-cache-metrics: it
// samples a share of the blocks allocated, times them on the engine's
// clock (the step being planned) and keeps the evictions of sampled
// blocks for the step's event. Engine goroutine only.
type residency struct {
	rate   float64
	rng    *rand.Rand
	now    func() time.Time
	blocks map[int]*blockLife
	out    []BlockEviction
}

func newResidency(rate float64, now func() time.Time) *residency {
	return &residency{rate: rate, rng: rand.New(rand.NewPCG(0x6b76, 0x6d657472)), now: now, blocks: map[int]*blockLife{}}
}

func (r *residency) Allocated(block int) {
	if r.rate >= 1 || r.rng.Float64() < r.rate {
		t := r.now()
		r.blocks[block] = &blockLife{born: t, last: t}
	}
}

func (r *residency) Accessed(block int) {
	b := r.blocks[block]
	if b == nil {
		return
	}
	t := r.now()
	b.last = t
	if b.n == len(b.accesses) {
		copy(b.accesses[:], b.accesses[1:])
		b.n--
	}
	b.accesses[b.n] = t
	b.n++
}

func (r *residency) Evicted(block int) {
	b := r.blocks[block]
	if b == nil {
		return
	}
	delete(r.blocks, block)
	t := r.now()
	ev := BlockEviction{Lifetime: t.Sub(b.born).Seconds(), Idle: t.Sub(b.last).Seconds()}
	for i := 1; i < b.n; i++ {
		ev.Gaps[ev.NumGaps] = b.accesses[i].Sub(b.accesses[i-1]).Seconds()
		ev.NumGaps++
	}
	r.out = append(r.out, ev)
}

// checkSample is --kv-cache-metrics-sample's range: (0, 1].
func checkSample(rate float64) error {
	if !(rate > 0 && rate <= 1) {
		return fmt.Errorf("kv-cache-metrics-sample must be in (0, 1], got %v", rate)
	}
	return nil
}

package kvcache

// Tracker follows GPU blocks through their lives, for vLLM's
// --kv-cache-metrics residency histograms (its KVCacheMetricsCollector's
// hooks in the block pool). The manager calls it synchronously; it keeps
// the time and the sampling, which a pure manager has neither of.
type Tracker interface {
	// Evicted: the block is taken from the free list again, its previous
	// content dropped (called for every block taken, content or not,
	// before Allocated).
	Evicted(block int)
	// Allocated: the block now holds new content.
	Allocated(block int)
	// Accessed: a prefix-cache hit shares the block.
	Accessed(block int)
}

// SetTracker makes t follow every block from now on; nil stops it.
func (m *Manager) SetTracker(t Tracker) { m.tracker = t }

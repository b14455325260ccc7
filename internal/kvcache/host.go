package kvcache

import "fmt"

// hostTier is the CPU offload tier, after vLLM's OffloadingConnector with
// its native CPU backend (--kv-offloading-size): a second pool of blocks in
// host memory, keyed by the same chain hashes as the prefix cache. Every
// full block a sequence computes is stored to it as it is produced (a
// GPU→CPU copy, in flight until the engine completes it), a block already
// held is only touched, and ready blocks nobody is loading sit in an LRU
// from which a store evicts when the tier is full. A request whose prefix
// continues past the GPU's prefix cache into this tier loads those blocks
// back (CPU→GPU) before it runs; a load pins the host copies it reads.
//
// The tier keeps no time: the engine prices each transfer and says when
// stores complete (CompleteStores) and loads end (EndLoad).
type hostTier struct {
	// blocks reuse the GPU blocks' bookkeeping: ref counts the loads
	// reading a block, inFree marks the LRU of ready unread blocks (the
	// evictable ones), hashed/hash its content.
	// The tier's blocks are those stored to so far, up to capacity: a
	// block once stored to always holds content (an evicted one is
	// reused at once), and a tier sized in GiB of host memory costs only
	// what it holds.
	blocks   []block
	ready    []bool // the block's store has completed
	capacity int
	byHash   prefixIndex // content hash → block holding it, as the GPU's cache
	lru      freeList
	storing  []int32 // stores in flight, oldest first
	pinned   int     // blocks read by loads in flight

	// Since the last TakeStores: the blocks of each store started (one
	// per sequence and Cache call) and the stores that found no room.
	ops      []int
	failures int
}

func newHostTier(n int) *hostTier {
	t := &hostTier{capacity: n}
	t.lru.init(t.blocks)
	return t
}

// store starts copying the block of hash h to the tier, unless the tier
// holds it already (then it only becomes the most recently used). It
// reports whether a store started; with no empty block and nothing
// evictable, the store is dropped and counted as an allocation failure.
func (t *hostTier) store(h Hash) bool {
	if id, ok := t.byHash.get(t.blocks, h); ok {
		if t.blocks[id].inFree {
			t.lru.remove(t.blocks, id)
			t.lru.pushBack(t.blocks, id)
		}
		return false
	}
	var id int32
	switch {
	case len(t.blocks) < t.capacity:
		id = int32(len(t.blocks))
		t.blocks = append(t.blocks, block{})
		t.ready = append(t.ready, false)
	case t.lru.n > 0:
		id = t.lru.popFront(t.blocks)
		t.byHash.remove(t.blocks[id].hash, id)
	default:
		t.failures++
		return false
	}
	b := &t.blocks[id]
	b.hash, b.hashed = h, true
	t.ready[id] = false
	t.byHash.add(t.blocks, h, id)
	t.storing = append(t.storing, id)
	return true
}

// readyBlock is the host block holding h, when its store has completed.
func (t *hostTier) readyBlock(h Hash) (int32, bool) {
	id, ok := t.byHash.get(t.blocks, h)
	return id, ok && t.ready[id]
}

func (t *hostTier) pin(id int32) {
	b := &t.blocks[id]
	if b.ref == 0 {
		t.lru.remove(t.blocks, id)
	}
	b.ref++
	t.pinned++
}

func (t *hostTier) unpin(id int32) {
	b := &t.blocks[id]
	if b.ref <= 0 {
		panic(fmt.Sprintf("BUG: kvcache: unpinning host block %d with ref %d", id, b.ref))
	}
	b.ref--
	t.pinned--
	if b.ref == 0 {
		t.lru.pushBack(t.blocks, id)
	}
}

// HostBlocks is the offload tier's capacity in blocks; 0 without one.
func (m *Manager) HostBlocks() int {
	if m.host == nil {
		return 0
	}
	return m.host.capacity
}

// HostState is the offload tier now: blocks whose store is in flight,
// blocks read by loads in flight, and blocks holding content (those two
// included).
func (m *Manager) HostState() (storing, loading, held int) {
	t := m.host
	if t == nil {
		return 0, 0, 0
	}
	return len(t.storing), t.pinned, len(t.blocks)
}

// LookupHost returns how many tokens after the first computed ones (a
// prefix hit, whole blocks) the offload tier holds, in whole blocks whose
// stores have completed, leaving at least one token to compute as
// LookupPrefix does. It changes nothing but s's memoised hashes.
func (m *Manager) LookupHost(s *Seq, tokens []int, computed int) int {
	bs := m.cfg.BlockSize
	if m.host == nil || computed%bs != 0 {
		return 0
	}
	maxBlocks := (len(tokens) - 1) / bs
	m.hashBlocks(s, tokens, maxBlocks)
	from := computed / bs
	n := from
	for n < maxBlocks {
		if _, ok := m.host.readyBlock(s.hashes[n]); !ok {
			break
		}
		n++
	}
	return (n - from) * bs
}

// StartLoad allocates a new sequence's blocks for a prefix hit of cached
// tokens (LookupPrefix's) followed by loaded tokens from the offload tier
// (LookupHost's), and pins the host copies being read until EndLoad. The
// loaded blocks are new GPU blocks: they join the prefix cache once the
// sequence runs past them. All or nothing: false means not enough free
// blocks, and nothing changed.
func (m *Manager) StartLoad(s *Seq, tokens []int, cached, loaded int) bool {
	bs := m.cfg.BlockSize
	if m.host == nil || len(s.table) != 0 || cached%bs != 0 || loaded%bs != 0 || loaded <= 0 {
		panic(fmt.Sprintf("BUG: kvcache: load of %d tokens after %d into a table of %d blocks", loaded, cached, len(s.table)))
	}
	from, n := cached/bs, loaded/bs
	if len(s.hashes) < from+n {
		m.hashBlocks(s, tokens, from+n)
	}
	for i := from; i < from+n; i++ {
		if _, ok := m.host.readyBlock(s.hashes[i]); !ok {
			panic("BUG: kvcache: offloaded block vanished between lookup and load")
		}
	}
	if !m.allocate(s, from, cached+loaded) {
		return false
	}
	for i := from; i < from+n; i++ {
		id, _ := m.host.readyBlock(s.hashes[i])
		m.host.pin(id)
		s.loading = append(s.loading, id)
	}
	return true
}

// EndLoad releases the host copies s's load read: the load is done (or
// abandoned, when Free calls it).
func (m *Manager) EndLoad(s *Seq) {
	for _, id := range s.loading {
		m.host.unpin(id)
	}
	s.loading = s.loading[:0]
}

// Loading reports whether s's load is in flight.
func (s *Seq) Loading() bool { return len(s.loading) > 0 }

// CompleteStores marks the n oldest stores in flight done: their blocks
// can be loaded, and evicted.
func (m *Manager) CompleteStores(n int) {
	t := m.host
	if t == nil || n > len(t.storing) || n < 0 {
		panic(fmt.Sprintf("BUG: kvcache: completing %d stores", n))
	}
	for _, id := range t.storing[:n] {
		t.ready[id] = true
		t.lru.pushBack(t.blocks, id) // nothing reads a block before it is ready
	}
	t.storing = append(t.storing[:0], t.storing[n:]...)
}

// TakeStores returns the stores started since the last call, each as its
// number of blocks (the slice is reused by the next call), and the stores
// dropped for want of an evictable host block.
func (m *Manager) TakeStores() (ops []int, failures int) {
	t := m.host
	if t == nil {
		return nil, 0
	}
	ops, failures = t.ops, t.failures
	t.ops, t.failures = t.ops[:0], 0
	return ops, failures
}

// offload stores s's blocks from..to to the tier, as one operation.
func (m *Manager) offload(s *Seq, from, to int) {
	n := 0
	for i := from; i < to; i++ {
		if m.host.store(s.hashes[i]) {
			n++
		}
	}
	if n > 0 {
		m.host.ops = append(m.host.ops, n)
	}
}

// LoadingBlocks is how many blocks s's load in flight reads.
func (s *Seq) LoadingBlocks() int { return len(s.loading) }

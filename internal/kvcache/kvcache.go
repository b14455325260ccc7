// Package kvcache is the paged KV block manager: fixed-size blocks, per-
// sequence block tables, reference counts, and automatic prefix caching
// (full blocks keyed by a hash chained from the parent block's hash; freed
// cached blocks stay reusable in an LRU free queue until evicted), after
// vLLM V1's KVCacheManager.
//
// It is a pure state machine: no goroutines, no I/O, no clock, no metrics.
// It must not import net/http, Prometheus, OpenTelemetry or any package of
// the serving side; the engine goroutine is its only owner.
package kvcache

import (
	"fmt"
	"math"
	"slices"
)

// Config sizes the cache.
type Config struct {
	NumBlocks           int
	BlockSize           int // tokens per block
	EnablePrefixCaching bool
	// HostBlocks sizes the CPU offload tier in blocks of BlockSize tokens
	// (vLLM's --kv-offloading-size); 0 has none. It keys blocks by the
	// prefix cache's hashes, so it needs EnablePrefixCaching.
	HostBlocks int
}

// Manager owns every block. Not safe for concurrent use.
type Manager struct {
	cfg    Config
	blocks []block
	free   freeList
	cached prefixIndex // content hash → block holding it
	// freeCached counts free blocks that still hold cached content.
	freeCached int
	hasher     hasher
	host       *hostTier // nil without an offload tier
	tracker    Tracker   // nil unless residency is tracked
}

type block struct {
	ref        int32
	prev, next int32 // free-list links; -1 at the ends
	inFree     bool
	hashed     bool
	hash       Hash
	// drafted: a draft model's K/V (speculative decoding's, kept in the
	// same blocks) hold the block's tokens too.
	drafted bool
}

// Seq is one sequence's view of the cache: its block table and the chain
// hashes of its full blocks. The scheduler keeps one per request.
type Seq struct {
	table     []int
	hashes    []Hash  // chain hash of block i of the token sequence, memoised
	numCached int     // leading blocks of table already offered to the cache
	drafted   int     // leading blocks of table marked drafted
	root      Hash    // the first block's parent: the namespace it caches in
	loading   []int32 // host blocks its load in flight reads (StartLoad)
}

// SetNamespace keeps the sequence's cached blocks apart from other
// namespaces' (a LoRA adapter's KV differs from the base model's for the
// same tokens, as vLLM adds the adapter to its block hashes); 0 is the
// default, shared one. Set it before the first lookup.
func (s *Seq) SetNamespace(id uint32) { s.root = namespaceRoot(id) }

// BlockTable returns the physical block ids, in order. Callers must not
// modify it.
func (s *Seq) BlockTable() []int { return s.table }

// maxBlocks is the most blocks a pool (the GPU's, the offload tier's) can
// have: ids are int32, to keep a block's free-list links small.
const maxBlocks = math.MaxInt32

// New returns a manager with every block free.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.NumBlocks < 1 || cfg.BlockSize < 1:
		return nil, fmt.Errorf("kvcache: need at least one block of at least one token, got %d blocks of %d", cfg.NumBlocks, cfg.BlockSize)
	case cfg.HostBlocks < 0:
		return nil, fmt.Errorf("kvcache: the offload tier cannot hold %d blocks", cfg.HostBlocks)
	case cfg.NumBlocks > maxBlocks || cfg.HostBlocks > maxBlocks:
		return nil, fmt.Errorf("kvcache: %d blocks and an offload tier of %d: block ids are 32-bit, at most %d blocks each", cfg.NumBlocks, cfg.HostBlocks, maxBlocks)
	case cfg.HostBlocks > 0 && !cfg.EnablePrefixCaching:
		return nil, fmt.Errorf("kvcache: the offload tier keys blocks by their prefix-cache hashes: it needs prefix caching")
	}
	m := &Manager{
		cfg:    cfg,
		blocks: make([]block, cfg.NumBlocks),
	}
	m.free.init(m.blocks)
	for i := range m.blocks {
		m.free.pushBack(m.blocks, int32(i))
	}
	if cfg.HostBlocks > 0 {
		m.host = newHostTier(cfg.HostBlocks)
	}
	return m, nil
}

// NumBlocks is the cache's capacity in blocks.
func (m *Manager) NumBlocks() int { return m.cfg.NumBlocks }

// BlockSize is tokens per block.
func (m *Manager) BlockSize() int { return m.cfg.BlockSize }

// NumFree counts blocks no sequence holds, cached ones included.
func (m *Manager) NumFree() int { return m.free.n }

// NumCached counts blocks whose content is registered in the prefix cache.
func (m *Manager) NumCached() int { return m.cached.n }

// NumFreeCached counts free blocks that still hold reusable prefix content.
func (m *Manager) NumFreeCached() int { return m.freeCached }

// Usage is the fraction of blocks held by sequences, as vLLM's
// kv_cache_usage_perc (evictable cached blocks count as free).
func (m *Manager) Usage() float64 {
	return 1 - float64(m.free.n)/float64(m.cfg.NumBlocks)
}

// blocksFor is the number of blocks that hold n tokens.
func (m *Manager) blocksFor(n int) int { return (n + m.cfg.BlockSize - 1) / m.cfg.BlockSize }

// LookupPrefix returns how many leading tokens of tokens are already in the
// cache, in whole blocks. At least one token is always left to compute, so
// that the step that finishes the prompt produces logits. It changes nothing
// but s's memoised hashes.
func (m *Manager) LookupPrefix(s *Seq, tokens []int) int {
	if !m.cfg.EnablePrefixCaching {
		return 0
	}
	maxBlocks := (len(tokens) - 1) / m.cfg.BlockSize
	m.hashBlocks(s, tokens, maxBlocks)
	n := 0
	for n < maxBlocks {
		if _, ok := m.cached.get(m.blocks, s.hashes[n]); !ok {
			break
		}
		n++
	}
	return n * m.cfg.BlockSize
}

// CachedBlocks is how many of the chain hashes, from the first, name
// blocks the cache holds (a running sequence's or a free, still reusable
// one): the prefix a request with those blocks would find.
func (m *Manager) CachedBlocks(hashes []Hash) int {
	if !m.cfg.EnablePrefixCaching {
		return 0
	}
	n := 0
	for n < len(hashes) {
		if _, ok := m.cached.get(m.blocks, hashes[n]); !ok {
			break
		}
		n++
	}
	return n
}

// Allocate makes room in s's block table for numComputed+numNew tokens. On a
// sequence's first allocation, numComputed may be a prefix hit returned by
// LookupPrefix: those blocks are shared rather than allocated. It is all or
// nothing: false means not enough free blocks, and nothing changed.
func (m *Manager) Allocate(s *Seq, tokens []int, numComputed, numNew int) bool {
	var hits int
	if len(s.table) == 0 && numComputed > 0 {
		hits = numComputed / m.cfg.BlockSize
	}
	return m.allocate(s, hits, numComputed+numNew)
}

// allocate gives s room for tokens tokens, sharing the cached blocks of
// its first hits chain hashes when its table is empty. All or nothing.
func (m *Manager) allocate(s *Seq, hits, tokens int) bool {
	need := m.blocksFor(tokens) - len(s.table) - hits
	// Hit blocks that nobody holds sit in the free list: taking them
	// shrinks what is left for new blocks.
	reuseFree := 0
	for i := range hits {
		id, ok := m.cached.get(m.blocks, s.hashes[i])
		if !ok {
			panic("BUG: kvcache: prefix hit vanished between lookup and allocate")
		}
		if m.blocks[id].ref == 0 {
			reuseFree++
		}
	}
	if need > m.free.n-reuseFree {
		return false
	}
	s.table = slices.Grow(s.table, max(hits+need, 0)) // in one allocation, not doubling block by block
	for i := range hits {
		id, _ := m.cached.get(m.blocks, s.hashes[i])
		m.acquire(id)
		s.table = append(s.table, int(id))
	}
	if hits > 0 {
		s.numCached = hits
	}
	for range need {
		s.table = append(s.table, int(m.popFree()))
	}
	return true
}

// Cache registers the full blocks among the first numComputed tokens of s so
// that later sequences can share them. A block whose content another block
// already holds stays private (vLLM does not merge duplicates).
func (m *Manager) Cache(s *Seq, tokens []int, numComputed int) {
	if !m.cfg.EnablePrefixCaching {
		return
	}
	full := min(numComputed/m.cfg.BlockSize, len(s.table))
	if full <= s.numCached {
		return
	}
	m.hashBlocks(s, tokens, full)
	for i := s.numCached; i < full; i++ {
		h := s.hashes[i]
		if !m.cached.add(m.blocks, h, int32(s.table[i])) {
			continue // another block holds it
		}
		b := &m.blocks[s.table[i]]
		b.hash, b.hashed = h, true
	}
	if m.host != nil {
		m.offload(s, s.numCached, full)
	}
	s.numCached = full
}

// Free releases s's blocks, last block first, so that a sequence's tail is
// evicted before its (more shareable) head, and ends a load in flight. s
// can be allocated again later.
func (m *Manager) Free(s *Seq) {
	if len(s.loading) > 0 {
		m.EndLoad(s)
	}
	for i := len(s.table) - 1; i >= 0; i-- {
		id := int32(s.table[i])
		b := &m.blocks[id]
		if b.ref <= 0 {
			panic(fmt.Sprintf("BUG: kvcache: freeing block %d with ref %d", id, b.ref))
		}
		b.ref--
		if b.ref == 0 {
			m.free.pushBack(m.blocks, id)
			if b.hashed {
				m.freeCached++
			}
		}
	}
	s.table = s.table[:0]
	s.numCached, s.drafted = 0, 0
}

// MarkDrafted records that the draft model's K/V hold the first n tokens
// of s (verified ones: their blocks' content is final), so that a sequence
// that shares those blocks later finds them drafted.
func (m *Manager) MarkDrafted(s *Seq, n int) {
	full := min(n/m.cfg.BlockSize, len(s.table))
	for ; s.drafted < full; s.drafted++ {
		m.blocks[s.table[s.drafted]].drafted = true
	}
}

// DraftedPrefix is how many of the first n tokens of s lie in leading
// blocks whose draft K/V are held: where a draft model joining a prefix
// hit starts computing.
func (m *Manager) DraftedPrefix(s *Seq, n int) int {
	bs := m.cfg.BlockSize
	i := 0
	for i < len(s.table) && (i+1)*bs <= n && m.blocks[s.table[i]].drafted {
		i++
	}
	return i * bs
}

// acquire takes a reference on a cached block, pulling it out of the free
// list when it was unreferenced.
func (m *Manager) acquire(id int32) {
	b := &m.blocks[id]
	if b.ref == 0 {
		m.free.remove(m.blocks, id)
		if b.hashed {
			m.freeCached--
		}
	}
	b.ref++
	if m.tracker != nil {
		m.tracker.Accessed(int(id))
	}
}

// popFree takes the least recently freed block, evicting its cached content.
func (m *Manager) popFree() int32 {
	id := m.free.popFront(m.blocks)
	b := &m.blocks[id]
	if b.hashed {
		m.cached.remove(b.hash, id)
		b.hashed = false
		m.freeCached--
	}
	b.ref, b.drafted = 1, false
	if m.tracker != nil {
		m.tracker.Evicted(int(id))
		m.tracker.Allocated(int(id))
	}
	return id
}

// hashBlocks extends s's memoised chain hashes to cover n full blocks.
func (m *Manager) hashBlocks(s *Seq, tokens []int, n int) {
	bs := m.cfg.BlockSize
	if n > len(s.hashes) {
		s.hashes = slices.Grow(s.hashes, n-len(s.hashes))
	}
	for i := len(s.hashes); i < n; i++ {
		parent := s.root
		if i > 0 {
			parent = s.hashes[i-1]
		}
		s.hashes = append(s.hashes, m.hasher.sum(parent, tokens[i*bs:(i+1)*bs]))
	}
}

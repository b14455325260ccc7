package router

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
)

// The approximate prefix-cache producer's defaults (llm-d-router v0.10.0,
// requestcontrol/dataproducer/approximateprefix): blocks of at least 64
// tokens (smaller ones, such as vLLM's 16, are raised to it), at most
// 131,072 tokens matched, and 31,250 blocks remembered per server when the
// endpoints do not say how many they hold.
const (
	minPrefixBlock      = 64
	maxPrefixTokens     = 131072
	defaultLRUPerServer = 31250
)

// prefixIndex is the approximate prefix-cache producer's index: the
// router's own memory of which server it sent which prompt blocks to,
// each block keyed by a hash chained from the previous block's, with an
// LRU of blocks per server so that old prompts fall out as the server's
// cache would evict them. It never sees the servers' real caches.
type prefixIndex struct {
	block, capacity int // configured; 0 is auto-tuned from the endpoints
	byHash          map[uint64]map[string]struct{}
	servers         map[string]*lru
	buf             []byte
}

func newPrefixIndex(block, capacity int) *prefixIndex {
	return &prefixIndex{block: block, capacity: capacity, byHash: map[uint64]map[string]struct{}{}, servers: map[string]*lru{}}
}

// blockSize is the producer's block: the engines' own (auto-tune) or the
// configured one, raised to at least 64 tokens.
func (p *prefixIndex) blockSize(eps []Endpoint) int {
	b := p.block
	if b == 0 && len(eps) > 0 && eps[0].Metrics.BlockSize > 0 {
		b = eps[0].Metrics.BlockSize
	}
	return max(b, minPrefixBlock)
}

// hashes chains the prompt's blocks, the last partial block included, as
// the producer does: the first hash is seeded with the model's name, and
// each block's hash covers its tokens and its parent's hash.
//
// llm-d's default token producer estimates tokens from the request's text
// (four bytes a pseudo-token, about one token of English); the simulator
// hashes the prompt's token ids, which is the same granularity.
func (p *prefixIndex) hashes(req *Request, block int) []uint64 {
	h := fnv.New64a()
	h.Write([]byte(req.Model))
	prev := h.Sum64()
	n := min((len(req.Prompt)+block-1)/block, maxPrefixTokens/block)
	out := make([]uint64, 0, n)
	for i := 0; i < n; i++ {
		end := min((i+1)*block, len(req.Prompt))
		p.buf = p.buf[:0]
		for _, t := range req.Prompt[i*block : end] {
			p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(t))
		}
		h.Reset()
		h.Write(p.buf)
		content := h.Sum64()
		h.Reset()
		p.buf = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(p.buf[:0], content), prev)
		h.Write(p.buf)
		prev = h.Sum64()
		out = append(out, prev)
	}
	return out
}

// score adds weight × matched/total to each endpoint's score, matched
// counted as the producer's matchLongestPrefix counts it: walking the
// blocks in order until one no server holds, a block counts for every
// server that holds it.
func (p *prefixIndex) score(hashes []uint64, eps []Endpoint, weight float64, scores []float64) {
	if len(hashes) == 0 {
		return
	}
	matched := map[string]int{}
	for _, h := range hashes {
		servers := p.byHash[h]
		if len(servers) == 0 {
			break
		}
		for s := range servers {
			matched[s]++
		}
	}
	for i, e := range eps {
		scores[i] += weight * float64(matched[e.ID]) / float64(len(hashes))
	}
}

// add records that e was sent the blocks (the producer's PreRequest).
func (p *prefixIndex) add(hashes []uint64, e Endpoint) {
	s := p.servers[e.ID]
	if s == nil {
		c := p.capacity
		if c == 0 {
			c = e.Metrics.NumBlocks // auto-tune: the server's KV blocks
		}
		if c <= 0 {
			c = defaultLRUPerServer
		}
		s = &lru{cap: c, items: map[uint64]*list.Element{}}
		p.servers[e.ID] = s
	}
	for _, h := range hashes {
		if evicted, ok := s.add(h); ok {
			p.drop(evicted, e.ID)
		}
	}
	for _, h := range hashes {
		set := p.byHash[h]
		if set == nil {
			set = map[string]struct{}{}
			p.byHash[h] = set
		}
		set[e.ID] = struct{}{}
	}
}

func (p *prefixIndex) drop(h uint64, server string) {
	if set, ok := p.byHash[h]; ok {
		delete(set, server)
		if len(set) == 0 {
			delete(p.byHash, h)
		}
	}
}

// remove forgets a server that left the pool.
func (p *prefixIndex) remove(server string) {
	s := p.servers[server]
	if s == nil {
		return
	}
	for h := range s.items {
		p.drop(h, server)
	}
	delete(p.servers, server)
}

// lru is one server's remembered blocks, most recent at the front.
type lru struct {
	cap   int
	order list.List
	items map[uint64]*list.Element
}

// add makes h the most recent, evicting the least recent past the
// capacity.
func (l *lru) add(h uint64) (evicted uint64, ok bool) {
	if e, found := l.items[h]; found {
		l.order.MoveToFront(e)
		return 0, false
	}
	l.items[h] = l.order.PushFront(h)
	if l.order.Len() <= l.cap {
		return 0, false
	}
	last := l.order.Back()
	l.order.Remove(last)
	old := last.Value.(uint64)
	delete(l.items, old)
	return old, true
}

package kvcache

import (
	"fmt"
	"strings"
	"testing"
)

// checkHost verifies the offload tier's invariants: every block is empty
// or holds the content its hash maps to; ready unread blocks are exactly
// the LRU; stores in flight are held, not ready and unread; the pins are
// the loads in flight of seqs.
func (m *Manager) checkHost(seqs []*Seq) error {
	t := m.host
	if t == nil {
		return nil
	}
	pins := make([]int32, len(t.blocks))
	total := 0
	for _, s := range seqs {
		for _, id := range s.loading {
			pins[id]++
			total++
		}
	}
	if total != t.pinned {
		return fmt.Errorf("host: %d pins held by loads, counter says %d", total, t.pinned)
	}
	storing := map[int32]bool{}
	for _, id := range t.storing {
		if storing[id] {
			return fmt.Errorf("host block %d stored twice at once", id)
		}
		storing[id] = true
	}
	// The tier's blocks are those stored to so far: none is empty.
	empty := map[int32]bool{}
	if len(t.blocks) > t.capacity || len(t.ready) != len(t.blocks) {
		return fmt.Errorf("host: %d blocks (%d ready flags) in a tier of %d", len(t.blocks), len(t.ready), t.capacity)
	}
	lru := 0
	for id := t.lru.head; id >= 0; id = t.blocks[id].next {
		if lru++; lru > len(t.blocks) {
			return fmt.Errorf("host LRU has a cycle")
		}
	}
	if lru != t.lru.n {
		return fmt.Errorf("host LRU holds %d blocks, counter says %d", lru, t.lru.n)
	}
	for i := range t.blocks {
		id, b := int32(i), &t.blocks[i]
		switch {
		case b.ref != pins[id]:
			return fmt.Errorf("host block %d: ref %d but %d loads read it", id, b.ref, pins[id])
		case empty[id] && (b.hashed || b.inFree || storing[id] || b.ref > 0):
			return fmt.Errorf("host block %d is empty but in use", id)
		case !empty[id] && (!b.hashed || !t.byHash.holds(t.blocks, b.hash, id)):
			return fmt.Errorf("host block %d holds content its hash does not map to", id)
		case storing[id] && (t.ready[id] || b.ref > 0 || b.inFree):
			return fmt.Errorf("host block %d: a store in flight that is ready, read or evictable", id)
		case !empty[id] && !storing[id] && !t.ready[id]:
			return fmt.Errorf("host block %d: held, not storing, not ready", id)
		case b.inFree != (t.ready[id] && !empty[id] && b.ref == 0):
			return fmt.Errorf("host block %d: in LRU %v, ready %v, ref %d", id, b.inFree, t.ready[id], b.ref)
		}
	}
	if t.byHash.n != len(t.blocks) {
		return fmt.Errorf("host: %d hashes != %d blocks", t.byHash.n, len(t.blocks))
	}
	return nil
}

// holds reports whether h maps to block id.
func (x *prefixIndex) holds(bs []block, h Hash, id int32) bool {
	got, ok := x.get(bs, h)
	return ok && got == id
}

// FuzzHostTier drives random sequences through a small GPU cache and
// offload tier (admissions that load from the tier, growth, frees,
// completed stores, ended loads) with few distinct token values, checking
// both pools' invariants after every operation.
func FuzzHostTier(f *testing.F) {
	f.Add([]byte{0, 10, 1, 20, 16, 3, 17, 0, 0, 10, 2, 5, 3, 0, 0, 7})
	f.Add([]byte{0, 255, 16, 9, 2, 0, 0, 255, 18, 1, 19, 0, 0, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m, err := New(Config{NumBlocks: 6, BlockSize: 2, EnablePrefixCaching: true, HostBlocks: 1 + len(ops)%5})
		if err != nil {
			t.Fatal(err)
		}
		type live struct {
			s        *Seq
			tokens   []int
			computed int
		}
		seqs := make([]*live, 4)
		all := func() []*Seq {
			var out []*Seq
			for _, l := range seqs {
				if l != nil {
					out = append(out, l.s)
				}
			}
			return out
		}
		for i := 0; i+1 < len(ops); i += 2 {
			slot, arg := int(ops[i]>>3)%len(seqs), int(ops[i+1])
			l := seqs[slot]
			switch ops[i] & 7 {
			case 0, 1: // start a sequence (loading what the tier holds) or grow one
				if l == nil {
					n := 1 + arg%11
					toks := make([]int, n)
					for j := range toks {
						toks[j] = (arg >> (j % 3)) & 1
					}
					l = &live{s: &Seq{}, tokens: toks}
					hit := m.LookupPrefix(l.s, toks)
					host := m.LookupHost(l.s, toks, hit)
					if host%2 != 0 || hit+host >= n {
						t.Fatalf("bad host hit %d after %d for %d tokens", host, hit, n)
					}
					switch {
					case host > 0 && m.StartLoad(l.s, toks, hit, host):
						l.computed = hit + host
						seqs[slot] = l
					case host == 0 && m.Allocate(l.s, toks, hit, n-hit):
						l.computed = n
						seqs[slot] = l
						m.Cache(l.s, toks, n)
					}
					break
				}
				if l.s.Loading() {
					break
				}
				l.tokens = append(l.tokens, arg&1)
				if m.Allocate(l.s, l.tokens, l.computed, len(l.tokens)-l.computed) {
					l.computed = len(l.tokens)
					m.Cache(l.s, l.tokens, l.computed)
				} else {
					l.tokens = l.tokens[:l.computed]
				}
			case 2, 3:
				if l != nil {
					m.Free(l.s)
					seqs[slot] = nil
				}
			case 4, 5:
				storing, _, _ := m.HostState()
				m.CompleteStores(arg % (storing + 1))
			case 6, 7:
				if l != nil && l.s.Loading() {
					m.EndLoad(l.s)
				}
			}
			m.TakeStores()
			if err := m.check(all()); err != nil {
				t.Fatalf("after op %d: %v", i/2, err)
			}
			if err := m.checkHost(all()); err != nil {
				t.Fatalf("after op %d: %v", i/2, err)
			}
		}
	})
}

// TestHostTierNeedsPrefixCaching: an offload tier without block hashes is
// refused by name, as is a negative size.
func TestHostTierNeedsPrefixCaching(t *testing.T) {
	for _, cfg := range []Config{
		{NumBlocks: 4, BlockSize: 4, HostBlocks: 4},
		{NumBlocks: 4, BlockSize: 4, HostBlocks: -1, EnablePrefixCaching: true},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestHostTierCostsWhatItHolds: a tier sized in GiB of host memory holds
// bookkeeping only for the blocks stored to, so a large one costs nothing
// until used; past 32-bit block ids it is refused by name.
func TestHostTierCostsWhatItHolds(t *testing.T) {
	m, err := New(Config{NumBlocks: 8, BlockSize: 2, EnablePrefixCaching: true, HostBlocks: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.host.blocks); got != 0 {
		t.Errorf("a new tier of %d blocks keeps %d; want none until stored to", m.HostBlocks(), got)
	}
	s, toks := &Seq{}, []int{1, 2, 3, 4, 5}
	if !m.Allocate(s, toks, 0, len(toks)) {
		t.Fatal("allocate 5 tokens in 8 blocks of 2")
	}
	m.Cache(s, toks, len(toks))
	if storing, _, held := m.HostState(); storing != 2 || held != 2 || len(m.host.blocks) != 2 || m.HostBlocks() != 1<<20 {
		t.Errorf("after two full blocks: storing %d, held %d, kept %d of %d; want 2, 2, 2 of %d", storing, held, len(m.host.blocks), m.HostBlocks(), 1<<20)
	}
	if err := m.checkHost([]*Seq{s}); err != nil {
		t.Error(err)
	}
	if _, err := New(Config{NumBlocks: 8, BlockSize: 2, EnablePrefixCaching: true, HostBlocks: maxBlocks}); err != nil {
		t.Errorf("a tier of %d blocks: %v", maxBlocks, err)
	}
	for _, cfg := range []Config{
		{NumBlocks: 8, BlockSize: 2, EnablePrefixCaching: true, HostBlocks: maxBlocks + 1},
		{NumBlocks: maxBlocks + 1, BlockSize: 2},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "32-bit") {
			t.Errorf("New(%d blocks, %d host blocks): %v; want a refusal naming the 32-bit ids", cfg.NumBlocks, cfg.HostBlocks, err)
		}
	}
}

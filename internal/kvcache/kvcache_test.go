package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
)

// check verifies the manager's invariants; tests and the fuzzer call it
// after every operation.
func (m *Manager) check(seqs []*Seq) error {
	refs := make([]int32, len(m.blocks))
	for _, s := range seqs {
		for _, id := range s.table {
			refs[id]++
		}
	}
	free, freeCached := 0, 0
	for id := m.free.head; id >= 0; id = m.blocks[id].next {
		free++
		if free > len(m.blocks) {
			return fmt.Errorf("free list has a cycle")
		}
		if m.blocks[id].hashed {
			freeCached++
		}
	}
	if free != m.free.n {
		return fmt.Errorf("free list holds %d blocks, counter says %d", free, m.free.n)
	}
	if freeCached != m.freeCached {
		return fmt.Errorf("free cached blocks %d, counter says %d", freeCached, m.freeCached)
	}
	for id := range m.blocks {
		b := &m.blocks[id]
		if b.ref != refs[id] {
			return fmt.Errorf("block %d: ref %d but %d tables hold it", id, b.ref, refs[id])
		}
		if (b.ref == 0) != b.inFree {
			return fmt.Errorf("block %d: ref %d, in free list %v", id, b.ref, b.inFree)
		}
		if got, ok := m.cached.get(m.blocks, b.hash); b.hashed && (!ok || got != int32(id)) {
			return fmt.Errorf("block %d: hashed but the cache maps its hash elsewhere", id)
		}
	}
	entries := 0
	for _, sl := range m.cached.slots {
		if sl.block == 0 {
			continue
		}
		entries++
		if b := &m.blocks[sl.block-1]; !b.hashed || low(b.hash) != sl.lo {
			return fmt.Errorf("cache entry for block %d does not match the block", sl.block-1)
		}
	}
	if entries != m.cached.n {
		return fmt.Errorf("prefix index holds %d entries, counter says %d", entries, m.cached.n)
	}
	used := 0
	for _, r := range refs {
		if r > 0 {
			used++
		}
	}
	if used+m.free.n != len(m.blocks) {
		return fmt.Errorf("%d used + %d free != %d blocks", used, m.free.n, len(m.blocks))
	}
	return nil
}

func seqTokens(n, base int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = base + i
	}
	return t
}

func TestAllocateFreeAllOrNothing(t *testing.T) {
	m, _ := New(Config{NumBlocks: 4, BlockSize: 4})
	a, b := &Seq{}, &Seq{}
	if !m.Allocate(a, seqTokens(10, 0), 0, 10) {
		t.Fatal("10 tokens should fit in 3 of 4 blocks")
	}
	if got := len(a.BlockTable()); got != 3 {
		t.Fatalf("block table has %d blocks, want 3", got)
	}
	if m.Allocate(b, seqTokens(8, 100), 0, 8) {
		t.Fatal("8 tokens must not fit in the 1 free block")
	}
	if len(b.BlockTable()) != 0 || m.NumFree() != 1 {
		t.Fatalf("a failed allocation changed state: table %v, free %d", b.BlockTable(), m.NumFree())
	}
	if got, want := m.Usage(), 0.75; got != want {
		t.Fatalf("usage %v, want %v", got, want)
	}
	m.Free(a)
	if m.NumFree() != 4 || m.Usage() != 0 {
		t.Fatalf("after free: %d free, usage %v", m.NumFree(), m.Usage())
	}
	if err := m.check([]*Seq{a, b}); err != nil {
		t.Fatal(err)
	}
}

func TestPrefixHitSharesBlocks(t *testing.T) {
	m, _ := New(Config{NumBlocks: 8, BlockSize: 4, EnablePrefixCaching: true})
	prompt := seqTokens(10, 0)
	a := &Seq{}
	if hit := m.LookupPrefix(a, prompt); hit != 0 {
		t.Fatalf("cold cache hit %d tokens", hit)
	}
	m.Allocate(a, prompt, 0, 10)
	m.Cache(a, prompt, 10)
	if m.NumCached() != 2 {
		t.Fatalf("%d cached blocks, want the 2 full ones", m.NumCached())
	}
	b := &Seq{}
	other := append(seqTokens(8, 0), 99, 98, 97)
	if hit := m.LookupPrefix(b, other); hit != 8 {
		t.Fatalf("hit %d tokens, want 8", hit)
	}
	m.Allocate(b, other, 8, 3)
	if a.table[0] != b.table[0] || a.table[1] != b.table[1] || a.table[2] == b.table[2] {
		t.Fatalf("tables %v and %v should share exactly the first two blocks", a.table, b.table)
	}
	if err := m.check([]*Seq{a, b}); err != nil {
		t.Fatal(err)
	}
	// Freed cached blocks stay reusable until evicted.
	m.Free(a)
	m.Free(b)
	if m.NumFreeCached() != 2 {
		t.Fatalf("%d free cached blocks, want 2", m.NumFreeCached())
	}
	c := &Seq{}
	if hit := m.LookupPrefix(c, prompt); hit != 8 {
		t.Fatalf("after free: hit %d, want 8", hit)
	}
	// A prompt that is exactly cached still computes its last token.
	if hit := m.LookupPrefix(&Seq{}, seqTokens(8, 0)); hit != 4 {
		t.Fatalf("fully cached prompt hit %d, want 4 (last block recomputed)", hit)
	}
}

func TestEvictionIsLRU(t *testing.T) {
	m, _ := New(Config{NumBlocks: 3, BlockSize: 2, EnablePrefixCaching: true})
	a, b := &Seq{}, &Seq{}
	pa, pb := seqTokens(2, 0), seqTokens(2, 50)
	for _, x := range []struct {
		s *Seq
		p []int
	}{{a, pa}, {b, pb}} {
		m.Allocate(x.s, x.p, 0, 2)
		m.Cache(x.s, x.p, 2)
	}
	m.Free(a) // a's block is now the least recently freed cached block...
	m.Free(b)
	// ...after the never-used block 2, which goes first.
	c := &Seq{}
	m.Allocate(c, seqTokens(4, 200), 0, 4)
	if m.LookupPrefix(&Seq{}, append(pa, 7)) != 0 {
		t.Fatal("a's block should have been evicted first")
	}
	if m.LookupPrefix(&Seq{}, append(pb, 7)) != 2 {
		t.Fatal("b's block should still be cached")
	}
	if err := m.check([]*Seq{a, b, c}); err != nil {
		t.Fatal(err)
	}
}

func TestPrefixCachingOff(t *testing.T) {
	m, _ := New(Config{NumBlocks: 4, BlockSize: 2})
	a := &Seq{}
	p := seqTokens(4, 0)
	m.Allocate(a, p, 0, 4)
	m.Cache(a, p, 4)
	if m.NumCached() != 0 || m.LookupPrefix(&Seq{}, p) != 0 {
		t.Fatal("prefix caching is off but blocks were cached")
	}
}

// FuzzInvariants drives random allocate/cache/free sequences over a small
// cache with few distinct token values (so prefixes collide often) and
// checks every invariant after each operation.
func FuzzInvariants(f *testing.F) {
	f.Add([]byte{0, 10, 1, 20, 2, 5, 3, 0, 0, 7})
	f.Add([]byte{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m, _ := New(Config{NumBlocks: 6, BlockSize: 2, EnablePrefixCaching: len(ops)%3 != 0})
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
			slot, arg := int(ops[i]>>2)%len(seqs), int(ops[i+1])
			switch ops[i] & 3 {
			case 0, 1: // start a sequence or grow one
				l := seqs[slot]
				if l == nil {
					n := 1 + arg%9
					toks := make([]int, n)
					for j := range toks {
						toks[j] = (arg >> (j % 4)) & 1
					}
					l = &live{s: &Seq{}, tokens: toks}
					hit := m.LookupPrefix(l.s, toks)
					if hit%2 != 0 || hit >= n {
						t.Fatalf("bad hit %d for %d tokens", hit, n)
					}
					if m.Allocate(l.s, toks, hit, n-hit) {
						l.computed = n
						seqs[slot] = l
						m.Cache(l.s, toks, n)
					}
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
				if seqs[slot] != nil {
					m.Free(seqs[slot].s)
					seqs[slot] = nil
				}
			}
			if err := m.check(all()); err != nil {
				t.Fatalf("after op %d: %v", i/2, err)
			}
			for _, l := range seqs {
				if l != nil && len(l.s.table) != m.blocksFor(l.computed) {
					t.Fatalf("table of %d blocks for %d tokens", len(l.s.table), l.computed)
				}
			}
		}
	})
}

// TestNamespacesDoNotShare: the same tokens cached under one namespace (a
// LoRA adapter) are not a prefix hit for another, nor for the base model.
func TestNamespacesDoNotShare(t *testing.T) {
	m, err := New(Config{NumBlocks: 16, BlockSize: 4, EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	var a Seq
	a.SetNamespace(1)
	if !m.Allocate(&a, toks, 0, len(toks)) {
		t.Fatal("allocate")
	}
	m.Cache(&a, toks, len(toks))
	for _, tc := range []struct {
		ns   uint32
		want int
	}{{1, 8}, {2, 0}, {0, 0}} {
		var b Seq
		b.SetNamespace(tc.ns)
		if got := m.LookupPrefix(&b, toks); got != tc.want {
			t.Errorf("namespace %d: %d tokens hit, want %d", tc.ns, got, tc.want)
		}
	}
}

// TestChainHashesKeepTheNamespace: a router's chain hashes of a prompt sent
// to a LoRA adapter name the blocks the engine cached for that adapter, and
// not the base model's, nor another adapter's.
func TestChainHashesKeepTheNamespace(t *testing.T) {
	m, _ := New(Config{NumBlocks: 8, BlockSize: 4, EnablePrefixCaching: true})
	prompt := seqTokens(10, 0)
	var a Seq
	a.SetNamespace(3)
	m.Allocate(&a, prompt, 0, 10)
	m.Cache(&a, prompt, 10)
	for ns, want := range map[uint32]int{3: 2, 0: 0, 4: 0} {
		if n := m.CachedBlocks(ChainHashes(4, ns, prompt)); n != want {
			t.Errorf("namespace %d: %d blocks cached, want %d", ns, n, want)
		}
	}
}

// TestCachedBlocksMatchesTheCache: a router's chain hashes of a prompt name
// the blocks the engine cached for it, full blocks only, in order, freed
// ones included until evicted; the prompt's last full block counts too.
func TestCachedBlocksMatchesTheCache(t *testing.T) {
	m, _ := New(Config{NumBlocks: 8, BlockSize: 4, EnablePrefixCaching: true})
	prompt := seqTokens(10, 0)
	if n := m.CachedBlocks(ChainHashes(4, 0, prompt)); n != 0 {
		t.Fatalf("cold cache holds %d blocks", n)
	}
	a := &Seq{}
	m.Allocate(a, prompt, 0, 10)
	m.Cache(a, prompt, 10)
	if h := ChainHashes(4, 0, prompt); len(h) != 2 || m.CachedBlocks(h) != 2 {
		t.Fatalf("%d hashes, %d cached; want the 2 full blocks", len(h), m.CachedBlocks(h))
	}
	m.Free(a)
	if n := m.CachedBlocks(ChainHashes(4, 0, seqTokens(8, 0))); n != 2 {
		t.Errorf("a prompt of exactly the cached blocks: %d, want 2", n)
	}
	if n := m.CachedBlocks(ChainHashes(4, 0, append(seqTokens(4, 0), 9, 9, 9, 9))); n != 1 {
		t.Errorf("a prompt diverging in its second block: %d, want 1", n)
	}
	off, _ := New(Config{NumBlocks: 8, BlockSize: 4})
	if n := off.CachedBlocks(ChainHashes(4, 0, prompt)); n != 0 {
		t.Errorf("prefix caching off: %d", n)
	}
}

// TestDraftedBlocks: blocks whose draft K/V a sequence marked are found
// drafted by a later sequence that shares them, in whole blocks and never
// past its own computed tokens; a block evicted and reused for other
// tokens is not drafted any more.
func TestDraftedBlocks(t *testing.T) {
	m, _ := New(Config{NumBlocks: 4, BlockSize: 4, EnablePrefixCaching: true})
	prompt := seqTokens(10, 0)
	a := &Seq{}
	m.Allocate(a, prompt, 0, 10)
	m.Cache(a, prompt, 10)
	m.MarkDrafted(a, 7) // one whole block
	b := &Seq{}
	hit := m.LookupPrefix(b, prompt)
	m.Allocate(b, prompt, hit, 10-hit)
	if got := m.DraftedPrefix(b, hit); got != 4 {
		t.Fatalf("drafted prefix %d of a hit of %d, want 4", got, hit)
	}
	m.MarkDrafted(a, 10)
	if got := m.DraftedPrefix(b, hit); got != 8 {
		t.Fatalf("drafted prefix %d, want the hit's 8", got)
	}
	if got := m.DraftedPrefix(b, 6); got != 4 {
		t.Fatalf("drafted prefix of 6 computed tokens %d, want 4", got)
	}
	m.Free(a)
	m.Free(b)
	// Other tokens take every block: none is drafted any more.
	c := &Seq{}
	other := seqTokens(16, 100)
	if !m.Allocate(c, other, 0, 16) {
		t.Fatal("allocate 16 tokens in 4 free blocks")
	}
	if got := m.DraftedPrefix(c, 16); got != 0 {
		t.Fatalf("reused blocks: drafted prefix %d, want 0", got)
	}
	if err := m.check([]*Seq{c}); err != nil {
		t.Fatal(err)
	}
}

// TestPromptGrowsItsSlicesOnce: admitting a 1,024-token prompt (its 63
// looked-up hashes, its 64 blocks, the last block's hash when cached)
// grows its hashes and its block table once each, not by doubling block
// after block.
func TestPromptGrowsItsSlicesOnce(t *testing.T) {
	m, err := New(Config{NumBlocks: 256, BlockSize: 16, EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	tokens := seqTokens(1024, 0)
	base := 0
	admit := func() {
		base += 1024 // a new prompt each time: no hits
		for i := range tokens {
			tokens[i] = base + i
		}
		s := &Seq{}
		hit := m.LookupPrefix(s, tokens)
		if !m.Allocate(s, tokens, hit, len(tokens)-hit) {
			t.Fatal("no room for the prompt")
		}
		m.Cache(s, tokens, len(tokens))
		m.Free(s)
	}
	// Until every block has been cached once, the prefix index grows
	// (amortised, and not the prompt's doing): fill it first.
	for range 8 {
		admit()
	}
	n := testing.AllocsPerRun(20, admit)
	// The Seq, then its hashes and its table grown once each (doubling
	// block by block would be a dozen).
	if want := float64(1 + 2*growAllocs); n > want {
		t.Errorf("admitting a prompt allocates %v times, want at most %v", n, want)
	}
}

// TestAllocateWithRoomToSpare: a table that already holds more blocks than
// the tokens need (drafts rejected after their blocks were allocated) is
// allocated for again without change.
func TestAllocateWithRoomToSpare(t *testing.T) {
	m, err := New(Config{NumBlocks: 8, BlockSize: 4, EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	tokens := seqTokens(16, 0)
	s := &Seq{}
	if !m.Allocate(s, tokens, 0, 16) {
		t.Fatal("no room for 16 tokens")
	}
	if !m.Allocate(s, tokens, 4, 1) || len(s.table) != 4 {
		t.Errorf("allocating 5 tokens into a table of 4 blocks left %d blocks", len(s.table))
	}
}

// TestChainHashIsSHA256OfParentAndTokens pins the hash's definition: block
// i's is the first 16 bytes of SHA-256 over block i-1's hash (the
// namespace's root for the first) and the block's tokens as little-endian
// uint32s, whatever the block size and however often the hasher is reused.
func TestChainHashIsSHA256OfParentAndTokens(t *testing.T) {
	for _, bs := range []int{1, 4, 16} {
		tokens := seqTokens(3*bs+1, 70000)
		got := ChainHashes(bs, 5, tokens)
		parent := namespaceRoot(5)
		for i := range 3 {
			msg := append([]byte(nil), parent[:]...)
			for _, tok := range tokens[i*bs : (i+1)*bs] {
				msg = binary.LittleEndian.AppendUint32(msg, uint32(tok))
			}
			full := sha256.Sum256(msg)
			copy(parent[:], full[:16])
			if got[i] != parent {
				t.Fatalf("block size %d, block %d: hash %x, want %x", bs, i, got[i], parent)
			}
		}
	}
}

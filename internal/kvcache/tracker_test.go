package kvcache

import (
	"fmt"
	"slices"
	"testing"
)

type recorder []string

func (r *recorder) Evicted(b int)   { *r = append(*r, fmt.Sprint("evict ", b)) }
func (r *recorder) Allocated(b int) { *r = append(*r, fmt.Sprint("alloc ", b)) }
func (r *recorder) Accessed(b int)  { *r = append(*r, fmt.Sprint("hit ", b)) }

// TestTrackerSeesBlockLives: a block taken from the free list is evicted
// then allocated, a prefix hit accesses the blocks it shares, and a block
// freed to the cache is taken again (evicted) only when the free list
// reaches it.
func TestTrackerSeesBlockLives(t *testing.T) {
	m, _ := New(Config{NumBlocks: 3, BlockSize: 2, EnablePrefixCaching: true})
	var r recorder
	m.SetTracker(&r)
	a := &Seq{}
	toks := seqTokens(5, 0)
	m.Allocate(a, toks, 0, 5)
	m.Cache(a, toks, 5)
	m.Free(a)
	b := &Seq{}
	hit := m.LookupPrefix(b, toks)
	m.Allocate(b, toks, hit, 5-hit)
	want := []string{"evict 0", "alloc 0", "evict 1", "alloc 1", "evict 2", "alloc 2", "hit 0", "hit 1", "evict 2", "alloc 2"}
	if !slices.Equal(r, want) {
		t.Errorf("tracker saw %v, want %v", r, want)
	}
}

package kvcache

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestPrefixIndexMatchesAMap drives the index with random adds, look-ups
// and removals and holds it to a Go map of the same keys. The hashes'
// low bits are drawn from a few values, so runs of colliding entries form,
// wrap around the table's end and are cut by removals from their middle.
func TestPrefixIndexMatchesAMap(t *testing.T) {
	const numBlocks = 200
	rng := rand.New(rand.NewPCG(1, 2))
	bs := make([]block, numBlocks)
	var x prefixIndex
	want := map[Hash]int32{}
	var held []int32 // blocks in the index
	hash := func() Hash {
		var h Hash
		binary.LittleEndian.PutUint32(h[:4], uint32(rng.IntN(8))*61+uint32(rng.IntN(3))<<30) // few homes, near the end too
		binary.LittleEndian.PutUint64(h[4:12], rng.Uint64()%40)                              // few distinct hashes: repeats
		return h
	}
	for step := range 20000 {
		switch op := rng.IntN(3); {
		case op == 0 && len(held) < numBlocks: // add a free block under a hash
			var id int32
			for id = int32(rng.IntN(numBlocks)); bs[id].hashed; id = (id + 1) % numBlocks {
			}
			h := hash()
			_, dup := want[h]
			if got := x.add(bs, h, id); got == dup {
				t.Fatalf("step %d: add(%x) = %v with the hash held: %v", step, h, got, dup)
			}
			if !dup {
				want[h] = id
				bs[id].hash, bs[id].hashed = h, true
				held = append(held, id)
			}
		case op == 1 && len(held) > 0: // remove a held block
			k := rng.IntN(len(held))
			id := held[k]
			held[k] = held[len(held)-1]
			held = held[:len(held)-1]
			x.remove(bs[id].hash, id)
			delete(want, bs[id].hash)
			bs[id].hashed = false
		default: // look one up
			h := hash()
			got, ok := x.get(bs, h)
			if id, held := want[h]; ok != held || ok && got != id {
				t.Fatalf("step %d: get(%x) = %d, %v; the map has %d, %v", step, h, got, ok, id, held)
			}
		}
		if x.n != len(want) || 2*x.n > len(x.slots) {
			t.Fatalf("step %d: %d entries in %d slots, the map has %d", step, x.n, len(x.slots), len(want))
		}
	}
	for h, id := range want {
		if got, ok := x.get(bs, h); !ok || got != id {
			t.Fatalf("get(%x) = %d, %v at the end; the map has %d", h, got, ok, id)
		}
	}
}

// TestRemoveMissingIsABug: removing a block the index does not hold is a
// broken invariant, not something to skip.
func TestRemoveMissingIsABug(t *testing.T) {
	bs := make([]block, 2)
	var x prefixIndex
	h := Hash{1}
	x.add(bs, h, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("removing an absent block did not panic")
		}
	}()
	x.remove(h, 1)
}

package kvcache

import "encoding/binary"

// prefixIndex maps a chain hash to the block holding it: the prefix cache's
// look-up. It is a hash table with open addressing and linear probing, of
// 8-byte slots (the hash's low 32 bits and the block), at most half full.
// A probe compares the low bits first and reads the block's full hash only
// when they match, so a miss, the usual answer for a new block, reads one
// cache line of the table and none of the blocks; a removal shifts the rest
// of its run back rather than leaving a tombstone, so probes stay short
// however long the cache runs. (A Go map keyed by the 16-byte hash took two
// cache misses per operation on a fleet's sixteen caches, a fifth of
// glassbox simulate's time: see docs/simulator.md's "Speed of a fleet".)
//
// Every block whose hashed flag is set is in the index exactly once, under
// its hash; the hashes are SHA-256 output, so their low bits spread evenly.
type prefixIndex struct {
	slots []indexSlot
	mask  uint32 // len(slots)-1, a power of two minus one
	n     int
}

type indexSlot struct {
	lo    uint32 // the hash's low 32 bits: its home slot and a first check
	block int32  // the block holding the hash, plus one; 0 is an empty slot
}

// minIndexSlots is the table's first size; it doubles as entries come.
const minIndexSlots = 64

func low(h Hash) uint32 { return binary.LittleEndian.Uint32(h[:4]) }

// get returns the block holding h.
func (x *prefixIndex) get(bs []block, h Hash) (int32, bool) {
	if x.n == 0 {
		return -1, false
	}
	lo := low(h)
	for i := lo & x.mask; ; i = (i + 1) & x.mask {
		s := x.slots[i]
		if s.block == 0 {
			return -1, false
		}
		if s.lo == lo && bs[s.block-1].hash == h {
			return s.block - 1, true
		}
	}
}

// add indexes block id under h unless a block holds h already, and says
// whether it did. bs[id] need not carry h yet.
func (x *prefixIndex) add(bs []block, h Hash, id int32) bool {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	lo := low(h)
	i := lo & x.mask
	for ; x.slots[i].block != 0; i = (i + 1) & x.mask {
		if s := x.slots[i]; s.lo == lo && bs[s.block-1].hash == h {
			return false
		}
	}
	x.slots[i] = indexSlot{lo: lo, block: id + 1}
	x.n++
	return true
}

// remove drops block id, indexed under h.
func (x *prefixIndex) remove(h Hash, id int32) {
	if x.n == 0 {
		panic("BUG: kvcache: a hashed block is missing from the prefix index")
	}
	i := low(h) & x.mask
	for x.slots[i].block != id+1 {
		if x.slots[i].block == 0 {
			panic("BUG: kvcache: a hashed block is missing from the prefix index")
		}
		i = (i + 1) & x.mask
	}
	// Shift the run after the hole back: an entry moves into the hole
	// when the hole lies between its home slot and where it sits.
	for j := (i + 1) & x.mask; x.slots[j].block != 0; j = (j + 1) & x.mask {
		home := x.slots[j].lo & x.mask
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.n--
}

// grow doubles the table (or makes its first one) and places every entry
// again.
func (x *prefixIndex) grow() {
	old := x.slots
	x.slots = make([]indexSlot, max(2*len(old), minIndexSlots))
	x.mask = uint32(len(x.slots) - 1)
	for _, s := range old {
		if s.block == 0 {
			continue
		}
		i := s.lo & x.mask
		for x.slots[i].block != 0 {
			i = (i + 1) & x.mask
		}
		x.slots[i] = s
	}
}

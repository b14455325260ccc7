package grammar

import (
	"bytes"
	"slices"
)

// Vocab is a model's vocabulary as masks see it: every token's bytes in a
// trie (tokens sharing a prefix share its walk), and the end-of-sequence
// tokens, which are allowed only where the grammar can end. Special
// tokens (no bytes) are never allowed. It is immutable and safe to share;
// build it once per model.
type Vocab struct {
	size  int // token ids are below size; masks have size bits
	nodes []trieNode
	dups  map[int32][]int32 // further tokens with the same bytes as a node's
	eos   []int
	bytes [][]byte // by token id; nil for special tokens
}

// trieNode is one node of the trie in depth-first order: its subtree is
// the nodes up to end. Node 0 is the root (the empty prefix).
type trieNode struct {
	b     byte
	dup   bool // further tokens have these bytes (Vocab.dups)
	depth uint16
	tok   int32 // the token spelled by the path to here, or -1
	end   int32
}

// NewVocab builds the vocabulary of size tokens, whose bytes tokenBytes
// gives (nil or empty for special tokens); eos are the tokens that end a
// sequence.
func NewVocab(size int, tokenBytes func(id int) []byte, eos []int) *Vocab {
	v := &Vocab{size: size, dups: map[int32][]int32{}, bytes: make([][]byte, size)}
	for _, e := range eos {
		if e >= 0 && e < size && !slices.Contains(v.eos, e) {
			v.eos = append(v.eos, e)
		}
	}
	var ids []int32
	for id := range size {
		// End tokens stay out of the trie even when they spell text: they
		// are allowed only where the output may end.
		if b := tokenBytes(id); len(b) > 0 && len(b) < 1<<16 && !slices.Contains(v.eos, id) {
			v.bytes[id] = b
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(v.bytes[a], v.bytes[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.nodes = append(v.nodes, trieNode{tok: -1})
	path := []int32{0} // node of each depth along the current token
	var prev []byte
	for _, id := range ids {
		b := v.bytes[id]
		common := 0
		for common < len(prev) && common < len(b) && prev[common] == b[common] {
			common++
		}
		if common == len(b) && len(b) == len(prev) {
			n := path[len(path)-1]
			v.dups[v.nodes[n].tok] = append(v.dups[v.nodes[n].tok], id)
			v.nodes[n].dup = true
			continue
		}
		path = path[:common+1]
		for d := common; d < len(b); d++ {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{b: b[d], depth: uint16(d + 1), tok: -1})
		}
		v.nodes[path[len(path)-1]].tok = id
		prev = b
	}
	// Subtree ends: a node's subtree runs to the next node no deeper than it.
	stack := []int32{}
	for i := range v.nodes {
		d := v.nodes[i].depth
		for len(stack) > 0 && v.nodes[stack[len(stack)-1]].depth >= d {
			v.nodes[stack[len(stack)-1]].end = int32(i)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, int32(i))
	}
	for _, n := range stack {
		v.nodes[n].end = int32(len(v.nodes))
	}
	return v
}

// Size is the number of token ids (the mask's bits).
func (v *Vocab) Size() int { return v.size }

// MaskWords is the length of a mask over the vocabulary, in 64-bit words.
func (v *Vocab) MaskWords() int { return (v.size + 63) / 64 }

// TokenBytes is a token's bytes, nil for a special token.
func (v *Vocab) TokenBytes(id int) []byte {
	if id < 0 || id >= v.size {
		return nil
	}
	return v.bytes[id]
}

// IsEOS reports whether id ends a sequence.
func (v *Vocab) IsEOS(id int) bool { return slices.Contains(v.eos, id) }

// setNode sets the bits of node n's token and of its duplicates.
func (v *Vocab) setNode(mask []uint64, n *trieNode) {
	mask[n.tok>>6] |= 1 << (n.tok & 63)
	if n.dup {
		for _, d := range v.dups[n.tok] {
			mask[d>>6] |= 1 << (d & 63)
		}
	}
}

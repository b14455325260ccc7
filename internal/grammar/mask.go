package grammar

import (
	"math/bits"
	"sync"
)

// Compiled is a grammar over one vocabulary: it keeps, for every frame a
// matcher reaches, which tokens that frame decides on its own. Masks are
// computed on first use, possibly on several executor threads at once; a
// Compiled is safe for concurrent use and meant to be shared by every
// request of the same shape.
type Compiled struct {
	g     *Grammar
	v     *Vocab
	slots []maskSlot // by frame
}

type maskSlot struct {
	once sync.Once
	m    *frameMask
}

// frameMask is what a frame decides over the vocabulary, from a thread at
// it with an unknown caller beneath: the tokens it accepts whatever the
// caller (its rule reads them whole, or ends exactly at their end), and
// the trie nodes after which its rule may end with bytes left, whose
// tokens' fate depends on what the caller reads next.
type frameMask struct {
	set       []uint64 // the accepted tokens as a bitset, or nil
	list      []int32  // or as a list, when few
	uncertain []int32  // trie nodes; their descendants are decided per matcher
}

// Compile pairs g with v.
func Compile(g *Grammar, v *Vocab) *Compiled {
	return &Compiled{g: g, v: v, slots: make([]maskSlot, len(g.frames))}
}

// Vocab is the vocabulary the masks are over.
func (c *Compiled) Vocab() *Vocab { return c.v }

// mask returns frame f's precomputed mask, computing it on first use.
func (c *Compiled) mask(f int32) *frameMask {
	s := &c.slots[f]
	s.once.Do(func() { s.m = c.precompute(f) })
	return s.m
}

// precompute walks the whole trie from a thread at f over an unknown
// caller (or over nothing, when f's rule is the root and no rule calls it:
// its end is the output's end).
func (c *Compiled) precompute(f int32) *frameMask {
	m := newMachine(c.g)
	bottom := baseStack
	if c.g.frames[f].rule == 0 && !c.g.rootCalled {
		bottom = emptyStack
	}
	start, _, escaped := m.closure([]thread{{f, bottom}}, nil)
	set := make([]uint64, c.v.MaskWords())
	fm := &frameMask{}
	if escaped {
		fm.uncertain = append(fm.uncertain, 0) // the rule may end at once: every token may depend on the caller
	}
	var w walker
	w.walk(m, c.v, 0, start, set, &fm.uncertain)
	n := 0
	for _, word := range set {
		n += bits.OnesCount64(word)
	}
	if n*32 < c.v.size {
		fm.list = make([]int32, 0, n)
		for i, word := range set {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				fm.list = append(fm.list, int32(i*64+b))
				word &= word - 1
			}
		}
	} else {
		fm.set = set
	}
	return fm
}

// walker walks the trie; it keeps its per-depth buffers between walks.
type walker struct {
	levels [][]thread
}

// walk visits the descendants of trie node from, starting in the state of
// threads start (the state after from's bytes), and sets in mask every
// token a thread reads whole, or at whose end the output or the caller's
// rule may end. With uncertain non-nil it also appends the nodes after
// which the caller's rule ended with the subtree left to read.
func (w *walker) walk(m *machine, v *Vocab, from int32, start []thread, mask []uint64, uncertain *[]int32) {
	if len(start) == 0 {
		return
	}
	nodes := v.nodes
	base := int(nodes[from].depth)
	end := nodes[from].end
	if len(w.levels) == 0 {
		w.levels = make([][]thread, 1, 64)
	}
	w.levels[0] = append(w.levels[0][:0], start...)
	for i := from + 1; i < end; {
		n := &nodes[i]
		d := int(n.depth) - base
		for len(w.levels) <= d {
			w.levels = append(w.levels, nil)
		}
		cur, accept, escaped := m.step(w.levels[d-1], n.b, w.levels[d][:0])
		w.levels[d] = cur
		if n.tok >= 0 && (len(cur) > 0 || accept || escaped) {
			v.setNode(mask, n)
		}
		if escaped && uncertain != nil && n.end > i+1 {
			*uncertain = append(*uncertain, i)
		}
		if len(cur) == 0 {
			i = n.end
			continue
		}
		i++
	}
}

// or adds the frame's accepted tokens to mask.
func (fm *frameMask) or(mask []uint64) {
	if fm.set != nil {
		for i, w := range fm.set {
			mask[i] |= w
		}
		return
	}
	for _, t := range fm.list {
		mask[t>>6] |= 1 << (t & 63)
	}
}

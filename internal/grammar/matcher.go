package grammar

// Matcher follows one sequence through a compiled grammar: Accept moves it
// past each generated token, FillMask says which tokens may come next. It
// is not safe for concurrent use; the engine calls Accept and the executor
// FillMask, never at the same time.
type Matcher struct {
	c        *Compiled
	m        *machine
	kernel   []thread
	accept   bool // the output may end here
	finished bool // an end-of-sequence token was accepted
	w        walker
	buf      [2][]thread
	cont     []thread
	full     []uint64 // the whole mask, when the caller's is shorter
}

// compactAt is the arena size past which Accept drops the stacks that the
// walks behind masks left.
const compactAt = 1 << 14

// NewMatcher starts a matcher at the beginning of the output.
func (c *Compiled) NewMatcher() *Matcher {
	mt := &Matcher{c: c, m: newMachine(c.g)}
	mt.kernel, mt.accept, _ = mt.m.closure([]thread{{c.g.starts[0], emptyStack}}, nil)
	return mt
}

// JSON reports whether the output is a JSON text (a JSON Schema's or
// json_object's grammar), for the simulated model, which writes JSON as a
// model does rather than pick among the allowed bytes.
func (mt *Matcher) JSON() bool { return mt.c.g.json }

// CanEnd reports whether the output may end here (an end-of-sequence
// token is allowed).
func (mt *Matcher) CanEnd() bool { return mt.accept }

// Done reports whether nothing but the end may come: the grammar is
// complete, or an end-of-sequence token was accepted.
func (mt *Matcher) Done() bool { return mt.finished || (mt.accept && len(mt.kernel) == 0) }

// Accept moves past token tok. It reports false, and changes nothing, when
// the grammar does not allow tok here.
func (mt *Matcher) Accept(tok int) bool {
	v := mt.c.v
	if v.IsEOS(tok) {
		if !mt.accept || mt.finished {
			return false
		}
		mt.finished = true
		mt.kernel = mt.kernel[:0]
		return true
	}
	return mt.AcceptBytes(v.TokenBytes(tok))
}

// AcceptBytes moves past b as Accept moves past a token spelling it.
func (mt *Matcher) AcceptBytes(b []byte) bool {
	if len(b) == 0 || mt.finished {
		return false
	}
	cur, accept := mt.kernel, false
	for i, c := range b {
		if len(cur) == 0 {
			return false
		}
		next := &mt.buf[i&1]
		*next, accept, _ = mt.m.step(cur, c, (*next)[:0])
		cur = *next
	}
	if len(cur) == 0 && !accept {
		return false
	}
	mt.kernel = append(mt.kernel[:0], cur...)
	mt.accept = accept
	if len(mt.m.nodes) > compactAt {
		mt.m.compact(mt.kernel)
	}
	return true
}

// FillMask sets in mask the bit of every token that may come next and
// clears the others. A mask shorter than the vocabulary's MaskWords gets
// its first words (a model whose logits are fewer than the tokenizer's
// tokens cannot sample the rest).
func (mt *Matcher) FillMask(mask []uint64) {
	n := mt.c.v.MaskWords()
	if len(mask) >= n {
		clear(mask[n:])
		mt.fill(mask[:n])
		return
	}
	if len(mt.full) < n {
		mt.full = make([]uint64, n)
	}
	mt.fill(mt.full)
	copy(mask, mt.full)
}

func (mt *Matcher) fill(mask []uint64) {
	clear(mask)
	v := mt.c.v
	if mt.finished {
		return
	}
	for _, t := range mt.kernel {
		fm := mt.c.mask(t.top)
		fm.or(mask)
		if len(fm.uncertain) == 0 || t.rest == emptyStack {
			continue // nothing follows the root's end
		}
		// The tokens that read past the end of t's rule: walk them on
		// from where the caller resumes.
		n := mt.m.nodes[t.rest]
		mt.cont, _, _ = mt.m.closure([]thread{{n.frame, n.parent}}, mt.cont[:0])
		if len(mt.cont) == 0 {
			continue
		}
		for _, u := range fm.uncertain {
			mt.w.walk(mt.m, v, u, mt.cont, mask, nil)
		}
	}
	if mt.accept {
		for _, e := range v.eos {
			mask[e>>6] |= 1 << (e & 63)
		}
	}
}

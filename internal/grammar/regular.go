package grammar

import "slices"

// Regular languages that a string must belong to at once — a schema's
// pattern, its format and its length bounds, a pattern's leading
// lookaheads — are intersected (and a negative lookahead complemented) as
// deterministic byte automata, then embedded in a rule as one expression.
// Bytes are what the automata read, so the languages are of the encoded
// strings (UTF-8, or JSON-escaped inside a JSON string); an encoding that
// decodes one way only keeps intersection and complement exact.

// dfaExpr matches what a call-free automaton accepts.
type dfaExpr struct{ d *dfa }

func (dfaExpr) isExpr() {}

// regularDFA determinizes x, which must call no rule.
func regularDFA(x Expr) (*dfa, error) {
	n := &nfa{}
	start, end := n.add(), n.add()
	if err := n.compile(x, start, end, nil); err != nil {
		return nil, err
	}
	n.final = end
	return n.determinize(start)
}

// embed adds d's states to n between from and to.
func (n *nfa) embed(d *dfa, from, to int) error {
	if len(n.states)+len(d.states) > maxRuleStates {
		return errTooLarge
	}
	base := len(n.states)
	for range d.states {
		n.add()
	}
	n.states[from].eps = append(n.states[from].eps, base)
	for i, s := range d.states {
		st := &n.states[base+i]
		for _, r := range s.bytes {
			st.bytes = append(st.bytes, nbyte{byteRange{r.lo, r.hi}, base + int(r.to)})
		}
		if s.final {
			st.eps = append(st.eps, to)
		}
	}
	return nil
}

// intersect is the product automaton: the strings both accept.
func intersect(a, b *dfa) (*dfa, error) {
	type pair struct{ i, j int32 }
	out := &dfa{}
	ids := map[pair]int32{}
	var queue []pair
	intern := func(p pair) (int32, error) {
		if id, ok := ids[p]; ok {
			return id, nil
		}
		if len(out.states) >= maxRuleStates {
			return 0, errTooLarge
		}
		id := int32(len(out.states))
		ids[p] = id
		queue = append(queue, p)
		out.states = append(out.states, dstate{final: a.states[p.i].final && b.states[p.j].final})
		return id, nil
	}
	if _, err := intern(pair{0, 0}); err != nil {
		return nil, err
	}
	for k := 0; k < len(queue); k++ {
		p := queue[k]
		var ranges []drange
		for _, x := range a.states[p.i].bytes {
			for _, y := range b.states[p.j].bytes {
				lo, hi := max(x.lo, y.lo), min(x.hi, y.hi)
				if lo > hi {
					continue
				}
				to, err := intern(pair{x.to, y.to})
				if err != nil {
					return nil, err
				}
				ranges = append(ranges, drange{lo, hi, to})
			}
		}
		slices.SortFunc(ranges, func(x, y drange) int { return int(x.lo) - int(y.lo) })
		out.states[k].bytes = ranges
	}
	return out, nil
}

// complement accepts every byte string a does not: a is completed with a
// state that rejects for good, and its finals are flipped.
func complement(a *dfa) *dfa {
	out := &dfa{states: make([]dstate, len(a.states)+1)}
	sink := int32(len(a.states))
	for i := range out.states {
		var edges []drange
		final := true // the sink accepts: nothing a accepts passes through it
		if i < len(a.states) {
			edges, final = a.states[i].bytes, !a.states[i].final
		}
		var full []drange
		next := 0
		for _, r := range edges {
			if int(r.lo) > next {
				full = append(full, drange{byte(next), r.lo - 1, sink})
			}
			full = append(full, r)
			next = int(r.hi) + 1
		}
		if next <= 255 {
			full = append(full, drange{byte(next), 255, sink})
		}
		out.states[i] = dstate{final: final, bytes: full}
	}
	return out
}

// empty reports whether d accepts nothing.
func (d *dfa) empty() bool {
	seen := make([]bool, len(d.states))
	stack := []int32{0}
	seen[0] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.states[s].final {
			return false
		}
		for _, r := range d.states[s].bytes {
			if !seen[r.to] {
				seen[r.to] = true
				stack = append(stack, r.to)
			}
		}
	}
	return true
}

// lengths are the fewest and most characters a regex matches; hi is -1
// when unbounded.
func (n *reNode) lengths() (lo, hi int) {
	switch n.op {
	case reChar:
		return 1, 1
	case reCat:
		for _, s := range n.subs {
			a, b := s.lengths()
			lo += a
			if hi >= 0 {
				hi = addLen(hi, b)
			}
		}
		return lo, hi
	case reAlt:
		lo = -1
		for _, s := range n.subs {
			a, b := s.lengths()
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && (b < 0 || b > hi) {
				hi = b
			}
		}
		return max(lo, 0), hi
	case reRep:
		a, b := n.subs[0].lengths()
		lo = a * n.min
		switch {
		case n.max < 0 && b != 0:
			hi = -1
		case n.max < 0:
			hi = 0
		case b < 0:
			hi = -1
		default:
			hi = b * n.max
		}
		return lo, hi
	}
	return 0, -1
}

func addLen(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

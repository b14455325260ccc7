package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// nfa is one rule's automaton while it is built (Thompson's construction):
// byte edges, call edges (another rule, then on to a state) and epsilons.
type nfa struct {
	states []nstate
	final  int
}

type nstate struct {
	eps   []int
	bytes []nbyte
	calls []ncall
}

type nbyte struct {
	r  byteRange
	to int
}

type ncall struct{ rule, to int }

var errTooLarge = errors.New("the grammar is too large")

func (n *nfa) add() int {
	n.states = append(n.states, nstate{})
	return len(n.states) - 1
}

// compile adds edges from `from` to `to` that match x; index maps the
// builder's rule ids to the grammar's.
func (n *nfa) compile(x Expr, from, to int, index map[int]int) error {
	if len(n.states) > maxRuleStates {
		return errTooLarge
	}
	switch x := x.(type) {
	case litExpr:
		cur := from
		for i := 0; i < len(x); i++ {
			next := to
			if i < len(x)-1 {
				next = n.add()
			}
			n.states[cur].bytes = append(n.states[cur].bytes, nbyte{byteRange{x[i], x[i]}, next})
			cur = next
		}
		if len(x) == 0 {
			n.states[from].eps = append(n.states[from].eps, to)
		}
	case classExpr:
		for _, r := range x {
			n.states[from].bytes = append(n.states[from].bytes, nbyte{r, to})
		}
	case seqExpr:
		if len(x) == 0 {
			n.states[from].eps = append(n.states[from].eps, to)
			return nil
		}
		cur := from
		for i, y := range x {
			next := to
			if i < len(x)-1 {
				next = n.add()
			}
			if err := n.compile(y, cur, next, index); err != nil {
				return err
			}
			cur = next
		}
	case altExpr:
		for _, y := range x {
			if err := n.compile(y, from, to, index); err != nil {
				return err
			}
		}
	case repExpr:
		return n.repeat(x, from, to, index)
	case refExpr:
		if index == nil {
			return fmt.Errorf("BUG: grammar: a rule call in a regular expression")
		}
		n.states[from].calls = append(n.states[from].calls, ncall{index[int(x)], to})
	case dfaExpr:
		return n.embed(x.d, from, to)
	default:
		return fmt.Errorf("BUG: grammar: unknown expression %T", x)
	}
	return nil
}

// repeat compiles x{min,max}: min copies, then max-min optional ones (or a
// loop when unbounded), each optional copy able to skip to the end.
func (n *nfa) repeat(x repExpr, from, to int, index map[int]int) error {
	if x.min < 0 || (x.max >= 0 && x.max < x.min) {
		return syntaxErr("repetition", "repetition {%d,%d} is empty", x.min, x.max)
	}
	if x.min > maxRepeat || x.max > maxRepeat {
		return syntaxErr("repetition", "a repetition bound above %d is not supported", maxRepeat)
	}
	cur := from
	for range x.min {
		next := n.add()
		if err := n.compile(x.x, cur, next, index); err != nil {
			return err
		}
		cur = next
	}
	if x.max < 0 {
		loop := n.add()
		n.states[cur].eps = append(n.states[cur].eps, loop)
		n.states[loop].eps = append(n.states[loop].eps, to)
		body := n.add()
		if err := n.compile(x.x, loop, body, index); err != nil {
			return err
		}
		n.states[body].eps = append(n.states[body].eps, loop)
		return nil
	}
	for range x.max - x.min {
		n.states[cur].eps = append(n.states[cur].eps, to)
		next := n.add()
		if err := n.compile(x.x, cur, next, index); err != nil {
			return err
		}
		cur = next
	}
	n.states[cur].eps = append(n.states[cur].eps, to)
	return nil
}

// dfa is one rule's automaton after subset construction: at most one
// target per byte and per called rule.
type dfa struct {
	states []dstate
}

type dstate struct {
	final bool
	bytes []drange // sorted, disjoint
	calls []ncall  // sorted by rule, one per rule
}

type drange struct {
	lo, hi byte
	to     int32
}

func (n *nfa) closure(set []int) []int {
	seen := make(map[int]bool, len(set))
	out := make([]int, 0, len(set))
	stack := slices.Clone(set)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		stack = append(stack, n.states[s].eps...)
	}
	slices.Sort(out)
	return out
}

func setKey(set []int) string {
	var b strings.Builder
	for _, s := range set {
		b.WriteString(strconv.Itoa(s))
		b.WriteByte(',')
	}
	return b.String()
}

// determinize runs the subset construction from start.
func (n *nfa) determinize(start int) (*dfa, error) {
	d := &dfa{}
	ids := map[string]int32{}
	var sets [][]int
	intern := func(set []int) (int32, error) {
		key := setKey(set)
		if id, ok := ids[key]; ok {
			return id, nil
		}
		if len(sets) >= maxRuleStates {
			return 0, errTooLarge
		}
		id := int32(len(sets))
		ids[key] = id
		sets = append(sets, set)
		d.states = append(d.states, dstate{final: slices.Contains(set, n.final)})
		return id, nil
	}
	if _, err := intern(n.closure([]int{start})); err != nil {
		return nil, err
	}
	for i := 0; i < len(sets); i++ {
		set := sets[i]
		// Byte edges: cut 0..255 at every range boundary, then each piece
		// goes to the closure of every target covering it.
		var cuts []int
		for _, s := range set {
			for _, e := range n.states[s].bytes {
				cuts = append(cuts, int(e.r.lo), int(e.r.hi)+1)
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		var ranges []drange
		for k := 0; k+1 < len(cuts); k++ {
			lo, hi := cuts[k], cuts[k+1]-1
			var targets []int
			for _, s := range set {
				for _, e := range n.states[s].bytes {
					if int(e.r.lo) <= lo && hi <= int(e.r.hi) {
						targets = append(targets, e.to)
					}
				}
			}
			if len(targets) == 0 {
				continue
			}
			to, err := intern(n.closure(targets))
			if err != nil {
				return nil, err
			}
			if m := len(ranges); m > 0 && ranges[m-1].to == to && int(ranges[m-1].hi)+1 == lo {
				ranges[m-1].hi = byte(hi)
				continue
			}
			ranges = append(ranges, drange{byte(lo), byte(hi), to})
		}
		// Call edges: one per called rule.
		byRule := map[int][]int{}
		for _, s := range set {
			for _, c := range n.states[s].calls {
				byRule[c.rule] = append(byRule[c.rule], c.to)
			}
		}
		var calls []ncall
		for rule, targets := range byRule {
			to, err := intern(n.closure(targets))
			if err != nil {
				return nil, err
			}
			calls = append(calls, ncall{rule, int(to)})
		}
		slices.SortFunc(calls, func(a, b ncall) int { return a.rule - b.rule })
		d.states[i].bytes, d.states[i].calls = ranges, calls
	}
	return d, nil
}

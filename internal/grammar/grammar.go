package grammar

import (
	"errors"
	"fmt"
)

// ErrEmpty is the error for a grammar (or schema) that no string matches.
var ErrEmpty = errors.New("no output can satisfy it")

// Grammar is a compiled grammar: rules of deterministic byte automata whose
// states are numbered globally ("frames"); a call edge enters another
// rule's start and, when that rule ends, the caller continues at the
// edge's return frame. Rule 0 is the root. It is immutable and safe to
// share.
type Grammar struct {
	names      []string
	frames     []frame
	starts     []int32 // each rule's start frame
	rootCalled bool    // some rule calls the root, so its end is not the end of the output
	json       bool    // the output is a JSON text (a schema's, or any object)
}

type frame struct {
	rule  int32
	final bool // the rule may end here
	bytes []drange
	calls []fcall
}

type fcall struct{ start, ret int32 }

// next is the frame after byte b, or -1.
func (f *frame) next(b byte) int32 {
	r := f.bytes
	if len(r) > 8 {
		lo, hi := 0, len(r)
		for lo < hi {
			m := (lo + hi) / 2
			switch {
			case b < r[m].lo:
				hi = m
			case b > r[m].hi:
				lo = m + 1
			default:
				return r[m].to
			}
		}
		return -1
	}
	for i := range r {
		if b >= r[i].lo && b <= r[i].hi {
			return r[i].to
		}
	}
	return -1
}

// NumFrames is the number of automaton states of the whole grammar.
func (g *Grammar) NumFrames() int { return len(g.frames) }

// link flattens the rules' automata into frames, trimmed to the states
// that can reach an end, and checks for left recursion.
func (g *Grammar) link(dfas []*dfa) error {
	total := 0
	for _, d := range dfas {
		total += len(d.states)
	}
	if total > maxGrammarSize {
		return errTooLarge
	}
	productive := productiveRules(dfas)
	if !productive[0] {
		return ErrEmpty
	}
	// Keep the states reachable from each start and co-reachable to an end.
	keep := make([][]bool, len(dfas))
	for i, d := range dfas {
		keep[i] = trimRule(d, productive)
	}
	if err := checkLeftRecursion(dfas, keep, productive); err != nil {
		return fmt.Errorf("%w (rule %q)", errLeftRecursion, g.names[err.(leftRecursion).rule])
	}
	ids := make([][]int32, len(dfas))
	for i, d := range dfas {
		ids[i] = make([]int32, len(d.states))
		for s := range d.states {
			ids[i][s] = -1
			if keep[i][s] {
				ids[i][s] = int32(len(g.frames))
				g.frames = append(g.frames, frame{rule: int32(i), final: d.states[s].final})
			}
		}
		g.starts = append(g.starts, ids[i][0]) // -1 for a rule that matches nothing (never called)
	}
	for i, d := range dfas {
		for s, st := range d.states {
			id := ids[i][s]
			if id < 0 {
				continue
			}
			f := &g.frames[id]
			for _, r := range st.bytes {
				if to := ids[i][r.to]; to >= 0 {
					f.bytes = append(f.bytes, drange{r.lo, r.hi, to})
				}
			}
			for _, c := range st.calls {
				if !productive[c.rule] {
					continue
				}
				if to := ids[i][c.to]; to >= 0 {
					f.calls = append(f.calls, fcall{g.starts[c.rule], to})
					if c.rule == 0 {
						g.rootCalled = true
					}
				}
			}
		}
	}
	return nil
}

var errLeftRecursion = errors.New("left recursion is not supported")

type leftRecursion struct{ rule int }

func (l leftRecursion) Error() string { return "left recursion" }

// productiveRules finds the rules that match at least one string.
func productiveRules(dfas []*dfa) []bool {
	prod := make([]bool, len(dfas))
	for changed := true; changed; {
		changed = false
		for i, d := range dfas {
			if !prod[i] && coReachable(d, prod)[0] {
				prod[i], changed = true, true
			}
		}
	}
	return prod
}

// coReachable marks the states of d that reach an end through bytes and
// calls of productive rules: a backward search from the final states.
func coReachable(d *dfa, prod []bool) []bool {
	back := make([][]int32, len(d.states))
	for s, st := range d.states {
		for _, r := range st.bytes {
			back[r.to] = append(back[r.to], int32(s))
		}
		for _, c := range st.calls {
			if prod[c.rule] {
				back[c.to] = append(back[c.to], int32(s))
			}
		}
	}
	ok := make([]bool, len(d.states))
	var stack []int32
	for s := range d.states {
		if d.states[s].final {
			ok[s] = true
			stack = append(stack, int32(s))
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range back[s] {
			if !ok[p] {
				ok[p] = true
				stack = append(stack, p)
			}
		}
	}
	return ok
}

// trimRule marks the states reachable from the start that can still end.
func trimRule(d *dfa, prod []bool) []bool {
	co := coReachable(d, prod)
	keep := make([]bool, len(d.states))
	if !co[0] {
		return keep
	}
	stack := []int32{0}
	keep[0] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visit := func(t int32) {
			if co[t] && !keep[t] {
				keep[t] = true
				stack = append(stack, t)
			}
		}
		for _, r := range d.states[s].bytes {
			visit(r.to)
		}
		for _, c := range d.states[s].calls {
			if prod[c.rule] {
				visit(int32(c.to))
			}
		}
	}
	return keep
}

// checkLeftRecursion refuses a rule that can call itself before matching a
// byte: a matcher would push frames for ever.
func checkLeftRecursion(dfas []*dfa, keep [][]bool, prod []bool) error {
	// nullable: the rule can end without a byte.
	nullable := make([]bool, len(dfas))
	for changed := true; changed; {
		changed = false
		for i, d := range dfas {
			if nullable[i] || !prod[i] {
				continue
			}
			for _, s := range epsilonReach(d, keep[i], nullable) {
				if d.states[s].final {
					nullable[i], changed = true, true
					break
				}
			}
		}
	}
	// leads[i]: the rules rule i calls before any byte.
	leads := make([][]int, len(dfas))
	for i, d := range dfas {
		if !prod[i] {
			continue
		}
		for _, s := range epsilonReach(d, keep[i], nullable) {
			for _, c := range d.states[s].calls {
				if prod[c.rule] {
					leads[i] = append(leads[i], c.rule)
				}
			}
		}
	}
	const (
		unseen = iota
		active
		done
	)
	mark := make([]int, len(dfas))
	var visit func(i int) error
	visit = func(i int) error {
		mark[i] = active
		for _, j := range leads[i] {
			switch mark[j] {
			case active:
				return leftRecursion{j}
			case unseen:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		mark[i] = done
		return nil
	}
	for i := range dfas {
		if mark[i] == unseen {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// epsilonReach lists the states reachable from the start without a byte:
// through calls of nullable rules only.
func epsilonReach(d *dfa, keep []bool, nullable []bool) []int32 {
	if !keep[0] {
		return nil
	}
	seen := map[int32]bool{0: true}
	out := []int32{0}
	for i := 0; i < len(out); i++ {
		for _, c := range d.states[out[i]].calls {
			t := int32(c.to)
			if nullable[c.rule] && keep[t] && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

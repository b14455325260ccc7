// Package grammar owns constrained decoding (structured outputs): JSON
// Schema, regular expressions, choices and GBNF grammars compiled into one
// grammar form (rules of byte automata that call each other), a matcher per
// sequence that follows what has been generated, and the token masks that
// say, over a model's real vocabulary, which tokens may come next.
//
// A grammar is compiled once per request shape and shared; its per-state
// masks are computed the first time a state is reached, by walking the
// vocabulary's token trie, and kept, so a mask costs a few bitset unions
// and a walk over the few tokens whose fate depends on what lies beyond
// the current rule (xgrammar's split of context-independent and
// context-dependent tokens). The server, the library and the simulator all
// constrain through it.
//
// It is pure: no goroutines, no I/O, no clock. It must not import net/http,
// Prometheus, OpenTelemetry, the engine or an executor; the engine declares
// the interface a Matcher satisfies.
package grammar

import (
	"fmt"
)

// Expr is a grammar expression over bytes. Build them with the functions
// below; a Builder turns named rules of them into a Grammar.
type Expr interface{ isExpr() }

type (
	litExpr   string // these bytes in order
	classExpr []byteRange
	seqExpr   []Expr
	altExpr   []Expr
	repExpr   struct {
		x        Expr
		min, max int // max < 0: unbounded
	}
	refExpr int // a rule of the builder
)

func (litExpr) isExpr()   {}
func (classExpr) isExpr() {}
func (seqExpr) isExpr()   {}
func (altExpr) isExpr()   {}
func (repExpr) isExpr()   {}
func (refExpr) isExpr()   {}

// byteRange is the bytes lo..hi inclusive.
type byteRange struct{ lo, hi byte }

// Lit matches s exactly.
func Lit(s string) Expr { return litExpr(s) }

// Bytes matches one byte in lo..hi.
func Bytes(lo, hi byte) Expr { return classExpr{{lo, hi}} }

// Seq matches each of xs in turn.
func Seq(xs ...Expr) Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	return seqExpr(xs)
}

// Alt matches any one of xs; with none it matches nothing.
func Alt(xs ...Expr) Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	return altExpr(xs)
}

// Rep matches x between min and max times (max < 0: no bound).
func Rep(x Expr, min, max int) Expr { return repExpr{x, min, max} }

// Opt matches x or nothing.
func Opt(x Expr) Expr { return repExpr{x, 0, 1} }

// Star matches x any number of times.
func Star(x Expr) Expr { return repExpr{x, 0, -1} }

// Plus matches x one or more times.
func Plus(x Expr) Expr { return repExpr{x, 1, -1} }

// Empty matches the empty string.
func Empty() Expr { return litExpr("") }

// Limits bound what a grammar may grow to, so that a request cannot make
// the server build an automaton of unbounded size.
const (
	maxRuleStates  = 1 << 16 // automaton states of one rule, before and after determinizing
	maxRepeat      = 4096    // the bound of one repetition ({n,m}, maxLength, maxItems)
	maxGrammarSize = 1 << 18 // states of the whole grammar
)

// Builder collects named rules. Declare a rule to refer to it before it is
// defined (recursion); Define gives its expression.
type Builder struct {
	names  []string
	exprs  []Expr
	byName map[string]int
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{byName: map[string]int{}} }

// Rule returns the reference to the rule named name, declaring it when new.
func (b *Builder) Rule(name string) Expr {
	if id, ok := b.byName[name]; ok {
		return refExpr(id)
	}
	id := len(b.names)
	b.names = append(b.names, name)
	b.exprs = append(b.exprs, nil)
	b.byName[name] = id
	return refExpr(id)
}

// Has reports whether a rule of that name was declared.
func (b *Builder) Has(name string) bool {
	_, ok := b.byName[name]
	return ok
}

// Defined reports whether the rule named name has its expression.
func (b *Builder) Defined(name string) bool {
	id, ok := b.byName[name]
	return ok && b.exprs[id] != nil
}

// Define sets the expression of the rule named name.
func (b *Builder) Define(name string, x Expr) {
	id := int(b.Rule(name).(refExpr))
	b.exprs[id] = x
}

// Build compiles the rules reachable from root into a Grammar: each rule
// becomes a deterministic byte automaton whose edges may also call other
// rules; states that cannot reach the end are removed, so a matcher that
// is alive can always finish. It fails on an undefined rule, left
// recursion, an empty language and on automata past the size limits.
func (b *Builder) Build(root string) (*Grammar, error) {
	rid, ok := b.byName[root]
	if !ok {
		return nil, fmt.Errorf("grammar has no rule %q", root)
	}
	// Number the reachable rules, root first.
	order := []int{rid}
	index := map[int]int{rid: 0}
	var refs func(x Expr)
	refs = func(x Expr) {
		switch x := x.(type) {
		case refExpr:
			if _, seen := index[int(x)]; !seen {
				index[int(x)] = len(order)
				order = append(order, int(x))
			}
		case seqExpr:
			for _, y := range x {
				refs(y)
			}
		case altExpr:
			for _, y := range x {
				refs(y)
			}
		case repExpr:
			refs(x.x)
		}
	}
	for i := 0; i < len(order); i++ {
		x := b.exprs[order[i]]
		if x == nil {
			return nil, fmt.Errorf("grammar rule %q is used but not defined", b.names[order[i]])
		}
		refs(x)
	}
	g := &Grammar{}
	dfas := make([]*dfa, len(order))
	for i, id := range order {
		n := &nfa{}
		start, end := n.add(), n.add()
		if err := n.compile(b.exprs[id], start, end, index); err != nil {
			return nil, fmt.Errorf("grammar rule %q: %w", b.names[id], err)
		}
		n.final = end
		d, err := n.determinize(start)
		if err != nil {
			return nil, fmt.Errorf("grammar rule %q: %w", b.names[id], err)
		}
		dfas[i] = d
		g.names = append(g.names, b.names[id])
	}
	if err := g.link(dfas); err != nil {
		return nil, err
	}
	return g, nil
}

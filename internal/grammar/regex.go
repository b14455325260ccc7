package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The regular expressions of structured outputs (vLLM's regex, JSON
// Schema's pattern) in the subset both Python's re and ECMAScript read
// alike: literals, ., classes, \d \w \s and their negations, groups,
// alternation and the greedy or lazy quantifiers. An output matches the
// whole expression (as re.fullmatch); ^ and $ are allowed at its ends
// only. Backreferences, lookarounds, word boundaries, flags and Unicode
// property classes are refused by name. Where the two dialects' classes
// differ (\w is ASCII in one and Unicode in the other), the narrower
// reading is generated, so an output matches under both.

// SyntaxError is a grammar, regex or schema that cannot be compiled, with
// what to name in the error: the keyword or construct at fault.
type SyntaxError struct {
	What string // the construct or keyword, e.g. "lookahead", "multipleOf"
	Msg  string
}

func (e *SyntaxError) Error() string { return e.Msg }

func syntaxErr(what, format string, args ...any) *SyntaxError {
	return &SyntaxError{What: what, Msg: fmt.Sprintf(format, args...)}
}

type reOp int

const (
	reChar reOp = iota // one character of set
	reCat
	reAlt
	reRep
)

type reNode struct {
	op       reOp
	set      runeSet
	subs     []*reNode
	min, max int
}

type reParser struct {
	src   string
	pos   int
	ahead bool // inside a leading lookahead, where "$)" ends it
}

// regex is a parsed expression: the match, and the lookaheads at its
// start that the whole string must also pass.
type regex struct {
	main  *reNode
	ahead []lookahead
}

// lookahead is (?=x) or, negated, (?!x) at the start of an expression:
// the string must (not) start with a match of x, or with end set be one.
type lookahead struct {
	neg, end bool
	x        *reNode
}

// parseRegex reads a whole expression. Lookaheads are read only at its
// start (after ^), where they constrain the whole string (pydantic's
// decimal, older zod emails); elsewhere they are refused.
func parseRegex(src string) (*regex, error) {
	p := &reParser{src: src}
	if strings.HasPrefix(src, "^") {
		p.pos = 1
	}
	var ahead []lookahead
	for strings.HasPrefix(p.src[p.pos:], "(?=") || strings.HasPrefix(p.src[p.pos:], "(?!") {
		la := lookahead{neg: p.src[p.pos+2] == '!'}
		p.pos += 3
		if p.more() && p.peek() == '^' {
			p.pos++ // the lookahead is at the start already
		}
		p.ahead = true
		x, err := p.alt()
		p.ahead = false
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(p.src[p.pos:], "$)") {
			la.end = true
			p.pos++
		}
		if !p.more() || p.peek() != ')' {
			return nil, syntaxErr("regex", "regex %q: missing ) after a lookahead", src)
		}
		p.pos++
		la.x = x
		ahead = append(ahead, la)
	}
	n, err := p.alt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == '$' && p.pos == len(p.src)-1 {
		p.pos++
	}
	if p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ')':
			return nil, syntaxErr("regex", "regex %q: unmatched ) at %d", src, p.pos)
		case '^', '$':
			return nil, syntaxErr("anchor", "regex %q: anchors are supported only at its start and end", src)
		}
		return nil, syntaxErr("regex", "regex %q: unexpected %q at %d", src, p.src[p.pos], p.pos)
	}
	return &regex{main: n, ahead: ahead}, nil
}

// expr is the expression's language with each character encoded by chars;
// lookaheads intersect it as automata.
func (r *regex) expr(chars func(runeSet) Expr) (Expr, error) {
	x := r.main.toExpr(chars)
	if len(r.ahead) == 0 {
		return x, nil
	}
	d, err := regularDFA(x)
	if err != nil {
		return nil, err
	}
	anything := Star(chars(anyRune()))
	for _, la := range r.ahead {
		y := la.x.toExpr(chars)
		if !la.end {
			y = Seq(y, anything)
		}
		l, err := regularDFA(y)
		if err != nil {
			return nil, err
		}
		if la.neg {
			l = complement(l)
		}
		if d, err = intersect(d, l); err != nil {
			return nil, err
		}
	}
	return dfaExpr{d}, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) peek() byte { return p.src[p.pos] }

func (p *reParser) alt() (*reNode, error) {
	var subs []*reNode
	for {
		n, err := p.cat()
		if err != nil {
			return nil, err
		}
		subs = append(subs, n)
		if !p.more() || p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(subs) == 1 {
		return subs[0], nil
	}
	return &reNode{op: reAlt, subs: subs}, nil
}

func (p *reParser) cat() (*reNode, error) {
	n := &reNode{op: reCat}
	for p.more() {
		c := p.peek()
		if c == '|' || c == ')' {
			break
		}
		if c == '$' && (p.pos == len(p.src)-1 || p.ahead && strings.HasPrefix(p.src[p.pos:], "$)")) {
			break
		}
		atom, err := p.atom()
		if err != nil {
			return nil, err
		}
		if atom, err = p.quantified(atom); err != nil {
			return nil, err
		}
		n.subs = append(n.subs, atom)
	}
	return n, nil
}

func (p *reParser) quantified(atom *reNode) (*reNode, error) {
	for p.more() {
		min, max := -1, -1
		switch p.peek() {
		case '*':
			min, max = 0, -1
			p.pos++
		case '+':
			min, max = 1, -1
			p.pos++
		case '?':
			min, max = 0, 1
			p.pos++
		case '{':
			body, _, _ := strings.Cut(p.src[p.pos+1:], "}")
			for _, n := range strings.Split(body, ",") {
				if len(n) > 1 && n[0] == '0' {
					return nil, syntaxErr("repetition", "regex %q: a repetition count with a leading zero is read differently by the dialects", p.src)
				}
			}
			lo, hi, ok := p.braces()
			if !ok {
				return atom, nil // a literal {, as both dialects read it
			}
			min, max = lo, hi
		default:
			return atom, nil
		}
		if min > maxRepeat || max > maxRepeat {
			return nil, syntaxErr("repetition", "regex %q: a repetition bound above %d is not supported", p.src, maxRepeat)
		}
		if p.more() && p.peek() == '?' {
			p.pos++ // lazy: the same strings
		} else if p.more() && p.peek() == '+' {
			return nil, syntaxErr("possessive quantifier", "regex %q: possessive quantifiers are not supported", p.src)
		}
		atom = &reNode{op: reRep, subs: []*reNode{atom}, min: min, max: max}
	}
	return atom, nil
}

// braces reads {n}, {n,} or {n,m}; ok is false when what follows { is not
// a quantifier.
func (p *reParser) braces() (lo, hi int, ok bool) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, false
	}
	body := p.src[p.pos+1 : p.pos+end]
	a, b, comma := strings.Cut(body, ",")
	lo, err := strconv.Atoi(a)
	if err != nil || lo < 0 {
		return 0, 0, false
	}
	hi = lo
	if comma {
		if b == "" {
			hi = -1
		} else if hi, err = strconv.Atoi(b); err != nil || hi < lo {
			return 0, 0, false
		}
	}
	p.pos += end + 1
	return lo, hi, true
}

func (p *reParser) atom() (*reNode, error) {
	c := p.peek()
	switch c {
	case '(':
		p.pos++
		if strings.HasPrefix(p.src[p.pos:], "?") {
			rest := p.src[p.pos:]
			switch {
			case strings.HasPrefix(rest, "?:"):
				p.pos += 2
			case strings.HasPrefix(rest, "?P<"), strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!"):
				end := strings.IndexByte(rest, '>')
				if end < 0 {
					return nil, syntaxErr("regex", "regex %q: unterminated group name", p.src)
				}
				p.pos += end + 1
			case strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"), strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
				return nil, syntaxErr("lookaround", "regex %q: lookbehind, and lookahead other than at the start, are not supported", p.src)
			default:
				return nil, syntaxErr("inline flags", "regex %q: inline flags and other (? groups are not supported", p.src)
			}
		}
		n, err := p.alt()
		if err != nil {
			return nil, err
		}
		if !p.more() || p.peek() != ')' {
			return nil, syntaxErr("regex", "regex %q: missing )", p.src)
		}
		p.pos++
		return n, nil
	case '[':
		set, err := p.class()
		if err != nil {
			return nil, err
		}
		return &reNode{op: reChar, set: set}, nil
	case '.':
		p.pos++
		return &reNode{op: reChar, set: runeSet{{'\n', '\n'}}.negate()}, nil
	case '\\':
		set, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{op: reChar, set: set}, nil
	case '*', '+', '?':
		return nil, syntaxErr("regex", "regex %q: nothing to repeat at %d", p.src, p.pos)
	case '^', '$':
		return nil, syntaxErr("anchor", "regex %q: anchors are supported only at its start and end", p.src)
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	return &reNode{op: reChar, set: runeSet{{r, r}}}, nil
}

// Character classes, read so that an output matches in both dialects.
func digitSet() runeSet { return runeSet{{'0', '9'}} }
func wordSet() runeSet  { return runeSet{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}} }
func spaceSet() runeSet { return runeSet{{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}} }

// asciiMinus is printable ASCII and the ASCII controls not in s: the
// negated shorthand classes stay within ASCII, where the dialects agree.
func asciiMinus(s runeSet) runeSet { return runeSet{{0, 0x7F}}.minus(s, false) }

// escape reads a backslash escape; inClass says it is inside [...].
func (p *reParser) escape(inClass bool) (runeSet, error) {
	p.pos++
	if !p.more() {
		return nil, syntaxErr("regex", "regex %q ends with a backslash", p.src)
	}
	c := p.peek()
	p.pos++
	one := func(r rune) (runeSet, error) { return runeSet{{r, r}}, nil }
	switch c {
	case 'd':
		return digitSet(), nil
	case 'D':
		return asciiMinus(digitSet()), nil
	case 'w':
		return wordSet(), nil
	case 'W':
		return asciiMinus(wordSet()), nil
	case 's':
		return spaceSet(), nil
	case 'S':
		// Not a space in either dialect: outside ECMAScript's and
		// Python's white space, both.
		return runeSet{{0, 0x8}, {0xE, 0x1B}, {'!', 0x7E}, {0x80, 0x84}, {0x86, 0x9F}, {0xA1, 0x167F}, {0x1681, 0x1FFF},
			{0x200B, 0x2027}, {0x202A, 0x202E}, {0x2030, 0x205E}, {0x2060, 0x2FFF}, {0x3001, 0xFEFE}, {0xFF00, utf8.MaxRune}}.normalize(), nil
	case 'n':
		return one('\n')
	case 't':
		return one('\t')
	case 'r':
		return one('\r')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case '0':
		if p.more() && p.peek() >= '0' && p.peek() <= '9' {
			return nil, syntaxErr("octal escape", "regex %q: octal escapes are not supported (the dialects read them differently)", p.src)
		}
		return one(0)
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if p.pos+n > len(p.src) {
			return nil, syntaxErr("regex", "regex %q: short \\%c escape", p.src, c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return nil, syntaxErr("regex", "regex %q: bad \\%c escape", p.src, c)
		}
		p.pos += n
		return runeSet{{rune(v), rune(v)}}.normalize(), nil
	case 'b':
		if inClass {
			return one('\b')
		}
		return nil, syntaxErr("word boundary", "regex %q: word boundaries (\\b, \\B) are not supported", p.src)
	case 'B':
		return nil, syntaxErr("word boundary", "regex %q: word boundaries (\\b, \\B) are not supported", p.src)
	case 'p', 'P':
		return nil, syntaxErr("unicode property", "regex %q: Unicode property classes (\\p) are not supported", p.src)
	case 'A', 'Z', 'z', 'G':
		return nil, syntaxErr("anchor", "regex %q: \\%c is not supported; the whole output matches the regex", p.src, c)
	}
	if c >= '1' && c <= '9' {
		return nil, syntaxErr("backreference", "regex %q: backreferences are not supported", p.src)
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		return nil, syntaxErr("regex", "regex %q: unknown escape \\%c", p.src, c)
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos-1:])
	p.pos += size - 1
	return one(r)
}

// class reads [...].
func (p *reParser) class() (runeSet, error) {
	p.pos++
	neg := p.more() && p.peek() == '^'
	if neg {
		p.pos++
	}
	var set runeSet
	first := true
	for {
		if !p.more() {
			return nil, syntaxErr("regex", "regex %q: missing ]", p.src)
		}
		c := p.peek()
		if c == ']' && !first {
			p.pos++
			break
		}
		first = false
		if c == '[' && strings.HasPrefix(p.src[p.pos:], "[:") {
			return nil, syntaxErr("POSIX class", "regex %q: POSIX classes ([:alpha:]) are not supported", p.src)
		}
		lo, loSet, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if loSet != nil {
			set = append(set, loSet...)
			continue
		}
		if p.pos+1 < len(p.src) && p.peek() == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			hi, hiSet, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if hiSet != nil || hi < lo {
				return nil, syntaxErr("regex", "regex %q: bad range in a class", p.src)
			}
			set = append(set, runeRange{lo, hi})
			continue
		}
		set = append(set, runeRange{lo, lo})
	}
	set = set.normalize()
	if neg {
		set = set.negate()
	}
	return set, nil
}

// classAtom reads one member of a class: a character, or a shorthand set.
func (p *reParser) classAtom() (rune, runeSet, error) {
	if p.peek() == '\\' {
		set, err := p.escape(true)
		if err != nil {
			return 0, nil, err
		}
		if len(set) == 1 && set[0].lo == set[0].hi {
			return set[0].lo, nil, nil
		}
		return 0, set, nil
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	return r, nil, nil
}

// toExpr turns the expression into a grammar expression, encoding each
// character with chars (UTF-8 as is, or inside a JSON string).
func (n *reNode) toExpr(chars func(runeSet) Expr) Expr {
	switch n.op {
	case reChar:
		return chars(n.set)
	case reCat:
		parts := make([]Expr, len(n.subs))
		for i, s := range n.subs {
			parts[i] = s.toExpr(chars)
		}
		return seqExpr(parts)
	case reAlt:
		parts := make([]Expr, len(n.subs))
		for i, s := range n.subs {
			parts[i] = s.toExpr(chars)
		}
		return altExpr(parts)
	case reRep:
		return Rep(n.subs[0].toExpr(chars), n.min, n.max)
	}
	panic("BUG: grammar: unknown regex node")
}

// Regex compiles a regular expression the whole output must match.
func Regex(src string) (*Grammar, error) {
	re, err := parseRegex(src)
	if err != nil {
		return nil, err
	}
	x, err := re.expr(utf8Expr)
	if err != nil {
		return nil, regularErr("regex", err)
	}
	b := NewBuilder()
	b.Define("root", x)
	return build(b, "regex")
}

// Choice compiles a grammar whose output is exactly one of choices.
func Choice(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, syntaxErr("choice", "the choice list is empty")
	}
	alts := make([]Expr, len(choices))
	for i, c := range choices {
		if c == "" {
			return nil, syntaxErr("choice", "choice %d is empty", i)
		}
		alts[i] = Lit(c)
	}
	b := NewBuilder()
	b.Define("root", altExpr(alts))
	return build(b, "choice")
}

// regularErr names what an automaton operation failed on.
func regularErr(what string, err error) error {
	if errors.Is(err, errTooLarge) {
		return syntaxErr(what, "the %s compiles to too large an automaton", what)
	}
	return err
}

// build compiles b from its root rule, naming what in the errors that are
// the request's fault.
func build(b *Builder, what string) (*Grammar, error) {
	g, err := b.Build("root")
	var se *SyntaxError
	switch {
	case err == nil:
		return g, nil
	case errors.As(err, &se):
		return nil, se
	case errors.Is(err, errTooLarge):
		return nil, syntaxErr(what, "the %s compiles to too large an automaton", what)
	case errors.Is(err, ErrEmpty):
		return nil, syntaxErr(what, "no output can match the %s", what)
	}
	return nil, syntaxErr(what, "%s: %v", what, err)
}

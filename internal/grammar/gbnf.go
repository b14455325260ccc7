package grammar

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// GBNF is the grammar format of llama.cpp, which vLLM's grammar parameter
// takes through xgrammar: rules "name ::= alternatives" with "literals",
// [character classes] (negated with ^), rule names, groups, . (any
// character) and the postfixes * + ? {m} {m,} {m,n}; # starts a comment.
// The output matches the rule named root. A rule may span lines: it ends
// where the next "name ::=" begins.

type gbnfParser struct {
	src string
	pos int
	b   *Builder
}

// GBNF compiles a GBNF grammar.
func GBNF(src string) (*Grammar, error) {
	p := &gbnfParser{src: src, b: NewBuilder()}
	p.space()
	if p.pos == len(p.src) {
		return nil, syntaxErr("grammar", "the grammar is empty")
	}
	for p.pos < len(p.src) {
		name := p.name()
		if name == "" {
			return nil, p.errorf("expected a rule name")
		}
		p.space()
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			if strings.HasPrefix(p.src[p.pos:], ":") {
				return nil, syntaxErr("grammar", "the grammar looks like Lark; only GBNF (root ::= …) is supported")
			}
			return nil, p.errorf("expected ::= after %q", name)
		}
		p.pos += 3
		if p.b.Defined(name) {
			return nil, p.errorf("rule %q is defined twice", name)
		}
		x, err := p.alternatives(false)
		if err != nil {
			return nil, err
		}
		p.b.Define(name, x)
	}
	if !p.b.Has("root") {
		return nil, syntaxErr("grammar", "the grammar has no rule named root")
	}
	return build(p.b, "grammar")
}

func (p *gbnfParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	return syntaxErr("grammar", "grammar line %d: "+format, append([]any{line}, args...)...)
}

// space skips blanks, newlines and comments.
func (p *gbnfParser) space() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// atDefinition reports whether a "name ::=" starts here.
func (p *gbnfParser) atDefinition() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if p.name() == "" {
		return false
	}
	p.space()
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

func (p *gbnfParser) alternatives(nested bool) (Expr, error) {
	var alts []Expr
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.space()
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return Alt(alts...), nil
	}
}

func (p *gbnfParser) sequence(nested bool) (Expr, error) {
	var items []Expr
	for {
		p.space()
		if p.pos == len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' {
			if c == ')' && !nested {
				return nil, p.errorf("unmatched )")
			}
			break
		}
		if !nested && p.atDefinition() {
			break
		}
		x, err := p.primary()
		if err != nil {
			return nil, err
		}
		if x, err = p.postfix(x); err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	return seqExpr(items), nil
}

func (p *gbnfParser) primary() (Expr, error) {
	c := p.src[p.pos]
	switch {
	case c == '"':
		return p.literal()
	case c == '[':
		set, err := p.class()
		if err != nil {
			return nil, err
		}
		return utf8Expr(set), nil
	case c == '(':
		p.pos++
		x, err := p.alternatives(true)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos == len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errorf("missing )")
		}
		p.pos++
		return x, nil
	case c == '.':
		p.pos++
		return utf8Expr(anyRune()), nil
	case isNameByte(c):
		return p.b.Rule(p.name()), nil
	}
	return nil, p.errorf("unexpected %q", c)
}

func (p *gbnfParser) postfix(x Expr) (Expr, error) {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '*':
			p.pos++
			x = Star(x)
		case '+':
			p.pos++
			x = Plus(x)
		case '?':
			p.pos++
			x = Opt(x)
		case '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return nil, p.errorf("missing }")
			}
			body := strings.ReplaceAll(p.src[p.pos+1:p.pos+end], " ", "")
			a, b, comma := strings.Cut(body, ",")
			lo, err := strconv.Atoi(a)
			if err != nil || lo < 0 {
				return nil, p.errorf("bad repetition {%s}", body)
			}
			hi := lo
			if comma {
				hi = -1
				if b != "" {
					if hi, err = strconv.Atoi(b); err != nil || hi < lo {
						return nil, p.errorf("bad repetition {%s}", body)
					}
				}
			}
			if lo > maxRepeat || hi > maxRepeat {
				return nil, syntaxErr("repetition", "a repetition bound above %d is not supported", maxRepeat)
			}
			p.pos += end + 1
			x = Rep(x, lo, hi)
		default:
			return x, nil
		}
	}
	return x, nil
}

// char reads one character of a literal or class, with llama.cpp's escapes.
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		return r, nil
	}
	p.pos++
	if p.pos == len(p.src) {
		return 0, p.errorf("the grammar ends in an escape")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+n > len(p.src) {
			return 0, p.errorf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errorf("bad \\%c escape", c)
		}
		p.pos += n
		return rune(v), nil
	case '\\', '"', '[', ']', '-', '^', '/', '.':
		return rune(c), nil
	}
	return 0, p.errorf("unknown escape \\%c", c)
}

func (p *gbnfParser) literal() (Expr, error) {
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf("unterminated literal")
		}
		if p.src[p.pos] == '"' {
			p.pos++
			return Lit(b.String()), nil
		}
		r, err := p.char()
		if err != nil {
			return nil, err
		}
		b.WriteRune(r)
	}
}

func (p *gbnfParser) class() (runeSet, error) {
	p.pos++
	neg := p.pos < len(p.src) && p.src[p.pos] == '^'
	if neg {
		p.pos++
	}
	var set runeSet
	for {
		if p.pos >= len(p.src) {
			return nil, p.errorf("unterminated [")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errorf("bad range in a class")
			}
		}
		set = append(set, runeRange{lo, hi})
	}
	set = set.normalize()
	if neg {
		set = set.negate()
	}
	return set, nil
}

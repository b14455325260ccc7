package jinja

import (
	"fmt"
	"slices"
)

// maxNesting bounds how deeply blocks and expressions may nest (each
// operator, filter, attribute or call in a chain counts, as each deepens
// the tree), so a hostile template cannot make the recursive-descent
// parser or the evaluator that walks its tree exhaust the stack. Python
// Jinja2 stops near 1000 for the same reason.
const maxNesting = 500

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
	loops int // enclosing for bodies, for break and continue
}

// Template is a parsed template, safe to render from many goroutines.
type Template struct {
	src  string
	body []node
}

// Parse reads a template with the settings transformers' apply_chat_template
// uses (trim_blocks, lstrip_blocks, loop controls). A syntax error is a
// *SyntaxError with the line and column.
func Parse(src string) (*Template, error) {
	src = normalize(src)
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errAt(p.toks[p.i].pos, "unexpected '%s'", end)
	}
	return &Template{src: src, body: body}, nil
}

func (p *parser) errAt(pos int, format string, args ...any) error {
	return syntaxErr(p.src, pos, format, args...)
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.peek()
	return t.kind == tokName && t.val == name
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.unexpected(fmt.Sprintf("'%s'", op))
	}
	p.i++
	return nil
}

func (p *parser) expectName(name string) error {
	if !p.isName(name) {
		return p.unexpected(fmt.Sprintf("'%s'", name))
	}
	p.i++
	return nil
}

func (p *parser) expectKind(k tokKind, what string) (token, error) {
	if p.peek().kind != k {
		return token{}, p.unexpected(what)
	}
	return p.next(), nil
}

func (p *parser) unexpected(want string) error {
	t := p.peek()
	got := t.val
	switch t.kind {
	case tokEOF:
		got = "end of template"
	case tokBlockEnd:
		got = "end of statement block"
	case tokVarEnd:
		got = "end of print statement"
	case tokString:
		got = fmt.Sprintf("string %q", t.val)
	}
	return p.errAt(t.pos, "expected %s, got '%s'", want, got)
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return p.errAt(p.peek().pos, "nesting deeper than %d", maxNesting)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// block parses nodes until EOF or a tag that belongs to an enclosing
// statement (endif, else, …); it returns that tag's keyword and leaves the
// parser on it (after "{%").
func (p *parser) block(stop ...string) ([]node, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var body []node
	for {
		t := p.next()
		switch t.kind {
		case tokEOF:
			if len(stop) > 0 {
				return nil, "", p.errAt(t.pos, "unexpected end of template, expected '%s'", stop[len(stop)-1])
			}
			return body, "", nil
		case tokText:
			body = append(body, &textNode{at{t.pos}, t.val})
		case tokVarBegin:
			e, err := p.expr()
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectKind(tokVarEnd, "end of print statement"); err != nil {
				return nil, "", err
			}
			body = append(body, &outputNode{at{t.pos}, e})
		case tokBlockBegin:
			kw := p.peek()
			if kw.kind != tokName {
				return nil, "", p.unexpected("statement name")
			}
			if slices.Contains(stop, kw.val) {
				return body, kw.val, nil
			}
			if isEndTag(kw.val) {
				return nil, "", p.errAt(kw.pos, "unexpected '%s'", kw.val)
			}
			n, err := p.statement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				body = append(body, n)
			}
		default:
			return nil, "", p.errAt(t.pos, "unexpected token '%s'", t.val)
		}
	}
}

func isEndTag(kw string) bool {
	switch kw {
	case "endif", "elif", "else", "endfor", "endmacro", "endset", "endcall", "endfilter", "endgeneration":
		return true
	}
	return false
}

// endTag consumes "{% name %}" after block has stopped on it.
func (p *parser) endTag() error {
	p.i++ // the keyword block stopped on
	_, err := p.expectKind(tokBlockEnd, "end of statement block")
	return err
}

func (p *parser) statement() (node, error) {
	kw := p.next()
	switch kw.val {
	case "if":
		return p.ifStmt(kw.pos)
	case "for":
		return p.forStmt(kw.pos)
	case "set":
		return p.setStmt(kw.pos)
	case "macro":
		return p.macroStmt(kw.pos)
	case "call":
		return p.callStmt(kw.pos)
	case "filter":
		return p.filterStmt(kw.pos)
	case "break", "continue":
		if p.loops == 0 {
			return nil, p.errAt(kw.pos, "'%s' outside a loop", kw.val)
		}
		_, err := p.expectKind(tokBlockEnd, "end of statement block")
		return &loopControlNode{at{kw.pos}, kw.val == "break"}, err
	case "generation":
		// transformers' AssistantTracker marks assistant text for masks;
		// rendering just emits the body.
		if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
			return nil, err
		}
		body, _, err := p.block("endgeneration")
		if err != nil {
			return nil, err
		}
		return &filterBlockNode{at: at{kw.pos}, body: body}, p.endTag()
	}
	return nil, p.errAt(kw.pos, "unknown or unsupported statement '%s'", kw.val)
}

func (p *parser) ifStmt(pos int) (node, error) {
	n := &ifNode{at: at{pos}}
	for {
		cond, err := p.expr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
			return nil, err
		}
		body, end, err := p.block("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			p.i++
			continue
		case "else":
			if err := p.endTag(); err != nil {
				return nil, err
			}
			if n.els, _, err = p.block("endif"); err != nil {
				return nil, err
			}
		}
		return n, p.endTag()
	}
}

func (p *parser) targets() ([]string, error) {
	var names []string
	paren := p.isOp("(")
	if paren {
		p.i++
	}
	for {
		t, err := p.expectKind(tokName, "name")
		if err != nil {
			return nil, err
		}
		names = append(names, t.val)
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	if paren {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (p *parser) forStmt(pos int) (node, error) {
	n := &forNode{at: at{pos}}
	var err error
	if n.targets, err = p.targets(); err != nil {
		return nil, err
	}
	if err := p.expectName("in"); err != nil {
		return nil, err
	}
	// The iterable stops before "if": a ternary without else would be
	// ambiguous with the loop filter, and Jinja reads it as the filter.
	if n.iter, err = p.orExpr(); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.i++
		if n.filter, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errAt(p.peek().pos, "recursive loops are not supported")
	}
	if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	p.loops++
	body, end, err := p.block("else", "endfor")
	p.loops--
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.endTag(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.block("endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.endTag()
}

func (p *parser) setStmt(pos int) (node, error) {
	n := &setNode{at: at{pos}}
	first, err := p.expectKind(tokName, "name")
	if err != nil {
		return nil, err
	}
	n.names = []string{first.val}
	switch {
	case p.isOp("."):
		p.i++
		attr, err := p.expectKind(tokName, "attribute name")
		if err != nil {
			return nil, err
		}
		n.attr = attr.val
	case p.isOp(","):
		p.i++
		more, err := p.targets()
		if err != nil {
			return nil, err
		}
		n.names = append(n.names, more...)
	}
	if p.peek().kind == tokBlockEnd && n.attr == "" && len(n.names) == 1 {
		p.i++
		n.block = true
		if n.body, _, err = p.block("endset"); err != nil {
			return nil, err
		}
		return n, p.endTag()
	}
	if err := p.expectOp("="); err != nil {
		return nil, err
	}
	if n.value, err = p.tupleOrExpr(); err != nil {
		return nil, err
	}
	_, err = p.expectKind(tokBlockEnd, "end of statement block")
	return n, err
}

func (p *parser) macroStmt(pos int) (node, error) {
	name, err := p.expectKind(tokName, "macro name")
	if err != nil {
		return nil, err
	}
	n := &macroNode{at: at{pos}, name: name.val}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.isOp(")") {
		if len(n.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		param, err := p.expectKind(tokName, "parameter name")
		if err != nil {
			return nil, err
		}
		var def expr
		if p.isOp("=") {
			p.i++
			if def, err = p.expr(); err != nil {
				return nil, err
			}
		}
		n.params = append(n.params, param.val)
		n.defaults = append(n.defaults, def)
	}
	p.i++
	if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	loops := p.loops
	p.loops = 0 // a macro's body is not inside the loop it is defined in
	n.body, _, err = p.block("endmacro")
	p.loops = loops
	if err != nil {
		return nil, err
	}
	return n, p.endTag()
}

func (p *parser) callStmt(pos int) (node, error) {
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	call, ok := e.(*callExpr)
	if !ok {
		return nil, p.errAt(pos, "expected a call after 'call'")
	}
	if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	n := &callBlockNode{at: at{pos}, call: call}
	if n.body, _, err = p.block("endcall"); err != nil {
		return nil, err
	}
	return n, p.endTag()
}

func (p *parser) filterStmt(pos int) (node, error) {
	n := &filterBlockNode{at: at{pos}}
	for {
		f, err := p.filterCall(nil)
		if err != nil {
			return nil, err
		}
		n.filters = append(n.filters, f)
		if !p.isOp("|") {
			break
		}
		p.i++
	}
	if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	var err error
	if n.body, _, err = p.block("endfilter"); err != nil {
		return nil, err
	}
	return n, p.endTag()
}

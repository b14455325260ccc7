package jinja

import (
	"strconv"
)

// Expression parsing follows Jinja's parser level by level, so operator
// precedence matches: conditional, or, and, not, comparisons, + -, ~,
// * / // %, **, unary minus, then primaries with their postfixes, filters
// and tests (which bind tighter than any binary operator: a + b|trim is
// a + (b|trim)).

func (p *parser) expr() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	e, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		pos := p.next().pos
		cond, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.isName("else") {
			p.i++
			if els, err = p.expr(); err != nil {
				return nil, err
			}
		}
		e = &condExpr{at{pos}, e, cond, els}
	}
	return e, nil
}

// tupleOrExpr reads "a, b" as a tuple where a statement allows it.
func (p *parser) tupleOrExpr() (expr, error) {
	pos := p.peek().pos
	e, err := p.expr()
	if err != nil || !p.isOp(",") {
		return e, err
	}
	items := []expr{e}
	for p.isOp(",") {
		p.i++
		if k := p.peek().kind; k == tokBlockEnd || k == tokVarEnd {
			break
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return &listExpr{at{pos}, items, true}, nil
}

func (p *parser) orExpr() (expr, error) {
	l, err := p.andExpr()
	for err == nil && p.isName("or") {
		pos := p.next().pos
		var r expr
		if r, err = p.andExpr(); err == nil {
			l = &binaryExpr{at{pos}, "or", l, r}
		}
	}
	return l, err
}

func (p *parser) andExpr() (expr, error) {
	l, err := p.notExpr()
	for err == nil && p.isName("and") {
		pos := p.next().pos
		var r expr
		if r, err = p.notExpr(); err == nil {
			l = &binaryExpr{at{pos}, "and", l, r}
		}
	}
	return l, err
}

func (p *parser) notExpr() (expr, error) {
	if p.isName("not") {
		pos := p.next().pos
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{at{pos}, "not", x}, nil
	}
	return p.compare()
}

func (p *parser) compareOp() string {
	t := p.peek()
	switch {
	case t.kind == tokOp:
		switch t.val {
		case "==", "!=", "<", ">", "<=", ">=":
			return t.val
		}
	case t.kind == tokName && t.val == "in":
		return "in"
	case t.kind == tokName && t.val == "not":
		if n := p.toks[p.i+1]; n.kind == tokName && n.val == "in" {
			return "notin"
		}
	}
	return ""
}

func (p *parser) compare() (expr, error) {
	pos := p.peek().pos
	first, err := p.math1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{at: at{pos}, first: first}
	for op := p.compareOp(); op != ""; op = p.compareOp() {
		p.i++
		if op == "notin" {
			p.i++
		}
		r, err := p.math1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
	if len(c.ops) == 0 {
		return first, nil
	}
	return c, nil
}

// binaryLevel parses one left-associative level of binary operators.
func (p *parser) binaryLevel(ops []string, operand func() (expr, error)) (expr, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		found := false
		for _, op := range ops {
			if t.kind == tokOp && t.val == op {
				found = true
			}
		}
		if !found {
			return l, nil
		}
		// Each operator deepens the tree the evaluator recurses through.
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.i++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{at{t.pos}, t.val, l, r}
	}
}

func (p *parser) math1() (expr, error) {
	return p.binaryLevel([]string{"+", "-"}, p.concat)
}

func (p *parser) concat() (expr, error) {
	return p.binaryLevel([]string{"~"}, p.math2)
}

func (p *parser) math2() (expr, error) {
	return p.binaryLevel([]string{"*", "/", "//", "%"}, p.pow)
}

func (p *parser) pow() (expr, error) {
	return p.binaryLevel([]string{"**"}, func() (expr, error) { return p.unary(true) })
}

func (p *parser) unary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var e expr
	var err error
	if t := p.peek(); t.kind == tokOp && (t.val == "-" || t.val == "+") {
		p.i++
		var x expr
		if x, err = p.unary(false); err != nil {
			return nil, err
		}
		e = &unaryExpr{at{t.pos}, t.val, x}
	} else if e, err = p.primary(); err != nil {
		return nil, err
	}
	if e, err = p.postfix(e); err != nil {
		return nil, err
	}
	if withFilter {
		return p.filterChain(e)
	}
	return e, nil
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tokName:
		switch t.val {
		case "true", "True":
			return &literal{at{t.pos}, true}, nil
		case "false", "False":
			return &literal{at{t.pos}, false}, nil
		case "none", "None":
			return &literal{at{t.pos}, nil}, nil
		}
		return &nameExpr{at{t.pos}, t.val}, nil
	case tokString:
		s := t.val
		for p.peek().kind == tokString { // "a" "b" is "ab", as in Python
			s += p.next().val
		}
		return &literal{at{t.pos}, s}, nil
	case tokInt:
		v, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, p.errAt(t.pos, "integer literal %s out of range", t.val)
		}
		return &literal{at{t.pos}, v}, nil
	case tokFloat:
		v, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, p.errAt(t.pos, "float literal %s out of range", t.val)
		}
		return &literal{at{t.pos}, v}, nil
	case tokOp:
		switch t.val {
		case "(":
			return p.parenthesized(t.pos)
		case "[":
			items, err := p.exprList("]")
			return &listExpr{at{t.pos}, items, false}, err
		case "{":
			return p.dictLit(t.pos)
		}
	}
	p.i--
	return nil, p.unexpected("an expression")
}

func (p *parser) parenthesized(pos int) (expr, error) {
	if p.isOp(")") {
		p.i++
		return &listExpr{at{pos}, nil, true}, nil
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.isOp(")") {
		p.i++
		return e, nil
	}
	if err := p.expectOp(","); err != nil {
		return nil, err
	}
	rest, err := p.exprList(")")
	return &listExpr{at{pos}, append([]expr{e}, rest...), true}, err
}

// exprList reads comma-separated expressions up to closer (trailing comma
// allowed) and consumes the closer.
func (p *parser) exprList(closer string) ([]expr, error) {
	var items []expr
	for !p.isOp(closer) {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(closer) {
				break
			}
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	p.i++
	return items, nil
}

func (p *parser) dictLit(pos int) (expr, error) {
	d := &dictExpr{at: at{pos}}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	p.i++
	return d, nil
}

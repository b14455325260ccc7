package jinja

import "strconv"

// Postfixes (attributes, subscripts, calls), filters and tests: the
// tightest-binding part of an expression.

func (p *parser) postfix(e expr) (expr, error) {
	for {
		t := p.peek()
		if t.kind != tokOp {
			return e, nil
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		var err error
		switch t.val {
		case ".":
			p.i++
			n := p.next()
			switch n.kind {
			case tokName:
				e = &attrExpr{at{n.pos}, e, n.val}
			case tokInt:
				v, _ := strconv.ParseInt(n.val, 10, 64)
				e = &itemExpr{at{n.pos}, e, &literal{at{n.pos}, v}}
			default:
				p.i--
				return nil, p.unexpected("attribute name")
			}
		case "[":
			p.i++
			if e, err = p.subscript(e, t.pos); err != nil {
				return nil, err
			}
		case "(":
			p.i++
			if e, err = p.call(e, t.pos); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

func (p *parser) subscript(obj expr, pos int) (expr, error) {
	var parts [3]expr
	n, colons := 0, 0
	for {
		if p.isOp("]") {
			p.i++
			break
		}
		if p.isOp(":") {
			p.i++
			colons++
			if colons > 2 {
				return nil, p.errAt(pos, "too many ':' in subscript")
			}
			n = colons
			continue
		}
		if parts[n] != nil {
			return nil, p.unexpected("']'")
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		parts[n] = e
	}
	if colons == 0 {
		if parts[0] == nil {
			return nil, p.errAt(pos, "empty subscript")
		}
		return &itemExpr{at{pos}, obj, parts[0]}, nil
	}
	return &sliceExpr{at{pos}, obj, parts[0], parts[1], parts[2]}, nil
}

// args reads call arguments after "(": positional, then name=value.
func (p *parser) args() (args []expr, kwNames []string, kwVals []expr, err error) {
	for !p.isOp(")") {
		if len(args)+len(kwNames) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		if t := p.peek(); t.kind == tokName && p.toks[p.i+1].kind == tokOp && p.toks[p.i+1].val == "=" {
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return nil, nil, nil, err
			}
			kwNames = append(kwNames, t.val)
			kwVals = append(kwVals, v)
			continue
		}
		if len(kwNames) > 0 {
			return nil, nil, nil, p.errAt(p.peek().pos, "positional argument follows keyword argument")
		}
		e, err := p.expr()
		if err != nil {
			return nil, nil, nil, err
		}
		args = append(args, e)
	}
	p.i++
	return args, kwNames, kwVals, nil
}

func (p *parser) call(fn expr, pos int) (expr, error) {
	args, kn, kv, err := p.args()
	if err != nil {
		return nil, err
	}
	return &callExpr{at{pos}, fn, args, kn, kv}, nil
}

func (p *parser) filterChain(e expr) (expr, error) {
	for {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		switch {
		case p.isOp("|"):
			p.i++
			f, err := p.filterCall(e)
			if err != nil {
				return nil, err
			}
			e = f
		case p.isName("is"):
			t, err := p.test(e)
			if err != nil {
				return nil, err
			}
			e = t
		case p.isOp("("):
			pos := p.next().pos
			c, err := p.call(e, pos)
			if err != nil {
				return nil, err
			}
			e = c
		default:
			return e, nil
		}
	}
}

func (p *parser) filterCall(obj expr) (*filterExpr, error) {
	name, err := p.expectKind(tokName, "filter name")
	if err != nil {
		return nil, err
	}
	f := &filterExpr{at: at{name.pos}, obj: obj, name: name.val}
	if p.isOp("(") {
		p.i++
		if f.args, f.kwNames, f.kwVals, err = p.args(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) test(obj expr) (expr, error) {
	pos := p.next().pos // "is"
	negate := false
	if p.isName("not") {
		p.i++
		negate = true
	}
	name, err := p.expectKind(tokName, "test name")
	if err != nil {
		return nil, err
	}
	t := &testExpr{at: at{pos}, obj: obj, name: name.val, negate: negate}
	next := p.peek()
	switch {
	case p.isOp("("):
		p.i++
		var kn []string
		if t.args, kn, _, err = p.args(); err != nil {
			return nil, err
		}
		if len(kn) > 0 {
			return nil, p.errAt(pos, "tests take no keyword arguments")
		}
	case next.kind == tokString || next.kind == tokInt || next.kind == tokFloat ||
		next.kind == tokOp && (next.val == "[" || next.val == "{") ||
		next.kind == tokName && next.val != "else" && next.val != "or" && next.val != "and" && next.val != "is" && next.val != "if":
		// "x is divisibleby 3": one argument without parentheses.
		arg, err := p.primary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.postfix(arg); err != nil {
			return nil, err
		}
		t.args = []expr{arg}
	}
	return t, nil
}

package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// jmesExpr is the part of JMESPath that inference-perf's circuit breakers
// are written in: field paths (error.error_type, "quoted"), raw string
// ('x') and JSON (`500`) literals, comparisons, !, && and || and
// parentheses, with JMESPath's truthiness. Anything else (projections,
// functions, filters) is refused when the configuration is read.
type jmesExpr struct {
	op          string // "path", "lit", "!", "&&", "||", "==", "!=", "<", "<=", ">", ">="
	path        []string
	lit         any
	left, right *jmesExpr
}

type jmesParser struct {
	src string
	pos int
}

func compileJMES(src string) (*jmesExpr, error) {
	p := &jmesParser{src: src}
	e, err := p.or()
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("expression %q: unexpected %q at %d (glassbox reads paths, literals, comparisons, !, && and ||)", src, p.src[p.pos:], p.pos)
	}
	return e, nil
}

func (p *jmesParser) space() {
	for p.pos < len(p.src) && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
}

func (p *jmesParser) take(tok string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *jmesParser) or() (*jmesExpr, error) {
	l, err := p.and()
	for err == nil && p.take("||") {
		var r *jmesExpr
		if r, err = p.and(); err == nil {
			l = &jmesExpr{op: "||", left: l, right: r}
		}
	}
	return l, err
}

func (p *jmesParser) and() (*jmesExpr, error) {
	l, err := p.not()
	for err == nil && p.take("&&") {
		var r *jmesExpr
		if r, err = p.not(); err == nil {
			l = &jmesExpr{op: "&&", left: l, right: r}
		}
	}
	return l, err
}

func (p *jmesParser) not() (*jmesExpr, error) {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], "!") && !strings.HasPrefix(p.src[p.pos:], "!=") {
		p.pos++
		e, err := p.not()
		return &jmesExpr{op: "!", left: e}, err
	}
	return p.cmp()
}

func (p *jmesParser) cmp() (*jmesExpr, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if p.take(op) {
			r, err := p.primary()
			return &jmesExpr{op: op, left: l, right: r}, err
		}
	}
	return l, nil
}

func (p *jmesParser) primary() (*jmesExpr, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, errors.New("unexpected end")
	}
	switch c := p.src[p.pos]; {
	case c == '(':
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.take(")") {
			return nil, errors.New("missing )")
		}
		return e, nil
	case c == '\'':
		end := strings.IndexByte(p.src[p.pos+1:], '\'')
		if end < 0 {
			return nil, errors.New("unterminated raw string")
		}
		s := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return &jmesExpr{op: "lit", lit: s}, nil
	case c == '`':
		end := strings.IndexByte(p.src[p.pos+1:], '`')
		if end < 0 {
			return nil, errors.New("unterminated literal")
		}
		var v any
		if err := json.Unmarshal([]byte(p.src[p.pos+1:p.pos+1+end]), &v); err != nil {
			return nil, fmt.Errorf("literal: %w", err)
		}
		p.pos += end + 2
		return &jmesExpr{op: "lit", lit: v}, nil
	}
	var path []string
	for {
		id, err := p.ident()
		if err != nil {
			return nil, err
		}
		path = append(path, id)
		if p.pos >= len(p.src) || p.src[p.pos] != '.' {
			break
		}
		p.pos++
	}
	return &jmesExpr{op: "path", path: path}, nil
}

func (p *jmesParser) ident() (string, error) {
	if p.pos < len(p.src) && p.src[p.pos] == '"' {
		end := strings.IndexByte(p.src[p.pos+1:], '"')
		if end < 0 {
			return "", errors.New("unterminated quoted name")
		}
		s := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return s, nil
	}
	start := p.pos
	for p.pos < len(p.src) {
		c := rune(p.src[p.pos])
		if !(c == '_' || unicode.IsLetter(c) || (p.pos > start && unicode.IsDigit(c))) {
			break
		}
		p.pos++
	}
	if p.pos == start {
		return "", fmt.Errorf("want a field name at %d", start)
	}
	return p.src[start:p.pos], nil
}

func (e *jmesExpr) eval(doc any) any {
	switch e.op {
	case "lit":
		return e.lit
	case "path":
		v := doc
		for _, k := range e.path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		}
		return v
	case "!":
		return !truthy(e.left.eval(doc))
	case "&&":
		if l := e.left.eval(doc); !truthy(l) {
			return l
		}
		return e.right.eval(doc)
	case "||":
		if l := e.left.eval(doc); truthy(l) {
			return l
		}
		return e.right.eval(doc)
	}
	l, r := normalize(e.left.eval(doc)), normalize(e.right.eval(doc))
	switch e.op {
	case "==":
		return reflect.DeepEqual(l, r)
	case "!=":
		return !reflect.DeepEqual(l, r)
	}
	a, ok1 := l.(float64)
	b, ok2 := r.(float64)
	if !ok1 || !ok2 {
		return nil // JMESPath orders numbers only
	}
	switch e.op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

// normalize makes every number a float64, as JSON decoding does.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return v
}

// truthy is JMESPath's: false, null, "", [] and {} are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

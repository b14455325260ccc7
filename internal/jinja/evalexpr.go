package jinja

import (
	"fmt"
	"math"
	"strings"
)

func (e *evaluator) eval(x expr) (any, error) {
	if err := e.charge(1); err != nil {
		return nil, e.errAt(x.offset(), err)
	}
	v, err := e.evalInner(x)
	if err != nil {
		return nil, e.errAt(x.offset(), err)
	}
	return v, nil
}

func (e *evaluator) evalInner(x expr) (any, error) {
	switch x := x.(type) {
	case *literal:
		return x.v, nil
	case *nameExpr:
		return e.lookup(x.name), nil
	case *listExpr:
		items, err := e.evalAll(x.items)
		if x.tuple {
			return tuple(items), err
		}
		return items, err
	case *dictExpr:
		return e.dict(x)
	case *attrExpr:
		obj, err := e.eval(x.obj)
		if err != nil {
			return nil, err
		}
		return e.getattr(obj, x.name)
	case *itemExpr:
		obj, err := e.eval(x.obj)
		if err != nil {
			return nil, err
		}
		key, err := e.eval(x.key)
		if err != nil {
			return nil, err
		}
		return e.getitem(obj, key)
	case *sliceExpr:
		return e.slice(x)
	case *callExpr:
		return e.call(x, nil)
	case *filterExpr:
		return e.filter(x)
	case *testExpr:
		return e.test(x)
	case *unaryExpr:
		return e.unary(x)
	case *binaryExpr:
		return e.binary(x)
	case *compareExpr:
		return e.compare(x)
	case *condExpr:
		c, err := e.eval(x.cond)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return e.eval(x.then)
		}
		if x.els == nil {
			return Undefined{}, nil
		}
		return e.eval(x.els)
	}
	return nil, fmt.Errorf("BUG: unknown expression %T", x)
}

func (e *evaluator) evalAll(xs []expr) ([]any, error) {
	out := make([]any, len(xs))
	for i, x := range xs {
		v, err := e.eval(x)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (e *evaluator) dict(x *dictExpr) (any, error) {
	d := NewDict()
	for i := range x.keys {
		k, err := e.eval(x.keys[i])
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("dict keys must be strings, got %s", typeName(k))
		}
		v, err := e.eval(x.vals[i])
		if err != nil {
			return nil, err
		}
		d.Set(ks, v)
	}
	return d, nil
}

// getattr is obj.name: Jinja tries the Python attribute first (a method of
// str or dict, a namespace attribute), then the item of that name.
func (e *evaluator) getattr(obj any, name string) (any, error) {
	switch x := obj.(type) {
	case Undefined:
		return nil, x.err()
	case *loopInfo:
		return x.attr(name), nil
	case *namespace:
		if v, ok := x.d.Get(name); ok {
			return v, nil
		}
		return Undefined{Name: name}, nil
	case string:
		if m := stringMethod(x, name); m != nil {
			return m, nil
		}
	case *Dict:
		if m := dictMethod(x, name); m != nil {
			return m, nil
		}
		if v, ok := x.Get(name); ok {
			return v, nil
		}
	}
	return Undefined{Name: name}, nil
}

// getitem is obj[key]: the item first, then the attribute for a string
// key.
func (e *evaluator) getitem(obj, key any) (any, error) {
	switch x := obj.(type) {
	case Undefined:
		return nil, x.err()
	case *Dict:
		if k, ok := key.(string); ok {
			if v, ok := x.Get(k); ok {
				return v, nil
			}
		}
		if u, ok := key.(Undefined); ok {
			return nil, u.err()
		}
	case []any, tuple, string:
		if i, _, isFloat, ok := toNumber(key); ok && !isFloat {
			return index(x, i)
		}
	}
	if k, ok := key.(string); ok {
		return e.getattr(obj, k)
	}
	name, _ := pyStr(key, 256)
	return Undefined{Name: name}, nil
}

// index is Python's xs[i] with negative indexes; out of range is
// undefined, as Jinja makes it.
func index(obj any, i int64) (any, error) {
	if s, ok := obj.(string); ok {
		rs := []rune(s)
		if i < 0 {
			i += int64(len(rs))
		}
		if i < 0 || i >= int64(len(rs)) {
			return Undefined{}, nil
		}
		return string(rs[i]), nil
	}
	items, _ := seq(obj)
	if i < 0 {
		i += int64(len(items))
	}
	if i < 0 || i >= int64(len(items)) {
		return Undefined{}, nil
	}
	return items[i], nil
}

func (e *evaluator) slice(x *sliceExpr) (any, error) {
	obj, err := e.eval(x.obj)
	if err != nil {
		return nil, err
	}
	var bounds [3]*int64
	for i, b := range []expr{x.start, x.stop, x.step} {
		if b == nil {
			continue
		}
		v, err := e.eval(b)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		n, _, isFloat, ok := toNumber(v)
		if !ok || isFloat {
			return nil, fmt.Errorf("slice indices must be integers or None, not %s", typeName(v))
		}
		bounds[i] = &n
	}
	switch o := obj.(type) {
	case string:
		rs := []rune(o)
		idx, err := sliceIndexes(len(rs), bounds)
		if err != nil {
			return nil, err
		}
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = rs[j]
		}
		return string(out), e.charge(len(out))
	case []any, tuple:
		items, _ := seq(o)
		idx, err := sliceIndexes(len(items), bounds)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(idx))
		for i, j := range idx {
			out[i] = items[j]
		}
		if _, ok := o.(tuple); ok {
			return tuple(out), e.charge(len(out))
		}
		return out, e.charge(len(out))
	case Undefined:
		return nil, o.err()
	}
	return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
}

// sliceIndexes lists the positions seq[start:stop:step] takes, with
// Python's clamping rules.
func sliceIndexes(n int, b [3]*int64) ([]int, error) {
	step := int64(1)
	if b[2] != nil {
		step = *b[2]
	}
	if step == 0 {
		return nil, fmt.Errorf("slice step cannot be zero")
	}
	ln := int64(n)
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += ln
			if v < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		}
		if v >= ln {
			if step < 0 {
				return ln - 1
			}
			return ln
		}
		return v
	}
	var out []int
	if step > 0 {
		for i := clamp(b[0], 0); i < clamp(b[1], ln); i += step {
			out = append(out, int(i))
		}
	} else {
		for i := clamp(b[0], ln-1); i > clamp(b[1], -1); i += step {
			out = append(out, int(i))
		}
	}
	return out, nil
}

func (e *evaluator) unary(x *unaryExpr) (any, error) {
	v, err := e.eval(x.x)
	if err != nil {
		return nil, err
	}
	if x.op == "not" {
		return !truthy(v), nil
	}
	i, f, isFloat, ok := toNumber(v)
	if !ok {
		if u, isU := v.(Undefined); isU {
			return nil, u.err()
		}
		return nil, fmt.Errorf("bad operand type for unary %s: '%s'", x.op, typeName(v))
	}
	switch {
	case x.op == "+" && isFloat:
		return f, nil
	case x.op == "+":
		return i, nil
	case isFloat:
		return -f, nil
	case i == math.MinInt64:
		return nil, fmt.Errorf("integer overflow")
	}
	return -i, nil
}

func (e *evaluator) binary(x *binaryExpr) (any, error) {
	l, err := e.eval(x.l)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return e.eval(x.r)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return e.eval(x.r)
	}
	r, err := e.eval(x.r)
	if err != nil {
		return nil, err
	}
	if x.op == "~" {
		ls, err := e.str(l)
		if err != nil {
			return nil, err
		}
		rs, err := e.str(r)
		if err != nil {
			return nil, err
		}
		if err := e.checkSize(len(ls) + len(rs)); err != nil {
			return nil, err
		}
		return ls + rs, nil
	}
	return e.arith(x.op, l, r)
}

func (e *evaluator) compare(x *compareExpr) (any, error) {
	l, err := e.eval(x.first)
	if err != nil {
		return nil, err
	}
	for i, op := range x.ops {
		r, err := e.eval(x.rest[i])
		if err != nil {
			return nil, err
		}
		ok, err := e.compareOp(op, l, r)
		if err != nil || !ok {
			return false, err
		}
		l = r
	}
	return true, nil
}

func (e *evaluator) compareOp(op string, l, r any) (bool, error) {
	switch op {
	case "==":
		return e.equal(l, r)
	case "!=":
		eq, err := e.equal(l, r)
		return !eq, err
	case "in":
		return e.contains(r, l)
	case "notin":
		in, err := e.contains(r, l)
		return !in, err
	}
	c, err := e.order(l, r)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	}
	return c >= 0, nil
}

// contains is Python's "needle in container".
func (e *evaluator) contains(container, needle any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := needle.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(needle))
		}
		return strings.Contains(c, s), nil
	case []any, tuple:
		items, _ := seq(c)
		for _, it := range items {
			if eq, err := e.equal(it, needle); eq || err != nil {
				return eq, err
			}
		}
		return false, nil
	case *Dict:
		k, ok := needle.(string)
		if !ok {
			return false, nil
		}
		_, in := c.Get(k)
		return in, nil
	case Undefined:
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}

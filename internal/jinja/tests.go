package jinja

import (
	"fmt"
	"strings"
	"unicode"
)

func (e *evaluator) test(x *testExpr) (any, error) {
	v, err := e.eval(x.obj)
	if err != nil {
		return nil, err
	}
	targs, err := e.evalAll(x.args)
	if err != nil {
		return nil, err
	}
	ok, err := e.runTest(x.name, v, targs)
	if err != nil {
		return nil, err
	}
	return ok != x.negate, nil
}

// runTest evaluates "v is name(args…)".
func (e *evaluator) runTest(name string, v any, targs []any) (bool, error) {
	if ok, known := typeTest(name, v); known {
		return ok, nil
	}
	arg := func() (any, error) {
		if len(targs) != 1 {
			return nil, fmt.Errorf("test '%s' takes one argument", name)
		}
		return targs[0], nil
	}
	switch name {
	case "odd", "even", "divisibleby":
		return numberTest(name, v, targs)
	case "lower", "upper":
		s, ok := v.(string)
		if !ok {
			return false, nil
		}
		if name == "lower" {
			return strings.ToLower(s) == s, nil
		}
		return strings.ToUpper(s) == s, nil
	case "sameas":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return sameAs(v, a), nil
	case "in":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return e.contains(a, v)
	}
	op, ok := comparisonTests(name)
	if !ok {
		return false, fmt.Errorf("no test named '%s'", name)
	}
	a, err := arg()
	if err != nil {
		return false, err
	}
	return e.compareOp(op, v, a)
}

// typeTest answers the tests about what kind of value v is.
func typeTest(name string, v any) (result, known bool) {
	switch name {
	case "defined":
		_, u := v.(Undefined)
		return !u, true
	case "undefined":
		_, u := v.(Undefined)
		return u, true
	case "none":
		return v == nil, true
	case "boolean":
		_, ok := v.(bool)
		return ok, true
	case "true":
		return v == true, true
	case "false":
		return v == false, true
	case "integer":
		_, ok := v.(int64)
		return ok, true
	case "float":
		_, ok := v.(float64)
		return ok, true
	case "number":
		_, _, _, ok := toNumber(v)
		return ok, true
	case "string":
		_, ok := v.(string)
		return ok, true
	case "mapping":
		_, ok := v.(*Dict)
		return ok, true
	case "sequence":
		switch v.(type) {
		case string, []any, tuple, *Dict:
			return true, true
		}
		return false, true
	case "iterable":
		switch v.(type) {
		case string, []any, tuple, *Dict, Undefined:
			return true, true
		}
		return false, true
	case "callable":
		_, ok := v.(*callable)
		return ok, true
	}
	return false, false
}

// comparisonTests maps the comparison tests (eq, equalto, ==, …) to the
// operator they stand for.
func comparisonTests(name string) (string, bool) {
	switch name {
	case "eq", "equalto", "==":
		return "==", true
	case "ne", "!=":
		return "!=", true
	case "lt", "lessthan", "<":
		return "<", true
	case "le", "<=":
		return "<=", true
	case "gt", "greaterthan", ">":
		return ">", true
	case "ge", ">=":
		return ">=", true
	}
	return "", false
}

func numberTest(name string, v any, targs []any) (bool, error) {
	i, _, isFloat, ok := toNumber(v)
	if !ok || isFloat {
		return false, fmt.Errorf("test '%s' needs an integer, not %s", name, typeName(v))
	}
	switch name {
	case "odd":
		return i%2 != 0, nil
	case "even":
		return i%2 == 0, nil
	}
	if len(targs) != 1 {
		return false, fmt.Errorf("test 'divisibleby' takes one argument")
	}
	d, _, isFloat, ok := toNumber(targs[0])
	if !ok || isFloat || d == 0 {
		return false, fmt.Errorf("divisibleby needs a non-zero integer")
	}
	return i%d == 0, nil
}

// sameAs approximates Python's "is": exact for None and booleans (the
// cases templates use), equality of value for other scalars.
func sameAs(a, b any) bool {
	switch a.(type) {
	case nil, bool, int64, float64, string:
		return a == b
	}
	switch x := a.(type) {
	case *Dict:
		y, ok := b.(*Dict)
		return ok && x == y
	case *namespace:
		y, ok := b.(*namespace)
		return ok && x == y
	}
	return false
}

// isTitle is Python's str.istitle().
func isTitle(s string) bool {
	cased, prevCased := false, false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			if prevCased {
				return false
			}
			prevCased, cased = true, true
		case unicode.IsLower(r):
			if !prevCased {
				return false
			}
			prevCased, cased = true, true
		default:
			prevCased = false
		}
	}
	return cased
}

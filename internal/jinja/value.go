package jinja

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Values inside the evaluator are Python's, in Go clothes: nil (None),
// bool, int64, float64, string, []any (list), tuple, *Dict, Undefined,
// *namespace, *loopInfo and callables. Render converts its inputs to these.

// Undefined is the value of a name or key that does not exist. As Jinja's
// default Undefined it prints as "", is false, iterates as empty and has
// length 0; anything else (attributes, arithmetic, calls) is an error.
type Undefined struct{ Name string }

func (u Undefined) err() error {
	if u.Name == "" {
		return fmt.Errorf("value is undefined")
	}
	return fmt.Errorf("'%s' is undefined", u.Name)
}

type tuple []any

// errBudget is what pyCompare reports when its budget runs out; the
// evaluator turns it into an ErrLimit error.
var errBudget = errors.New("comparison budget exhausted")

// Dict is an insertion-ordered mapping with string keys, as Python's dict
// is ordered: tojson of a tool schema must keep the client's key order.
type Dict struct {
	keys []string
	m    map[string]any
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{m: map[string]any{}} }

// Set adds or replaces key; a new key goes last.
func (d *Dict) Set(key string, v any) {
	if _, ok := d.m[key]; !ok {
		d.keys = append(d.keys, key)
	}
	d.m[key] = v
}

// Get returns the value of key.
func (d *Dict) Get(key string) (any, bool) {
	v, ok := d.m[key]
	return v, ok
}

// Keys returns the keys in insertion order.
func (d *Dict) Keys() []string { return slices.Clone(d.keys) }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// namespace is the mutable object namespace() makes, the one thing a
// template may assign attributes to from inside a loop.
type namespace struct{ d *Dict }

// callable is a function a template can call: macros, globals and bound
// methods of strings and dicts.
type callable struct {
	name string
	fn   func(e *evaluator, args []any, kw *Dict) (any, error)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case Undefined:
		return "Undefined"
	case *namespace:
		return "Namespace"
	case *loopInfo:
		return "LoopContext"
	case *callable:
		return "function"
	}
	return fmt.Sprintf("%T", v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil, Undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case tuple:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	}
	return true
}

// seq returns the items of a list or tuple.
func seq(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case tuple:
		return x, true
	}
	return nil, false
}

// pyStr is Python's str(): what {{ }} prints. Values a template builds
// can share structure (or, through a namespace, contain themselves), so
// the text is bounded: past limit bytes or maxNesting levels it stops and
// reports false.
func pyStr(v any, limit int) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case Undefined:
		return "", true
	}
	return pyRepr(v, limit)
}

// pyRepr is Python's repr(), used inside containers.
func pyRepr(v any, limit int) (string, bool) {
	var b strings.Builder
	ok := writeRepr(&b, v, 0, limit)
	return b.String(), ok
}

func writeRepr(b *strings.Builder, v any, depth, limit int) bool {
	if depth > maxNesting || b.Len() > limit {
		return false
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		b.WriteString(quoteRepr(x))
	case Undefined:
	case []any:
		return writeItems(b, "[", x, "]", depth, limit)
	case tuple:
		if len(x) == 1 {
			return writeItems(b, "(", x, ",)", depth, limit)
		}
		return writeItems(b, "(", x, ")", depth, limit)
	case *Dict:
		return writeDict(b, x, depth, limit)
	case *namespace:
		b.WriteString("<Namespace ")
		ok := writeDict(b, x.d, depth, limit)
		b.WriteString(">")
		return ok
	case *callable:
		fmt.Fprintf(b, "<function %s>", x.name)
	default:
		fmt.Fprintf(b, "<%s object>", typeName(v))
	}
	return b.Len() <= limit
}

func writeItems(b *strings.Builder, open string, items []any, closer string, depth, limit int) bool {
	b.WriteString(open)
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		if !writeRepr(b, it, depth+1, limit) {
			return false
		}
	}
	b.WriteString(closer)
	return true
}

func writeDict(b *strings.Builder, d *Dict, depth, limit int) bool {
	b.WriteString("{")
	for i, k := range d.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteRepr(k))
		b.WriteString(": ")
		if !writeRepr(b, d.m[k], depth+1, limit) {
			return false
		}
	}
	b.WriteString("}")
	return true
}

// quoteRepr quotes a string as Python's repr does: single quotes unless
// the string holds a single quote and no double quote.
func quoteRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyFloat formats a float as Python's repr: the shortest digits that
// round-trip, positional between 1e-4 and 1e16, always with a fraction
// or an exponent.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// toNumber reads a number for arithmetic: bools count as ints, as in
// Python.
func toNumber(v any) (i int64, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, 1, false, true
		}
		return 0, 0, false, true
	case int64:
		return x, float64(x), false, true
	case float64:
		return 0, x, true, true
	}
	return 0, 0, false, false
}

// pyEqual is Python's ==. Shared structure can make a comparison
// exponentially long, so every value visited spends one unit of budget;
// when it runs out the answer is false and *budget is negative.
func pyEqual(a, b any, budget *int) bool { return equalAt(a, b, budget, 0) }

// equalAt is pyEqual at a depth; a value nested deeper than maxNesting
// (only a template's own loops can build one) exhausts the budget rather
// than the stack.
func equalAt(a, b any, budget *int, depth int) bool {
	*budget--
	if depth > maxNesting {
		*budget = -1
	}
	if *budget < 0 {
		return false
	}
	if _, _, _, ok := toNumber(a); ok {
		ai, af, aflt, _ := toNumber(a)
		bi, bf, bflt, ok := toNumber(b)
		if !ok {
			return false
		}
		if aflt || bflt {
			return af == bf
		}
		return ai == bi
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case Undefined:
		_, ok := b.(Undefined)
		return ok
	case []any, tuple:
		xs, _ := seq(x)
		ys, ok := seq(b)
		if !ok || reflect.TypeOf(a) != reflect.TypeOf(b) || len(xs) != len(ys) {
			return false
		}
		for i := range xs {
			if !equalAt(xs[i], ys[i], budget, depth+1) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.m[k]
			if !ok || !equalAt(x.m[k], yv, budget, depth+1) {
				return false
			}
		}
		return true
	}
	return a == b
}

// pyCompare orders two values as Python's < does, or says why it cannot.
// It spends budget as pyEqual does.
func pyCompare(a, b any, budget *int) (int, error) { return compareAt(a, b, budget, 0) }

func compareAt(a, b any, budget *int, depth int) (int, error) {
	*budget--
	if depth > maxNesting {
		*budget = -1
	}
	if *budget < 0 {
		return 0, errBudget
	}
	ai, af, aflt, aok := toNumber(a)
	bi, bf, bflt, bok := toNumber(b)
	if aok && bok {
		if aflt || bflt {
			switch {
			case af < bf:
				return -1, nil
			case af > bf:
				return 1, nil
			}
			return 0, nil
		}
		return cmp.Compare(ai, bi), nil
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	}
	xs, xok := seq(a)
	ys, yok := seq(b)
	if xok && yok && reflect.TypeOf(a) == reflect.TypeOf(b) {
		for i := 0; i < len(xs) && i < len(ys); i++ {
			if equalAt(xs[i], ys[i], budget, depth+1) {
				continue
			}
			if *budget < 0 {
				return 0, errBudget
			}
			return compareAt(xs[i], ys[i], budget, depth+1)
		}
		return cmp.Compare(len(xs), len(ys)), nil
	}
	if u, ok := a.(Undefined); ok {
		return 0, u.err()
	}
	if u, ok := b.(Undefined); ok {
		return 0, u.err()
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

// sortValues sorts in place with Python's ordering; the first comparison
// that fails is the error.
func sortValues(xs []any, key func(any) any, reverse bool, budget *int) error {
	var err error
	sort.SliceStable(xs, func(i, j int) bool {
		c, e := pyCompare(key(xs[i]), key(xs[j]), budget)
		if e != nil && err == nil {
			err = e
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	return err
}

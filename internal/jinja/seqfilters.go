package jinja

import (
	"fmt"
	"strconv"
	"strings"
)

// seqFilter runs the filters that work on sequences, reporting whether
// name is one of them.
func (e *evaluator) seqFilter(name string, v any, a args) (any, bool, error) {
	switch name {
	case "join", "first", "last", "map", "select", "reject", "selectattr", "rejectattr",
		"unique", "sort", "reverse", "sum", "min", "max", "dictsort", "batch":
	default:
		return nil, false, nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, true, err
	}
	if err := e.charge(len(items)); err != nil {
		return nil, true, err
	}
	var out any
	switch name {
	case "join":
		out, err = e.join(items, a)
	case "first", "last":
		out = Undefined{Name: name}
		if len(items) > 0 && name == "first" {
			out = items[0]
		} else if len(items) > 0 {
			out = items[len(items)-1]
		}
	case "map":
		out, err = e.mapFilter(items, a)
	case "select", "reject", "selectattr", "rejectattr":
		out, err = e.selectFilter(name, items, a)
	case "reverse":
		if s, ok := v.(string); ok {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs), true, nil
		}
		rev := make([]any, len(items))
		for i, it := range items {
			rev[len(items)-1-i] = it
		}
		out = rev
	case "dictsort":
		out, err = e.dictsort(v, a)
	case "batch":
		out, err = e.batch(items, a)
	default:
		out, err = e.orderFilter(name, items, a)
	}
	return out, true, err
}

// attrPath follows Jinja's attribute argument: "a.b.0" looks up a, then b,
// then item 0.
func (e *evaluator) attrPath(v any, path string) (any, error) {
	for part := range strings.SplitSeq(path, ".") {
		var err error
		if n, convErr := strconv.ParseInt(part, 10, 64); convErr == nil {
			v, err = e.getitem(v, n)
		} else {
			v, err = e.getitem(v, part)
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (e *evaluator) join(items []any, a args) (any, error) {
	sep, err := a.str(0, "d", "")
	if err != nil {
		return nil, err
	}
	attr, err := a.str(1, "attribute", "")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, it := range items {
		if attr != "" {
			if it, err = e.attrPath(it, attr); err != nil {
				return nil, err
			}
		}
		s, err := e.str(it)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
		if err := e.checkSize(b.Len()); err != nil {
			return nil, err
		}
	}
	return b.String(), nil
}

// mapFilter is map(attribute='x', default=…) or map('filter', args…).
func (e *evaluator) mapFilter(items []any, a args) (any, error) {
	out := make([]any, len(items))
	if attr, ok := a.kw.Get("attribute"); ok {
		path, isStr := attr.(string)
		if !isStr {
			return nil, fmt.Errorf("map attribute must be a string")
		}
		def, hasDef := a.kw.Get("default")
		for i, it := range items {
			v, err := e.attrPath(it, path)
			if err != nil {
				return nil, err
			}
			if _, undef := v.(Undefined); undef && hasDef {
				v = def
			}
			out[i] = v
		}
		return out, nil
	}
	if len(a.pos) == 0 {
		return nil, fmt.Errorf("map needs a filter name or attribute=")
	}
	name, ok := a.pos[0].(string)
	if !ok {
		return nil, fmt.Errorf("map filter name must be a string")
	}
	rest := args{pos: a.pos[1:], kw: a.kw}
	for i, it := range items {
		v, err := e.runFilter(name, it, rest)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// selectFilter is select/reject(test, args…) and selectattr/rejectattr(
// attr, test, args…); without a test, truthiness decides.
func (e *evaluator) selectFilter(name string, items []any, a args) (any, error) {
	pos := a.pos
	attr := ""
	if strings.HasSuffix(name, "attr") {
		if len(pos) == 0 {
			return nil, fmt.Errorf("%s needs an attribute name", name)
		}
		s, ok := pos[0].(string)
		if !ok {
			return nil, fmt.Errorf("%s attribute must be a string", name)
		}
		attr, pos = s, pos[1:]
	}
	want := strings.HasPrefix(name, "select")
	out := []any{}
	for _, it := range items {
		v := it
		if attr != "" {
			var err error
			if v, err = e.attrPath(it, attr); err != nil {
				return nil, err
			}
		}
		ok := truthy(v)
		if len(pos) > 0 {
			test, isStr := pos[0].(string)
			if !isStr {
				return nil, fmt.Errorf("%s test name must be a string", name)
			}
			var err error
			if ok, err = e.runTest(test, v, pos[1:]); err != nil {
				return nil, err
			}
		}
		if ok == want {
			out = append(out, it)
		}
	}
	return out, nil
}

// orderFilter runs the filters that order items: sort, unique, min, max,
// sum.
func (e *evaluator) orderFilter(name string, items []any, a args) (any, error) {
	attrArg := 1 // unique, min, max
	switch name {
	case "sort":
		attrArg = 2
	case "sum":
		attrArg = 0
	}
	attr, err := a.str(attrArg, "attribute", "")
	if err != nil {
		return nil, err
	}
	keyed := items
	if attr != "" {
		keyed = make([]any, len(items))
		for i, it := range items {
			if keyed[i], err = e.attrPath(it, attr); err != nil {
				return nil, err
			}
		}
	}
	if name == "sum" {
		total, ok := a.get(1, "start")
		if !ok {
			total = int64(0)
		}
		for _, k := range keyed {
			if total, err = e.arith("+", total, k); err != nil {
				return nil, err
			}
		}
		return total, nil
	}
	caseSensitive := a.boolean(1, "case_sensitive", false)
	if name != "sort" {
		caseSensitive = a.boolean(0, "case_sensitive", false)
	}
	key := func(v any) any {
		if s, ok := v.(string); ok && !caseSensitive {
			return strings.ToLower(s)
		}
		return v
	}
	return e.ordered(name, items, keyed, key, a.boolean(0, "reverse", false))
}

func (e *evaluator) ordered(name string, items, keyed []any, key func(any) any, reverse bool) (any, error) {
	switch name {
	case "unique":
		var out, seen []any
		for i, it := range items {
			k := key(keyed[i])
			dup := false
			for _, s := range seen {
				eq, err := e.equal(s, k)
				if err != nil {
					return nil, err
				}
				dup = dup || eq
			}
			if !dup {
				seen = append(seen, k)
				out = append(out, it)
			}
		}
		return append([]any{}, out...), nil
	case "min", "max":
		if len(items) == 0 {
			return Undefined{Name: name}, nil
		}
		best := 0
		for i := 1; i < len(items); i++ {
			c, err := e.order(key(keyed[i]), key(keyed[best]))
			if err != nil {
				return nil, err
			}
			if name == "min" && c < 0 || name == "max" && c > 0 {
				best = i
			}
		}
		return items[best], nil
	}
	idx := make([]any, len(items))
	for i := range idx {
		idx[i] = int64(i)
	}
	err := e.withBudget(func(budget *int) error {
		return sortValues(idx, func(v any) any { return key(keyed[v.(int64)]) }, reverse, budget)
	})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, j := range idx {
		out[i] = items[j.(int64)]
	}
	return out, nil
}

func (e *evaluator) dictsort(v any, a args) (any, error) {
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("dictsort needs a mapping, not %s", typeName(v))
	}
	by, err := a.str(1, "by", "key")
	if err != nil {
		return nil, err
	}
	pairs, _ := items(d)
	ps := pairs.([]any)
	pick := 0
	if by == "value" {
		pick = 1
	}
	caseSensitive := a.boolean(0, "case_sensitive", false)
	err = e.withBudget(func(budget *int) error {
		return sortValues(ps, func(p any) any {
			k := p.(tuple)[pick]
			if s, ok := k.(string); ok && !caseSensitive {
				return strings.ToLower(s)
			}
			return k
		}, a.boolean(2, "reverse", false), budget)
	})
	return ps, err
}

func (e *evaluator) batch(items []any, a args) (any, error) {
	n, err := a.integer(0, "linecount", 0)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("batch size must be positive")
	}
	fill, hasFill := a.get(1, "fill_with")
	if hasFill {
		if err := e.checkSize(int(min(n, int64(e.limits.MaxOutput)+1))); err != nil {
			return nil, err
		}
	}
	size := int(min(n, int64(len(items))+1))
	var out []any
	for i := 0; i < len(items); i += size {
		row := append([]any{}, items[i:min(i+size, len(items))]...)
		for hasFill && int64(len(row)) < n {
			row = append(row, fill)
		}
		out = append(out, row)
	}
	return out, nil
}

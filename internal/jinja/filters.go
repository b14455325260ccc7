package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// args gives a filter's, test's or method's arguments by position or
// keyword, as Python binds them.
type args struct {
	pos []any
	kw  *Dict
}

func (a args) get(i int, name string) (any, bool) {
	if i >= 0 && i < len(a.pos) {
		return a.pos[i], true
	}
	if a.kw != nil {
		if v, ok := a.kw.Get(name); ok {
			return v, true
		}
	}
	return nil, false
}

func (a args) str(i int, name, def string) (string, error) {
	v, ok := a.get(i, name)
	if !ok || v == nil {
		return def, nil
	}
	if s, isStr := v.(string); isStr {
		return s, nil
	}
	return "", fmt.Errorf("argument %s must be a string, not %s", name, typeName(v))
}

func (a args) boolean(i int, name string, def bool) bool {
	v, ok := a.get(i, name)
	if !ok {
		return def
	}
	return truthy(v)
}

func (a args) integer(i int, name string, def int64) (int64, error) {
	v, ok := a.get(i, name)
	if !ok || v == nil {
		return def, nil
	}
	n, _, isFloat, isNum := toNumber(v)
	if !isNum || isFloat {
		return 0, fmt.Errorf("argument %s must be an integer, not %s", name, typeName(v))
	}
	return n, nil
}

func (e *evaluator) filter(x *filterExpr) (any, error) {
	v, err := e.eval(x.obj)
	if err != nil {
		return nil, err
	}
	return e.applyFilter(x, v)
}

func (e *evaluator) applyFilter(x *filterExpr, v any) (any, error) {
	pos, err := e.evalAll(x.args)
	if err != nil {
		return nil, err
	}
	kw := NewDict()
	for i, name := range x.kwNames {
		kv, err := e.eval(x.kwVals[i])
		if err != nil {
			return nil, err
		}
		kw.Set(name, kv)
	}
	return e.runFilter(x.name, v, args{pos, kw})
}

// runFilter dispatches a filter by name.
func (e *evaluator) runFilter(name string, v any, a args) (any, error) {
	switch name {
	case "default", "d":
		if _, undef := v.(Undefined); undef || a.boolean(1, "boolean", false) && !truthy(v) {
			d, ok := a.get(0, "default_value")
			if !ok {
				return "", nil
			}
			return d, nil
		}
		return v, nil
	case "safe":
		return v, nil
	case "tojson":
		return e.tojson(v, a)
	case "length", "count":
		return length(v)
	case "string":
		return e.str(v)
	case "list":
		items, err := iterate(v)
		return append([]any{}, items...), err
	case "items":
		return items(v)
	case "int":
		return toInt(v, a)
	case "float":
		return toFloat(v, a)
	case "abs":
		return absFilter(v)
	case "round":
		return round(v, a)
	case "attr":
		n, err := a.str(0, "name", "")
		if err != nil {
			return nil, err
		}
		return e.getattr(v, n)
	}
	if out, ok, err := e.stringFilter(name, v, a); ok {
		return out, err
	}
	if out, ok, err := e.seqFilter(name, v, a); ok {
		return out, err
	}
	return nil, fmt.Errorf("no filter named '%s'", name)
}

// stringFilter runs the filters that work on a string, reporting whether
// name is one of them.
func (e *evaluator) stringFilter(name string, v any, a args) (any, bool, error) {
	switch name {
	case "trim", "lower", "upper", "capitalize", "title", "replace", "indent", "escape", "e", "wordcount":
	default:
		return nil, false, nil
	}
	s, err := e.str(v) // str(Undefined) is "", as Jinja's string filters see it
	if err != nil {
		return nil, true, err
	}
	switch name {
	case "trim":
		chars, ok := a.get(0, "chars")
		if ok && chars != nil {
			cs, isStr := chars.(string)
			if !isStr {
				return nil, true, fmt.Errorf("trim chars must be a string")
			}
			return strings.Trim(s, cs), true, nil
		}
		return strings.TrimFunc(s, pyIsSpace), true, nil
	case "lower":
		return strings.ToLower(s), true, nil
	case "upper":
		return strings.ToUpper(s), true, nil
	case "capitalize":
		return capitalize(s), true, nil
	case "title":
		return jinjaTitle(s), true, nil
	case "replace":
		return e.replace(s, a)
	case "indent":
		out, err := indent(s, a)
		return out, true, err
	case "escape", "e":
		return htmlEscape(s), true, nil
	case "wordcount":
		return int64(len(strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }))), true, nil
	}
	return nil, false, nil
}

func (e *evaluator) replace(s string, a args) (any, bool, error) {
	old, err := a.str(0, "old", "")
	if err != nil {
		return nil, true, err
	}
	repl, err := a.str(1, "new", "")
	if err != nil {
		return nil, true, err
	}
	n, err := a.integer(2, "count", -1)
	if err != nil {
		return nil, true, err
	}
	if old == "" && len(repl) > 0 && len(s) > e.limits.MaxOutput/len(repl) {
		return nil, true, e.checkSize(e.limits.MaxOutput + 1)
	}
	if old != "" && len(repl) > len(old) && strings.Count(s, old) > e.limits.MaxOutput/(len(repl)-len(old)+1) {
		return nil, true, e.checkSize(e.limits.MaxOutput + 1)
	}
	out := strings.Replace(s, old, repl, int(max(n, -1)))
	return out, true, e.checkSize(len(out))
}

func capitalize(s string) string {
	rs := []rune(strings.ToLower(s))
	if len(rs) > 0 {
		rs[0] = unicode.ToUpper(rs[0])
	}
	return string(rs)
}

// jinjaTitle is Jinja's title filter: a word starts after whitespace or an
// opening bracket or hyphen.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if start {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		start = pyIsSpace(r) || strings.ContainsRune("-([{<", r)
	}
	return b.String()
}

// pyTitle is Python's str.title(): a word starts after any non-letter.
func pyTitle(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, r := range s {
		if prevLetter {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToUpper(r))
		}
		prevLetter = unicode.IsLetter(r)
	}
	return b.String()
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// indent is Jinja 3's indent filter: every line but the first (unless
// first=True) gets the prefix; blank lines only with blank=True.
func indent(s string, a args) (string, error) {
	prefix := "    "
	if w, ok := a.get(0, "width"); ok {
		switch x := w.(type) {
		case string:
			prefix = x
		case int64:
			prefix = strings.Repeat(" ", int(min(max(x, 0), 1024)))
		default:
			return "", fmt.Errorf("indent width must be an int or a string")
		}
	}
	lines := pySplitLines(s + "\n")
	var rv string
	if a.boolean(2, "blank", false) {
		rv = strings.Join(lines, "\n"+prefix)
	} else {
		var b strings.Builder
		b.WriteString(lines[0])
		for _, l := range lines[1:] {
			b.WriteByte('\n')
			if l != "" {
				b.WriteString(prefix)
			}
			b.WriteString(l)
		}
		rv = b.String()
	}
	if a.boolean(1, "first", false) {
		rv = prefix + rv
	}
	return rv, nil
}

// pySplitLines is Python's str.splitlines() (without keepends).
func pySplitLines(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\n', '\v', '\f', '\x1c', '\x1d', '\x1e', 0x85, 0x2028, 0x2029:
		case '\r':
			out = append(out, string(rs[start:i]))
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			start = i + 1
			continue
		default:
			continue
		}
		out = append(out, string(rs[start:i]))
		start = i + 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// pyIsSpace is Python's str.isspace() for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

func length(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return int64(runeLen(x)), nil
	case []any:
		return int64(len(x)), nil
	case tuple:
		return int64(len(x)), nil
	case *Dict:
		return int64(x.Len()), nil
	case *namespace:
		return int64(x.d.Len()), nil
	case Undefined:
		return int64(0), nil
	}
	return nil, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

func items(v any) (any, error) {
	switch x := v.(type) {
	case *Dict:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = tuple{k, x.m[k]}
		}
		return out, nil
	case Undefined:
		return []any{}, nil
	}
	return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", typeName(v))
}

func toInt(v any, a args) (any, error) {
	def, err := a.integer(0, "default", 0)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return def, nil
		}
		return int64(x), nil
	case string:
		base, err := a.integer(1, "base", 10)
		if err != nil {
			return nil, err
		}
		s := strings.ReplaceAll(strings.TrimFunc(x, pyIsSpace), "_", "")
		if n, err := strconv.ParseInt(s, int(base), 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
	}
	return def, nil
}

func toFloat(v any, a args) (any, error) {
	def := 0.0
	if d, ok := a.get(0, "default"); ok {
		if _, f, _, isNum := toNumber(d); isNum {
			def = f
		}
	}
	if _, f, _, ok := toNumber(v); ok {
		return f, nil
	}
	if s, ok := v.(string); ok {
		if f, err := strconv.ParseFloat(strings.TrimFunc(s, pyIsSpace), 64); err == nil {
			return f, nil
		}
	}
	return def, nil
}

func absFilter(v any) (any, error) {
	i, f, isFloat, ok := toNumber(v)
	switch {
	case !ok:
		return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
	case isFloat:
		return math.Abs(f), nil
	case i == math.MinInt64:
		return nil, errOverflow
	}
	return abs64(i), nil
}

func round(v any, a args) (any, error) {
	_, f, _, ok := toNumber(v)
	if !ok {
		return nil, fmt.Errorf("round: '%s' is not a number", typeName(v))
	}
	prec, err := a.integer(0, "precision", 0)
	if err != nil {
		return nil, err
	}
	method, err := a.str(1, "method", "common")
	if err != nil {
		return nil, err
	}
	p := math.Pow(10, float64(min(max(prec, -300), 300)))
	switch method {
	case "common":
		return math.RoundToEven(f*p) / p, nil // Python's round()
	case "ceil":
		return math.Ceil(f*p) / p, nil
	case "floor":
		return math.Floor(f*p) / p, nil
	}
	return nil, fmt.Errorf("method must be common, ceil or floor")
}

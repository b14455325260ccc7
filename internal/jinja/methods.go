package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Methods of str and dict that templates call. The immutable sandbox
// transformers uses allows no mutating method (list.append, dict.update),
// so none is here.

func method(name string, fn func(e *evaluator, a args) (any, error)) *callable {
	return &callable{name: name, fn: func(e *evaluator, pos []any, kw *Dict) (any, error) {
		return fn(e, args{pos, kw})
	}}
}

func stringMethod(s, name string) *callable {
	switch name {
	case "strip", "lstrip", "rstrip":
		return method(name, func(_ *evaluator, a args) (any, error) { return stripMethod(name, s, a) })
	case "startswith", "endswith":
		return method(name, func(_ *evaluator, a args) (any, error) { return affixMethod(name, s, a) })
	case "split", "rsplit":
		return method(name, func(_ *evaluator, a args) (any, error) { return splitMethod(name, s, a) })
	case "upper":
		return method(name, func(*evaluator, args) (any, error) { return strings.ToUpper(s), nil })
	case "lower":
		return method(name, func(*evaluator, args) (any, error) { return strings.ToLower(s), nil })
	case "title":
		return method(name, func(*evaluator, args) (any, error) { return pyTitle(s), nil })
	case "capitalize":
		return method(name, func(*evaluator, args) (any, error) { return capitalize(s), nil })
	case "splitlines":
		return method(name, func(*evaluator, args) (any, error) { return strList(pySplitLines(s)), nil })
	case "replace":
		return method(name, func(e *evaluator, a args) (any, error) {
			out, _, err := e.replace(s, a)
			return out, err
		})
	case "find", "count", "rfind":
		return method(name, func(_ *evaluator, a args) (any, error) { return searchMethod(name, s, a) })
	case "join":
		return method(name, func(e *evaluator, a args) (any, error) {
			v, _ := a.get(0, "iterable")
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			return e.join(items, args{pos: []any{s}})
		})
	case "format":
		return method(name, func(e *evaluator, a args) (any, error) { return e.format(s, a) })
	case "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "istitle":
		return method(name, func(*evaluator, args) (any, error) { return classify(name, s), nil })
	}
	return nil
}

func strList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func stripMethod(name, s string, a args) (any, error) {
	chars, err := a.str(0, "chars", "")
	if err != nil {
		return nil, err
	}
	cut := func(r rune) bool { return pyIsSpace(r) }
	if c, ok := a.get(0, "chars"); ok && c != nil {
		cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	switch name {
	case "lstrip":
		return strings.TrimLeftFunc(s, cut), nil
	case "rstrip":
		return strings.TrimRightFunc(s, cut), nil
	}
	return strings.TrimFunc(s, cut), nil
}

// affixMethod is startswith/endswith with a string or a tuple of them.
func affixMethod(name, s string, a args) (any, error) {
	v, ok := a.get(0, "prefix")
	if !ok {
		return nil, fmt.Errorf("%s takes at least 1 argument", name)
	}
	cands, isSeq := seq(v)
	if !isSeq {
		cands = []any{v}
	}
	for _, c := range cands {
		p, ok := c.(string)
		if !ok {
			return nil, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(c))
		}
		if name == "startswith" && strings.HasPrefix(s, p) || name == "endswith" && strings.HasSuffix(s, p) {
			return true, nil
		}
	}
	return false, nil
}

func splitMethod(name, s string, a args) (any, error) {
	sepV, _ := a.get(0, "sep")
	n, err := a.integer(1, "maxsplit", -1)
	if err != nil {
		return nil, err
	}
	if sepV == nil {
		return strList(splitSpace(s, int(n), name == "rsplit")), nil
	}
	sep, ok := sepV.(string)
	if !ok {
		return nil, fmt.Errorf("must be str or None, not %s", typeName(sepV))
	}
	if sep == "" {
		return nil, fmt.Errorf("empty separator")
	}
	if n < 0 || name == "split" {
		if n < 0 {
			return strList(strings.Split(s, sep)), nil
		}
		return strList(strings.SplitN(s, sep, int(min(n, int64(len(s))))+1)), nil
	}
	var parts []string
	for ; n > 0; n-- {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		parts = append(parts, s[i+len(sep):])
		s = s[:i]
	}
	parts = append(parts, s)
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strList(parts), nil
}

// splitSpace is str.split() without a separator: runs of whitespace
// separate, and none is kept at the ends (of the split part).
func splitSpace(s string, n int, fromRight bool) []string {
	if !fromRight {
		var out []string
		for n != 0 {
			s = strings.TrimLeftFunc(s, pyIsSpace)
			i := strings.IndexFunc(s, pyIsSpace)
			if s == "" || i < 0 {
				break
			}
			out = append(out, s[:i])
			s = s[i:]
			n--
		}
		if s = strings.TrimLeftFunc(s, pyIsSpace); s != "" {
			out = append(out, s)
		}
		return out
	}
	var out []string
	for n != 0 {
		s = strings.TrimRightFunc(s, pyIsSpace)
		i := strings.LastIndexFunc(s, pyIsSpace)
		if s == "" || i < 0 {
			break
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		out = append([]string{s[i+w:]}, out...)
		s = s[:i]
		n--
	}
	if s = strings.TrimRightFunc(s, pyIsSpace); s != "" {
		out = append([]string{s}, out...)
	}
	return out
}

func searchMethod(name, s string, a args) (any, error) {
	sub, err := a.str(0, "sub", "")
	if err != nil {
		return nil, err
	}
	var i int
	switch name {
	case "count":
		if sub == "" {
			return int64(runeLen(s) + 1), nil
		}
		return int64(strings.Count(s, sub)), nil
	case "find":
		i = strings.Index(s, sub)
	default:
		i = strings.LastIndex(s, sub)
	}
	if i < 0 {
		return int64(-1), nil
	}
	return int64(runeLen(s[:i])), nil
}

func classify(name, s string) bool {
	if s == "" {
		return false
	}
	if name == "istitle" {
		return isTitle(s)
	}
	cased := false
	for _, r := range s {
		switch name {
		case "isdigit":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isalpha":
			if !unicode.IsLetter(r) {
				return false
			}
		case "isalnum":
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				return false
			}
		case "isspace":
			if !pyIsSpace(r) {
				return false
			}
		case "isupper":
			if unicode.IsLower(r) {
				return false
			}
			cased = cased || unicode.IsUpper(r)
		case "islower":
			if unicode.IsUpper(r) {
				return false
			}
			cased = cased || unicode.IsLower(r)
		}
	}
	return cased || name != "isupper" && name != "islower"
}

// format is str.format with {}, {0} and {name} fields; format specs and
// conversions are not supported.
func (e *evaluator) format(s string, a args) (any, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '}' {
			if i+1 < len(s) && s[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("single '{' encountered in format string")
		}
		field := s[i+1 : i+end]
		i += end
		var v any
		var ok bool
		switch n, err := strconv.Atoi(field); {
		case field == "":
			v, ok = a.get(next, "")
			next++
		case err == nil:
			v, ok = a.get(n, "")
		default:
			v, ok = a.get(-1, field)
		}
		if !ok {
			return nil, fmt.Errorf("format: no argument for field {%s}", field)
		}
		str, err := e.str(v)
		if err != nil {
			return nil, err
		}
		b.WriteString(str)
		if err := e.checkSize(b.Len()); err != nil {
			return nil, err
		}
	}
	return b.String(), nil
}

func dictMethod(d *Dict, name string) *callable {
	switch name {
	case "get":
		return method(name, func(_ *evaluator, a args) (any, error) {
			k, _ := a.get(0, "key")
			def, ok := a.get(1, "default")
			if !ok {
				def = nil
			}
			if ks, isStr := k.(string); isStr {
				if v, found := d.Get(ks); found {
					return v, nil
				}
			}
			return def, nil
		})
	case "items":
		return method(name, func(*evaluator, args) (any, error) { return items(d) })
	case "keys":
		return method(name, func(*evaluator, args) (any, error) { return strList(d.Keys()), nil })
	case "values":
		return method(name, func(*evaluator, args) (any, error) {
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = d.m[k]
			}
			return out, nil
		})
	}
	return nil
}

// tojson is transformers' tojson filter (json.dumps with ensure_ascii
// off), not Jinja's HTML-escaping one.
func (e *evaluator) tojson(v any, a args) (any, error) {
	o := newJSONOpts()
	if ind, ok := a.get(0, "indent"); ok && ind != nil {
		switch x := ind.(type) {
		case int64:
			o.indent = strings.Repeat(" ", int(min(max(x, 0), 64)))
		case string:
			o.indent = x
		default:
			return nil, fmt.Errorf("tojson indent must be an int or a string")
		}
		o.hasIndent = true
		o.itemSep = ","
	}
	if seps, ok := a.get(-1, "separators"); ok && seps != nil {
		pair, isSeq := seq(seps)
		if !isSeq || len(pair) != 2 {
			return nil, fmt.Errorf("tojson separators must be a pair of strings")
		}
		is, ok1 := pair[0].(string)
		ks, ok2 := pair[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("tojson separators must be a pair of strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	o.sortKeys = a.boolean(-1, "sort_keys", false)
	o.ensureASCII = a.boolean(-1, "ensure_ascii", false)
	o.maxLen = e.limits.MaxOutput
	var b strings.Builder
	budget := e.limits.MaxSteps - e.steps
	err := o.write(&b, v, 0, &budget)
	e.steps = e.limits.MaxSteps - max(budget, 0)
	if err != nil {
		return nil, err
	}
	return b.String(), e.checkSize(b.Len())
}

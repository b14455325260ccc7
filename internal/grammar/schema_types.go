package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// formats are the string formats generated exactly; each is the regex
// whose matches every validator accepts (dates keep to days every month
// has, so no calendar check can fail).
func formats() map[string]string {
	date := `\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))`
	time := `(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)`
	return map[string]string{
		"date":      date,
		"time":      time,
		"date-time": date + "T" + time,
		"uuid":      `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`,
		"ipv4":      `(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`,
		"email":     `[a-z0-9]{1,20}(?:\.[a-z0-9]{1,20}){0,2}@[a-z0-9]{1,20}(?:-[a-z0-9]{1,20})?(?:\.[a-z]{2,6}){1,2}`,
		"ipv6":      `(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}`,
		"hostname":  `[a-z0-9]{1,20}(?:\.[a-z0-9]{1,20}){0,3}`,
		"duration":  `P(?:\d{1,4}D|T\d{1,2}H\d{1,2}M\d{1,2}S|\d{1,4}DT\d{1,2}H\d{1,2}M\d{1,2}S)`,
		"uri":       `https://[a-z0-9]{1,20}(?:-[a-z0-9]{1,20})?(?:\.[a-z0-9]{1,20}){0,2}\.[a-z]{2,6}(?:/[A-Za-z0-9_-]{1,20}){0,4}`,
	}
}

// str compiles a string schema: its own rule when constrained, the shared
// string rule otherwise. A pattern, a known format and length bounds
// together are all enforced: their languages are intersected (a length
// the pattern or format already implies adds nothing). A format glassbox
// does not know is an annotation when a pattern says what the string is,
// as validators leave unknown formats unasserted (zod writes its own
// pattern beside formats such as cuid or starts_with); alone it is
// refused.
func (c *schemaCompiler) str(s *object, path string) (Expr, error) {
	minLen, err := count(s, "minLength", path)
	if err != nil {
		return nil, err
	}
	maxLen, err := count(s, "maxLength", path)
	if err != nil {
		return nil, err
	}
	if maxLen >= 0 && minLen > maxLen {
		return nil, syntaxErr("minLength", "minLength %d exceeds maxLength %d at %s", minLen, maxLen, path)
	}
	var langs []*regex
	var whats []string
	pv, hasPattern := s.get("pattern")
	if fv, ok := s.get("format"); ok {
		f, _ := fv.(string)
		src, known := formats()[f]
		switch {
		case known:
			re, err := parseRegex(src)
			if err != nil {
				return nil, fmt.Errorf("BUG: grammar: format %q: %w", f, err)
			}
			langs, whats = append(langs, re), append(whats, "format")
		case !hasPattern:
			return nil, syntaxErr("format", "string format %q (at %s) is not supported", f, path)
		}
	}
	if hasPattern {
		p, ok := pv.(string)
		if !ok {
			return nil, syntaxErr("pattern", "pattern at %s must be a string", path)
		}
		re, err := parseRegex(p)
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				se.What = "pattern"
			}
			return nil, err
		}
		langs, whats = append(langs, re), append(whats, "pattern")
	}
	if len(langs) == 0 {
		if minLen < 0 && maxLen < 0 {
			return c.stringRule(), nil
		}
		name := c.ruleName("str")
		c.b.Define(name, Seq(Lit(`"`), Rep(jsonStringChar(), max(minLen, 0), maxLen), Lit(`"`)))
		return c.b.Rule(name), nil
	}
	body, err := stringLanguage(langs, minLen, maxLen)
	if err != nil {
		what := whats[len(whats)-1]
		if errors.Is(err, ErrEmpty) {
			return nil, syntaxErr(what, "no string satisfies the %s together at %s", strings.Join(append(whats, lengthWords(minLen, maxLen)...), " and "), path)
		}
		if errors.Is(err, errTooLarge) {
			return nil, syntaxErr(what, "the %s at %s compiles to too large an automaton", strings.Join(append(whats, lengthWords(minLen, maxLen)...), " and "), path)
		}
		return nil, err
	}
	name := c.ruleName("str")
	c.b.Define(name, Seq(Lit(`"`), body, Lit(`"`)))
	return c.b.Rule(name), nil
}

// lengthWords names the length bounds given, for errors.
func lengthWords(minLen, maxLen int) []string {
	var out []string
	if minLen >= 0 {
		out = append(out, "minLength")
	}
	if maxLen >= 0 {
		out = append(out, "maxLength")
	}
	return out
}

// stringLanguage is a JSON string's content matching every regex of langs
// and the length bounds (-1: none), or ErrEmpty when none does.
func stringLanguage(langs []*regex, minLen, maxLen int) (Expr, error) {
	implied := func(re *regex) bool {
		lo, hi := re.main.lengths()
		return lo >= minLen && (maxLen < 0 || (hi >= 0 && hi <= maxLen))
	}
	if len(langs) == 1 && len(langs[0].ahead) == 0 && implied(langs[0]) {
		return langs[0].main.toExpr(jsonChars), nil
	}
	var d *dfa
	add := func(x Expr) error {
		l, err := regularDFA(x)
		if err != nil {
			return err
		}
		if d == nil {
			d = l
			return nil
		}
		d, err = intersect(d, l)
		return err
	}
	needLength := minLen > 0 || maxLen >= 0
	for _, re := range langs {
		x, err := re.expr(jsonChars)
		if err != nil {
			return nil, err
		}
		if err := add(x); err != nil {
			return nil, err
		}
		if implied(re) {
			needLength = false
		}
	}
	if needLength {
		if err := add(Rep(jsonChars(anyRune()), max(minLen, 0), maxLen)); err != nil {
			return nil, err
		}
	}
	if d.empty() {
		return nil, ErrEmpty
	}
	return dfaExpr{d}, nil
}

// array compiles an array schema: prefixItems (or draft 4's items list)
// in order, then items, within minItems..maxItems.
func (c *schemaCompiler) array(s *object, path string) (Expr, error) {
	minN, err := count(s, "minItems", path)
	if err != nil {
		return nil, err
	}
	maxN, err := count(s, "maxItems", path)
	if err != nil {
		return nil, err
	}
	minN = max(minN, 0)
	if maxN >= 0 && minN > maxN {
		return nil, syntaxErr("minItems", "minItems %d exceeds maxItems %d at %s", minN, maxN, path)
	}
	var prefix []any
	items, hasItems := s.get("items")
	if list, ok := items.([]any); ok { // draft 4 tuple
		prefix, items = list, nil
		hasItems = false
		if extra, ok := s.get("additionalItems"); ok {
			items, hasItems = extra, true
		}
	}
	if p, ok := s.get("prefixItems"); ok {
		list, ok := p.([]any)
		if !ok {
			return nil, syntaxErr("prefixItems", "prefixItems at %s must be an array", path)
		}
		prefix = list
	}
	var itemExpr Expr
	if !hasItems || items == true {
		if len(prefix) == 0 || hasItems {
			itemExpr = c.anyValue()
		}
	} else if items != false {
		x, err := c.sub(items, path+"/items")
		if err != nil {
			return nil, err
		}
		itemExpr = x
	}
	ws, sep := c.ws, Seq(c.ws, Lit(","), c.ws)
	var parts []Expr
	for i, p := range prefix {
		x, err := c.sub(p, fmt.Sprintf("%s/prefixItems/%d", path, i))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			parts = append(parts, sep)
		}
		parts = append(parts, x)
	}
	k := len(prefix)
	if maxN >= 0 && maxN < k {
		return nil, syntaxErr("maxItems", "maxItems %d below the %d prefixItems at %s is not supported", maxN, k, path)
	}
	var body Expr
	switch {
	case itemExpr == nil && minN > k:
		return nil, syntaxErr("minItems", "minItems %d needs more items than the schema at %s allows", minN, path)
	case itemExpr == nil:
		body = seqExpr(parts)
	case k > 0:
		more := -1
		if maxN >= 0 {
			more = maxN - k
		}
		body = Seq(seqExpr(parts), Rep(Seq(sep, itemExpr), max(minN-k, 0), more))
	default:
		more := -1
		if maxN >= 0 {
			more = maxN - 1
		}
		switch {
		case maxN == 0:
			body = Empty()
		case minN == 0:
			body = Opt(Seq(itemExpr, Rep(Seq(sep, itemExpr), 0, more)))
		default:
			body = Seq(itemExpr, Rep(Seq(sep, itemExpr), minN-1, more))
		}
	}
	name := c.ruleName("array")
	c.b.Define(name, Seq(Lit("["), ws, body, ws, Lit("]")))
	return c.b.Rule(name), nil
}

// sub compiles a subschema.
func (c *schemaCompiler) sub(s any, path string) (Expr, error) { return c.value(s, path) }

// obj compiles an object schema.
func (c *schemaCompiler) obj(s *object, path string) (Expr, error) {
	props, _ := s.get("properties")
	po, _ := props.(*object)
	if props != nil && po == nil {
		return nil, syntaxErr("properties", "properties at %s must be an object", path)
	}
	var required []string
	if r, ok := s.get("required"); ok {
		list, ok := r.([]any)
		if !ok {
			return nil, syntaxErr("required", "required at %s must be an array of names", path)
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return nil, syntaxErr("required", "required at %s must be an array of names", path)
			}
			required = append(required, name)
		}
	}
	additional, hasAdditional := s.get("additionalProperties")
	if !hasAdditional {
		additional, hasAdditional = s.get("unevaluatedProperties")
	}
	type prop struct {
		key      string
		value    Expr
		required bool
	}
	keys, err := c.propertyNames(s, path)
	if err != nil {
		return nil, err
	}
	var list []prop
	if po != nil {
		for _, k := range po.keys {
			if !keys.allows(k) {
				if contains(required, k) {
					return nil, syntaxErr("propertyNames", "required property %q at %s is not allowed by propertyNames", k, path)
				}
				continue // an optional property no key may name
			}
			x, err := c.sub(po.vals[k], path+"/properties/"+k)
			if err != nil {
				return nil, err
			}
			list = append(list, prop{k, x, contains(required, k)})
		}
	}
	for _, r := range required {
		if po != nil {
			if _, listed := po.get(r); listed {
				continue
			}
		}
		if additional == false {
			return nil, syntaxErr("required", "required property %q at %s is not allowed by additionalProperties false", r, path)
		}
		if !keys.allows(r) {
			return nil, syntaxErr("propertyNames", "required property %q at %s is not allowed by propertyNames", r, path)
		}
		var x Expr
		if hasAdditional && additional != true {
			v, err := c.sub(additional, path+"/additionalProperties")
			if err != nil {
				return nil, err
			}
			x = v
		} else {
			x = c.anyValue()
		}
		list = append(list, prop{r, x, true})
	}
	ws, sep := c.ws, Seq(c.ws, Lit(","), c.ws)
	kv := func(p prop) Expr { return Seq(Lit(quote(p.key)), ws, Lit(":"), ws, p.value) }
	var body Expr
	switch {
	case len(list) == 0 && additional == false:
		body = Empty()
	case len(list) == 0:
		// A map: any keys, values of additionalProperties' schema.
		val := c.anyValue()
		if hasAdditional && additional != true {
			v, err := c.sub(additional, path+"/additionalProperties")
			if err != nil {
				return nil, err
			}
			val = v
		}
		pair := Seq(keys.expr, ws, Lit(":"), ws, val)
		body = Opt(Seq(pair, Star(Seq(sep, pair))))
	default:
		first := -1
		for i, p := range list {
			if p.required {
				first = i
				break
			}
		}
		if first >= 0 {
			// Optional ones before the first required carry their comma
			// after them; the rest before them.
			var parts []Expr
			for i, p := range list {
				switch {
				case i < first:
					parts = append(parts, Opt(Seq(kv(p), sep)))
				case i == first:
					parts = append(parts, kv(p))
				case p.required:
					parts = append(parts, sep, kv(p))
				default:
					parts = append(parts, Opt(Seq(sep, kv(p))))
				}
			}
			body = seqExpr(parts)
		} else {
			// All optional: which one comes first, then each later one or not.
			var alts []Expr
			for i := range list {
				parts := []Expr{kv(list[i])}
				for _, p := range list[i+1:] {
					parts = append(parts, Opt(Seq(sep, kv(p))))
				}
				alts = append(alts, seqExpr(parts))
			}
			body = Opt(altExpr(alts))
		}
	}
	name := c.ruleName("object")
	c.b.Define(name, Seq(Lit("{"), ws, body, ws, Lit("}")))
	return c.b.Rule(name), nil
}

// keySchema is what propertyNames allows of an object's keys: the
// expression generated keys follow, and a check of listed ones.
type keySchema struct {
	expr   Expr
	values []string // an enum's or const's keys; nil for any that expr allows
	open   bool     // expr allows every string
}

func (k keySchema) allows(key string) bool { return k.open || contains(k.values, key) }

// propertyNames reads an object's propertyNames (z.record's keys): a
// string schema — its type, an enum or const of strings, or minLength,
// maxLength, pattern and format — that generated keys follow. Keys the
// object lists must be allowed by it; with a pattern or a length, that is
// checked only for keys the grammar generates, so listed properties beside
// one are refused.
func (c *schemaCompiler) propertyNames(s *object, path string) (keySchema, error) {
	pn, ok := s.get("propertyNames")
	if !ok || pn == true {
		return keySchema{expr: c.stringRule(), open: true}, nil
	}
	o, ok := pn.(*object)
	if !ok {
		return keySchema{}, syntaxErr("propertyNames", "propertyNames false (at %s) allows only the empty object: not supported", path)
	}
	at := path + "/propertyNames"
	for _, k := range o.keys {
		switch k {
		case "type":
			if t, _ := o.vals[k].(string); t != "string" {
				return keySchema{}, syntaxErr("propertyNames", "propertyNames at %s must describe strings (type \"string\")", path)
			}
		case "enum", "const", "minLength", "maxLength", "pattern", "format":
		default:
			if slices.Contains(validationKeywords(), k) || slices.Contains(refusedKeywords(), k) {
				return keySchema{}, syntaxErr("propertyNames", "propertyNames with %q (at %s) is not supported: give a string schema (enum, const, pattern, format, lengths)", k, path)
			}
		}
	}
	for _, k := range []string{"enum", "const"} {
		v, ok := o.get(k)
		if !ok {
			continue
		}
		list := []any{v}
		if k == "enum" {
			list, _ = v.([]any)
		}
		var keys []string
		var alts []Expr
		for _, x := range list {
			if str, isString := x.(string); isString {
				keys = append(keys, str)
				alts = append(alts, Lit(quote(str)))
			}
		}
		if len(alts) == 0 {
			return keySchema{}, syntaxErr("propertyNames", "propertyNames %s at %s holds no string", k, path)
		}
		return keySchema{expr: altExpr(alts), values: keys}, nil
	}
	x, err := c.str(o, at)
	if err != nil {
		return keySchema{}, err
	}
	_, constrained := o.get("pattern")
	for _, k := range []string{"format", "minLength", "maxLength"} {
		if _, ok := o.get(k); ok {
			constrained = true
		}
	}
	if props, ok := s.get("properties"); ok && constrained {
		if po, _ := props.(*object); po != nil && len(po.keys) > 0 {
			return keySchema{}, syntaxErr("propertyNames", "propertyNames with a pattern, format or length beside properties (at %s) is not supported", path)
		}
	}
	if req, ok := s.get("required"); ok && constrained {
		if list, _ := req.([]any); len(list) > 0 {
			return keySchema{}, syntaxErr("propertyNames", "propertyNames with a pattern, format or length beside required properties (at %s) is not supported", path)
		}
	}
	return keySchema{expr: x, open: true}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

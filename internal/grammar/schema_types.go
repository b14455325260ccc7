package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
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
		"uri":       `https://[a-z0-9]{1,20}(?:-[a-z0-9]{1,20})?(?:\.[a-z0-9]{1,20}){0,2}\.[a-z]{2,6}(?:/[A-Za-z0-9_-]{1,20}){0,4}`,
	}
}

// str compiles a string schema: its own rule when constrained, the shared
// string rule otherwise.
func (c *schemaCompiler) str(s *object, path string) (Expr, error) {
	minLen, err := count(s, "minLength", path)
	if err != nil {
		return nil, err
	}
	maxLen, err := count(s, "maxLength", path)
	if err != nil {
		return nil, err
	}
	_, hasPattern := s.get("pattern")
	fv, hasFormat := s.get("format")
	if hasPattern || hasFormat {
		what := "pattern"
		if !hasPattern {
			what = "format"
		}
		if minLen >= 0 || maxLen >= 0 {
			return nil, syntaxErr(what, "%s together with minLength or maxLength (at %s) is not supported", what, path)
		}
		if hasPattern && hasFormat {
			return nil, syntaxErr("format", "format together with pattern (at %s) is not supported", path)
		}
		var src string
		if hasPattern {
			p, ok := s.vals["pattern"].(string)
			if !ok {
				return nil, syntaxErr("pattern", "pattern at %s must be a string", path)
			}
			src = p
		} else {
			f, _ := fv.(string)
			re, ok := formats()[f]
			if !ok {
				return nil, syntaxErr("format", "string format %q (at %s) is not supported", f, path)
			}
			src = re
		}
		n, err := parseRegex(src)
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				se.What = what
			}
			return nil, err
		}
		name := c.ruleName("str")
		c.b.Define(name, Seq(Lit(`"`), n.toExpr(jsonChars), Lit(`"`)))
		return c.b.Rule(name), nil
	}
	if minLen < 0 && maxLen < 0 {
		return c.stringRule(), nil
	}
	if maxLen >= 0 && minLen > maxLen {
		return nil, syntaxErr("minLength", "minLength %d exceeds maxLength %d at %s", minLen, maxLen, path)
	}
	name := c.ruleName("str")
	c.b.Define(name, Seq(Lit(`"`), Rep(jsonStringChar(), max(minLen, 0), maxLen), Lit(`"`)))
	return c.b.Rule(name), nil
}

// numeric compiles an integer or number schema. Bounds must be integers;
// a bounded number is generated without an exponent.
func numeric(s *object, integer bool, path string) (Expr, error) {
	b, err := readBounds(s, path)
	if err != nil {
		return nil, err
	}
	if !b.bounded {
		if integer {
			return integerExpr(), nil
		}
		return numberExpr(), nil
	}
	alts := []Expr{}
	if b.ilo == nil || b.ihi == nil || b.ilo.Cmp(b.ihi) <= 0 {
		if x := intRange(b.ilo, b.ihi); x != nil {
			alts = append(alts, x)
		}
	}
	if !integer {
		// A non-integer with integer part i lies strictly between i and
		// i+1 (its last fraction digit is not 0), so "i.f" is in range
		// when lo ≤ i ≤ hi-1 and "-i.f" when -hi ≤ i ≤ -lo-1, whether
		// the bounds are exclusive or not.
		frac := Seq(Lit("."), Rep(Bytes('0', '9'), 0, maxFracDigits-1), Bytes('1', '9'))
		if x := natRange(maxInt(b.lo, big.NewInt(0)), addInt(b.hi, -1)); x != nil && (b.hi == nil || b.hi.Sign() > 0) {
			alts = append(alts, Seq(x, frac))
		}
		if b.lo == nil || b.lo.Sign() < 0 {
			if x := natRange(maxInt(negInt(b.hi), big.NewInt(0)), addInt(negInt(b.lo), -1)); x != nil {
				alts = append(alts, Seq(Lit("-"), x, frac))
			}
		}
	}
	if len(alts) == 0 {
		return nil, syntaxErr("minimum", "no value satisfies the bounds at %s", path)
	}
	return altExpr(alts), nil
}

// numBounds are a numeric schema's bounds: lo and hi as written (the
// tighter of the inclusive and exclusive forms), ilo and ihi the
// inclusive bounds of the integers in range; nil is none.
type numBounds struct {
	lo, hi, ilo, ihi *big.Int
	bounded          bool
}

// readBounds reads minimum, maximum and the exclusive forms of both
// drafts (a number, or draft 4's flag on minimum and maximum).
func readBounds(s *object, path string) (numBounds, error) {
	var nb numBounds
	read := func(k string) (*big.Int, error) {
		v, ok := s.get(k)
		if !ok {
			return nil, nil
		}
		if _, isBool := v.(bool); isBool {
			return nil, nil // draft 4's exclusive flag
		}
		n, ok := v.(json.Number)
		if !ok {
			return nil, syntaxErr(k, "%s at %s must be a number", k, path)
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok || !r.IsInt() {
			return nil, syntaxErr(k, "%s %s at %s: only integer bounds are supported", k, n, path)
		}
		if new(big.Int).Abs(r.Num()).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxIntDigits), nil)) >= 0 {
			return nil, syntaxErr(k, "%s at %s is out of range (at most %d digits)", k, path, maxIntDigits)
		}
		return new(big.Int).Set(r.Num()), nil
	}
	flag := func(k string) bool { v, _ := s.get(k); return v == true }
	var vals [4]*big.Int
	for i, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, err := read(k)
		if err != nil {
			return nb, err
		}
		vals[i] = v
	}
	lower := func(v *big.Int, exclusive bool) {
		if v == nil {
			return
		}
		i := v
		if exclusive {
			i = addInt(v, 1)
		}
		if nb.ilo == nil || i.Cmp(nb.ilo) > 0 {
			nb.ilo = i
		}
		if nb.lo == nil || v.Cmp(nb.lo) > 0 {
			nb.lo = v
		}
	}
	upper := func(v *big.Int, exclusive bool) {
		if v == nil {
			return
		}
		i := v
		if exclusive {
			i = addInt(v, -1)
		}
		if nb.ihi == nil || i.Cmp(nb.ihi) < 0 {
			nb.ihi = i
		}
		if nb.hi == nil || v.Cmp(nb.hi) < 0 {
			nb.hi = v
		}
	}
	lower(vals[0], flag("exclusiveMinimum"))
	lower(vals[1], true)
	upper(vals[2], flag("exclusiveMaximum"))
	upper(vals[3], true)
	nb.bounded = nb.lo != nil || nb.hi != nil
	return nb, nil
}

func addInt(x *big.Int, d int64) *big.Int {
	if x == nil {
		return nil
	}
	return new(big.Int).Add(x, big.NewInt(d))
}

func negInt(x *big.Int) *big.Int {
	if x == nil {
		return nil
	}
	return new(big.Int).Neg(x)
}

// maxInt is the larger of two lower bounds, nil being no bound.
func maxInt(a, b *big.Int) *big.Int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Cmp(b) > 0:
		return a
	}
	return b
}

// intRange matches the integers in [lo, hi] (nil: unbounded, within the
// digit limit), written without leading zeros or "-0".
func intRange(lo, hi *big.Int) Expr {
	var alts []Expr
	zero := big.NewInt(0)
	if lo == nil || lo.Sign() < 0 {
		// Negative part: -n for n in [max(1, -hi), -lo].
		nlo := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			nlo = negInt(hi)
		}
		if x := natRange(nlo, negInt(lo)); x != nil {
			alts = append(alts, Seq(Lit("-"), x))
		}
	}
	if hi == nil || hi.Sign() >= 0 {
		if x := natRange(maxInt(lo, zero), hi); x != nil {
			alts = append(alts, x)
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return altExpr(alts)
}

// natRange matches the decimal natural numbers in [lo, hi] (hi nil: up to
// maxIntDigits digits), or is nil when there are none.
func natRange(lo, hi *big.Int) Expr {
	limit := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxIntDigits), nil), big.NewInt(1))
	if hi == nil || hi.Cmp(limit) > 0 {
		hi = limit
	}
	if lo == nil || lo.Sign() < 0 {
		lo = big.NewInt(0)
	}
	if lo.Cmp(hi) > 0 {
		return nil
	}
	var alts []Expr
	a, b := lo.String(), hi.String()
	// Split by digit count: [a, 9…9], [10…0, 9…9] per length, [10…0, b].
	for n := len(a); n <= len(b); n++ {
		from, to := "1"+strings.Repeat("0", n-1), strings.Repeat("9", n)
		if n == 1 {
			from = "0"
		}
		if n == len(a) {
			from = a
		}
		if n == len(b) {
			to = b
		}
		alts = append(alts, fixedRange(from, to))
	}
	return altExpr(alts)
}

// fixedRange matches the digit strings of len(x) between x and y.
func fixedRange(x, y string) Expr {
	if x == "" {
		return Empty()
	}
	digits := func(n int) Expr { return Rep(Bytes('0', '9'), n, n) }
	n := len(x) - 1
	if x[0] == y[0] {
		return Seq(Lit(x[:1]), fixedRange(x[1:], y[1:]))
	}
	if strings.Trim(x[1:], "0") == "" && strings.Trim(y[1:], "9") == "" {
		return Seq(Bytes(x[0], y[0]), digits(n))
	}
	alts := []Expr{Seq(Lit(x[:1]), fixedRange(x[1:], strings.Repeat("9", n)))}
	if x[0]+1 <= y[0]-1 {
		alts = append(alts, Seq(Bytes(x[0]+1, y[0]-1), digits(n)))
	}
	alts = append(alts, Seq(Lit(y[:1]), fixedRange(strings.Repeat("0", n), y[1:])))
	return altExpr(alts)
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
	var list []prop
	if po != nil {
		for _, k := range po.keys {
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
		pair := Seq(c.stringRule(), ws, Lit(":"), ws, val)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

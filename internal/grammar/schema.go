package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// JSON Schema (draft 2020-12, with the draft-4..7 spellings of the same
// ideas) compiles to a grammar of JSON texts that validate against it.
// Properties come in the schema's order, required ones always, optional
// ones possibly; only the listed properties are generated when there are
// any (additional ones are allowed, not needed); whitespace is at most
// one space, or a newline and up to 20 spaces or tabs, between tokens, as
// llama.cpp's grammars allow. Keywords whose meaning is not built are a
// SyntaxError naming them, never a looser grammar; annotations and
// keywords JSON Schema does not define are ignored, as validators ignore
// them.

// Keywords that only annotate, and keywords that are refused.
func annotationKeywords() []string {
	return []string{"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
		"readOnly", "writeOnly", "$defs", "definitions", "contentEncoding", "contentMediaType", "contentSchema", "$anchor"}
}

func refusedKeywords() []string {
	return []string{"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies",
		"patternProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
		"minProperties", "maxProperties", "multipleOf", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"}
}

// validationKeywords are the keywords a schema is built from here.
func validationKeywords() []string {
	return []string{"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required", "propertyNames",
		"additionalProperties", "unevaluatedProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
		"uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
}

// Limits of integers and numbers without bounds: they still fit the
// clients' int64 and float64.
const (
	maxIntDigits  = 18
	maxFracDigits = 15
)

type schemaCompiler struct {
	b      *Builder
	root   any
	rules  map[string]string // JSON pointer of a schema → its rule
	next   int
	ws     Expr
	hasAny bool
}

// JSONSchema compiles a schema (the JSON text of one).
func JSONSchema(schema []byte) (*Grammar, error) {
	root, err := parseOrdered(schema)
	if err != nil {
		return nil, syntaxErr("schema", "the JSON schema is not valid JSON: %v", err)
	}
	c := &schemaCompiler{b: NewBuilder(), root: root, rules: map[string]string{}, ws: whitespace()}
	x, err := c.value(root, "#")
	if err != nil {
		return nil, err
	}
	c.b.Define("root", x)
	return jsonGrammar(build(c.b, "schema"))
}

// jsonGrammar marks a built grammar's output as JSON.
func jsonGrammar(g *Grammar, err error) (*Grammar, error) {
	if g != nil {
		g.json = true
	}
	return g, err
}

// jsonSchemaThen is JSONSchema's value between optional whitespace, then
// suffix.
func jsonSchemaThen(schema []byte, suffix string) (*Grammar, error) {
	root, err := parseOrdered(schema)
	if err != nil {
		return nil, syntaxErr("schema", "the JSON schema is not valid JSON: %v", err)
	}
	c := &schemaCompiler{b: NewBuilder(), root: root, rules: map[string]string{}, ws: whitespace()}
	x, err := c.value(root, "#")
	if err != nil {
		return nil, err
	}
	c.b.Define("root", Seq(c.ws, x, c.ws, Lit(suffix)))
	return jsonGrammar(build(c.b, "schema"))
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject() *Grammar {
	c := &schemaCompiler{b: NewBuilder(), rules: map[string]string{}, ws: whitespace()}
	c.defineAny()
	c.b.Define("root", c.b.Rule("json_object"))
	g, err := c.b.Build("root")
	if err != nil {
		panic("BUG: grammar: the JSON object grammar does not build: " + err.Error())
	}
	g.json = true
	return g
}

// whitespace is what may separate tokens: nothing, one space, or a
// newline and up to 20 spaces or tabs (pretty-printing), bounded so that a
// sequence cannot spend its tokens on it.
func whitespace() Expr {
	return Opt(Alt(Lit(" "), Seq(Lit("\n"), Rep(classExpr{{'\t', '\t'}, {' ', ' '}}, 0, 20))))
}

func (c *schemaCompiler) ruleName(prefix string) string {
	c.next++
	return fmt.Sprintf("%s%d", prefix, c.next)
}

// defineAny defines the rules of any JSON value.
func (c *schemaCompiler) defineAny() {
	if c.hasAny {
		return
	}
	c.hasAny = true
	b, ws := c.b, c.ws
	value := b.Rule("json_value")
	str := c.stringRule()
	kv := Seq(str, ws, Lit(":"), ws, value)
	b.Define("json_object", Seq(Lit("{"), ws, Opt(Seq(kv, Star(Seq(ws, Lit(","), ws, kv)))), ws, Lit("}")))
	b.Define("json_array", Seq(Lit("["), ws, Opt(Seq(value, Star(Seq(ws, Lit(","), ws, value)))), ws, Lit("]")))
	b.Define("json_value", Alt(b.Rule("json_object"), b.Rule("json_array"), str, numberExpr(),
		Lit("true"), Lit("false"), Lit("null")))
}

// stringRule is the shared rule of any JSON string.
func (c *schemaCompiler) stringRule() Expr {
	if !c.b.Defined("json_string") {
		c.b.Define("json_string", Seq(Lit(`"`), Star(jsonStringChar()), Lit(`"`)))
	}
	return c.b.Rule("json_string")
}

func (c *schemaCompiler) anyValue() Expr {
	c.defineAny()
	return c.b.Rule("json_value")
}

func numberExpr() Expr {
	digits := Bytes('0', '9')
	intPart := Seq(Opt(Lit("-")), Alt(Lit("0"), Seq(Bytes('1', '9'), Rep(digits, 0, maxIntDigits-1))))
	frac := Seq(Lit("."), Rep(digits, 1, maxFracDigits))
	exp := Seq(classExpr{{'E', 'E'}, {'e', 'e'}}, Opt(classExpr{{'+', '+'}, {'-', '-'}}), Rep(digits, 1, 2))
	return Seq(intPart, Opt(frac), Opt(exp))
}

func integerExpr() Expr {
	return Alt(Lit("0"), Seq(Opt(Lit("-")), Bytes('1', '9'), Rep(Bytes('0', '9'), 0, maxIntDigits-1)))
}

// value compiles the schema s found at path.
func (c *schemaCompiler) value(s any, path string) (Expr, error) {
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, syntaxErr("false", "the schema at %s is false: no value can satisfy it", path)
		}
		return c.anyValue(), nil
	case *object:
		return c.object(s, path)
	}
	return nil, syntaxErr("schema", "the schema at %s must be an object or a boolean", path)
}

func (c *schemaCompiler) object(s *object, path string) (Expr, error) {
	refused, annotations, known := refusedKeywords(), annotationKeywords(), validationKeywords()
	var used []string // validation keywords present
	for _, k := range s.keys {
		switch {
		case slices.Contains(refused, k):
			return nil, syntaxErr(k, "JSON Schema keyword %q (at %s) is not supported", k, path)
		case slices.Contains(known, k):
			used = append(used, k)
		case slices.Contains(annotations, k):
		}
	}
	if len(used) == 0 {
		return c.anyValue(), nil
	}
	others := func(except ...string) []string {
		var out []string
		for _, k := range used {
			if !slices.Contains(except, k) {
				out = append(out, k)
			}
		}
		return out
	}
	if ref, ok := s.get("$ref"); ok {
		if o := others("$ref"); len(o) > 0 {
			return nil, syntaxErr("$ref", "$ref beside %q (at %s) is not supported", o[0], path)
		}
		target, ok := ref.(string)
		if !ok {
			return nil, syntaxErr("$ref", "$ref at %s must be a string", path)
		}
		return c.ref(target)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if v, ok := s.get(k); ok {
			if o := others(k); len(o) > 0 {
				return nil, syntaxErr(k, "%s beside %q (at %s) is not supported", k, o[0], path)
			}
			return c.combine(k, v, path)
		}
	}
	if v, ok := s.get("uniqueItems"); ok && v == true {
		return nil, syntaxErr("uniqueItems", "JSON Schema keyword \"uniqueItems\" (at %s) is not supported", path)
	}
	if v, ok := s.get("unevaluatedProperties"); ok && v != false {
		return nil, syntaxErr("unevaluatedProperties", "unevaluatedProperties other than false (at %s) is not supported", path)
	}
	types, err := schemaTypes(s, path)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"enum", "const"} {
		if v, ok := s.get(k); ok {
			if o := others(k, "type"); len(o) > 0 {
				return nil, syntaxErr(k, "%s beside %q (at %s) is not supported", k, o[0], path)
			}
			values := []any{v}
			if k == "enum" {
				list, ok := v.([]any)
				if !ok {
					return nil, syntaxErr("enum", "enum at %s must be an array", path)
				}
				values = list
			}
			return literals(k, values, types, path)
		}
	}
	var alts []Expr
	for _, t := range types {
		x, err := c.typed(s, t, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, x)
	}
	return Alt(alts...), nil
}

// schemaTypes are the types the schema allows: its "type", or the one its
// keywords imply (a schema without type that lists properties is
// generated as an object, a valid reading of it), or every type.
func schemaTypes(s *object, path string) ([]string, error) {
	all := []string{"object", "array", "string", "number", "integer", "boolean", "null"}
	t, ok := s.get("type")
	if !ok {
		for _, k := range s.keys {
			switch k {
			case "properties", "required", "additionalProperties", "propertyNames":
				return []string{"object"}, nil
			case "items", "prefixItems", "minItems", "maxItems":
				return []string{"array"}, nil
			case "minLength", "maxLength", "pattern", "format":
				return []string{"string"}, nil
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
				return []string{"number"}, nil
			}
		}
		return []string{"object", "array", "string", "number", "boolean", "null"}, nil
	}
	var list []string
	switch t := t.(type) {
	case string:
		list = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return nil, syntaxErr("type", "type at %s must name types", path)
			}
			list = append(list, name)
		}
	default:
		return nil, syntaxErr("type", "type at %s must be a string or an array", path)
	}
	for _, name := range list {
		if !slices.Contains(all, name) {
			return nil, syntaxErr("type", "unknown type %q at %s", name, path)
		}
	}
	if slices.Contains(list, "number") {
		list = slices.DeleteFunc(list, func(n string) bool { return n == "integer" }) // integers are numbers
	}
	if len(list) == 0 {
		return nil, syntaxErr("type", "the type list at %s is empty", path)
	}
	return list, nil
}

// literals matches exactly one of values (enum, const), of the allowed
// types.
func literals(keyword string, values []any, types []string, path string) (Expr, error) {
	var alts []Expr
	for _, v := range values {
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			continue
		}
		var b strings.Builder
		encodeJSON(&b, v)
		alts = append(alts, Lit(b.String()))
	}
	if len(alts) == 0 {
		return nil, syntaxErr(keyword, "no value of %s at %s has an allowed type", keyword, path)
	}
	return altExpr(alts), nil
}

// jsonType names v's type; an integral number is an "integer".
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case *object:
		return "object"
	case json.Number:
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(v.String(), ".eE") {
			return "integer"
		}
		return "number"
	}
	return ""
}

// combine compiles anyOf, oneOf (when its branches cannot both match a
// value) and a one-schema allOf.
func (c *schemaCompiler) combine(keyword string, v any, path string) (Expr, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, syntaxErr(keyword, "%s at %s must be a non-empty array", keyword, path)
	}
	if keyword == "allOf" {
		if len(list) > 1 {
			return nil, syntaxErr("allOf", "allOf of more than one schema (at %s) is not supported", path)
		}
		return c.value(list[0], path+"/allOf/0")
	}
	if keyword == "oneOf" {
		if err := c.disjoint(list, path); err != nil {
			return nil, err
		}
	}
	var alts []Expr
	for i, sub := range list {
		x, err := c.value(sub, fmt.Sprintf("%s/%s/%d", path, keyword, i))
		if err != nil {
			return nil, err
		}
		alts = append(alts, x)
	}
	return altExpr(alts), nil
}

// disjoint checks that no value can match two of oneOf's branches, so
// that a value matching one matches exactly one: the branches allow no
// type in common, or the object branches that share one are told apart
// by a discriminator (z.discriminatedUnion, pydantic's discriminated
// unions): a property every one of them requires, whose const or enum
// values no two of them share. A branch may be a $ref to its schema.
func (c *schemaCompiler) disjoint(list []any, path string) error {
	byType := map[string][]*object{}
	for _, sub := range list {
		o, ok := c.deref(sub)
		if !ok {
			return syntaxErr("oneOf", "oneOf at %s with a boolean branch is not supported", path)
		}
		types, err := schemaTypes(o, path)
		if err != nil {
			return err
		}
		if _, typed := o.get("type"); !typed {
			return syntaxErr("oneOf", "oneOf at %s needs a type on every branch: branches that may match the same value are not supported", path)
		}
		if slices.Contains(types, "number") {
			types = append(types, "integer")
		}
		for _, t := range types {
			byType[t] = append(byType[t], o)
		}
	}
	for _, t := range []string{"object", "array", "string", "number", "integer", "boolean", "null"} {
		group := byType[t]
		if len(group) < 2 || t == "object" && discriminated(group) {
			continue
		}
		return syntaxErr("oneOf", "oneOf at %s has branches of the same type (%s) and no discriminator (a property each requires with const or enum values no two share): branches that may match the same value are not supported", path, t)
	}
	return nil
}

// deref follows a schema that is only a local $ref to the schema it names.
func (c *schemaCompiler) deref(s any) (*object, bool) {
	for range 16 {
		o, ok := s.(*object)
		if !ok {
			return nil, false
		}
		ref, isRef := o.get("$ref")
		target, isString := ref.(string)
		if !isRef || !isString || !strings.HasPrefix(target, "#") {
			return o, true
		}
		next, err := resolvePointer(c.root, strings.TrimPrefix(target, "#"))
		if err != nil {
			return o, true // compiling it reports the error
		}
		s = next
	}
	return nil, false
}

// discriminated reports whether some property is required by every
// object schema of group with const or enum values no two schemas share.
func discriminated(group []*object) bool {
	props, _ := group[0].get("properties")
	first, _ := props.(*object)
	if first == nil {
		return false
	}
	for _, key := range first.keys {
		seen := map[string]bool{}
		ok := true
		for _, o := range group {
			vals, found := literalValues(o, key)
			if !found {
				ok = false
				break
			}
			for _, v := range vals {
				if seen[v] {
					ok = false
				}
				seen[v] = true
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// literalValues are the encoded values an object schema's required
// property key may take, when its schema is a const or an enum.
func literalValues(o *object, key string) ([]string, bool) {
	req, _ := o.get("required")
	list, _ := req.([]any)
	if !slices.Contains(list, any(key)) {
		return nil, false
	}
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if po == nil {
		return nil, false
	}
	ps, _ := po.get(key)
	p, _ := ps.(*object)
	if p == nil {
		return nil, false
	}
	var vals []any
	if v, ok := p.get("const"); ok {
		vals = []any{v}
	} else if v, ok := p.get("enum"); ok {
		vals, _ = v.([]any)
	}
	if len(vals) == 0 {
		return nil, false
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		var b strings.Builder
		encodeJSON(&b, v)
		out[i] = b.String()
	}
	return out, true
}

// ref compiles a local reference ("#", "#/$defs/x", any JSON pointer into
// the document) as a rule, so that recursive schemas are recursive rules.
func (c *schemaCompiler) ref(target string) (Expr, error) {
	if name, ok := c.rules[target]; ok {
		return c.b.Rule(name), nil
	}
	if !strings.HasPrefix(target, "#") {
		return nil, syntaxErr("$ref", "$ref %q: only references within the schema (#...) are supported", target)
	}
	s, err := resolvePointer(c.root, strings.TrimPrefix(target, "#"))
	if err != nil {
		return nil, syntaxErr("$ref", "$ref %q: %v", target, err)
	}
	name := c.ruleName("ref")
	c.rules[target] = name
	ref := c.b.Rule(name)
	x, err := c.value(s, target)
	if err != nil {
		return nil, err
	}
	c.b.Define(name, x)
	return ref, nil
}

func resolvePointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", ptr)
	}
	cur := doc
	for _, part := range strings.Split(ptr[1:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case *object:
			next, ok := v.get(part)
			if !ok {
				return nil, fmt.Errorf("no %q in the schema", part)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("no element %q", part)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("cannot descend into %q", part)
		}
	}
	return cur, nil
}

// typed compiles s for one of its types.
func (c *schemaCompiler) typed(s *object, t, path string) (Expr, error) {
	switch t {
	case "null":
		return Lit("null"), nil
	case "boolean":
		return Alt(Lit("true"), Lit("false")), nil
	case "string":
		return c.str(s, path)
	case "integer", "number":
		return numeric(s, t == "integer", path)
	case "array":
		return c.array(s, path)
	case "object":
		return c.obj(s, path)
	}
	return nil, syntaxErr("type", "unknown type %q at %s", t, path)
}

// count reads a non-negative integer keyword; -1 when absent.
func count(s *object, k, path string) (int, error) {
	v, ok := s.get(k)
	if !ok {
		return -1, nil
	}
	n, isNum := v.(json.Number)
	i, err := strconv.Atoi(string(n))
	if !isNum || err != nil || i < 0 {
		return 0, syntaxErr(k, "%s at %s must be a non-negative integer", k, path)
	}
	if i > maxRepeat {
		return 0, syntaxErr(k, "%s at %s is %d: at most %d is supported", k, path, i, maxRepeat)
	}
	return i, nil
}

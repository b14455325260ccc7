package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CheckSchema reports whether schema is a JSON Schema at all, whatever
// glassbox builds of it: every keyword the drafts define (4 to 2020-12)
// holds a value of the kind its meta-schema allows ("type" names types,
// "properties" maps names to schemas, "required" lists names, "minItems"
// is a count, …) and every local $ref points into the document. Keywords
// JSON Schema does not define are ignored, as validators ignore them. It
// is the check a schema gets when it is not compiled (tool_choice auto's
// or none's tools): a schema JSONSchema refuses only for what it does not
// build passes here, a malformed one does not. The error is a SyntaxError
// naming the keyword and where it is.
func CheckSchema(schema []byte) error {
	root, err := parseOrdered(schema)
	if err != nil {
		return syntaxErr("schema", "the JSON schema is not valid JSON: %v", err)
	}
	c := schemaChecker{root: root}
	return c.schema(root, "#")
}

type schemaChecker struct{ root any }

// keywordKind is what the meta-schema allows a keyword's value to be.
type keywordKind uint8

const (
	kindSchema      keywordKind = iota + 1 // a schema (an object or a boolean)
	kindSchemaMap                          // an object of schemas
	kindSchemaList                         // a non-empty array of schemas
	kindSchemaItems                        // a schema, or an array of schemas (draft 4 to 7's items)
	kindCount                              // a non-negative integer
	kindNumber
	kindPositive     // a number above 0
	kindNumberOrBool // draft 4's exclusiveMinimum is a boolean
	kindString
	kindBool
	kindArray
	kindNames        // an array of strings
	kindNamesMap     // an object of arrays of strings
	kindDependencies // draft 7's dependencies: an object of schemas or arrays of strings
	kindType
	kindRef
)

// schemaKeywords maps every keyword the drafts define to what its value
// must be.
func schemaKeywords() map[string]keywordKind {
	return map[string]keywordKind{
		"type": kindType, "enum": kindArray, "$ref": kindRef, "$dynamicRef": kindString, "$recursiveRef": kindString,
		"properties": kindSchemaMap, "patternProperties": kindSchemaMap, "$defs": kindSchemaMap, "definitions": kindSchemaMap,
		"dependentSchemas": kindSchemaMap, "dependentRequired": kindNamesMap, "dependencies": kindDependencies,
		"additionalProperties": kindSchema, "unevaluatedProperties": kindSchema, "propertyNames": kindSchema,
		"additionalItems": kindSchema, "unevaluatedItems": kindSchema, "contains": kindSchema, "not": kindSchema,
		"if": kindSchema, "then": kindSchema, "else": kindSchema, "contentSchema": kindSchema,
		"items": kindSchemaItems, "prefixItems": kindSchemaList, "allOf": kindSchemaList, "anyOf": kindSchemaList, "oneOf": kindSchemaList,
		"required": kindNames, "minItems": kindCount, "maxItems": kindCount, "minLength": kindCount, "maxLength": kindCount,
		"minProperties": kindCount, "maxProperties": kindCount, "minContains": kindCount, "maxContains": kindCount,
		"minimum": kindNumber, "maximum": kindNumber, "exclusiveMinimum": kindNumberOrBool, "exclusiveMaximum": kindNumberOrBool,
		"multipleOf": kindPositive, "uniqueItems": kindBool, "readOnly": kindBool, "writeOnly": kindBool, "deprecated": kindBool,
		"$recursiveAnchor": kindBool, "pattern": kindString, "format": kindString, "$id": kindString, "$schema": kindString,
		"$anchor": kindString, "$dynamicAnchor": kindString, "$comment": kindString, "title": kindString, "description": kindString,
		"contentEncoding": kindString, "contentMediaType": kindString, "examples": kindArray,
	}
}

// schema checks one schema: a boolean, or an object whose keywords hold
// what they must.
func (c *schemaChecker) schema(s any, path string) error {
	if _, ok := s.(bool); ok {
		return nil
	}
	o, ok := s.(*object)
	if !ok {
		return syntaxErr("schema", "the schema at %s must be an object or a boolean, got %s", path, jsonType(s))
	}
	kinds := schemaKeywords()
	for _, k := range o.keys {
		kind, known := kinds[k]
		if !known {
			continue
		}
		if err := c.keyword(k, kind, o.vals[k], path); err != nil {
			return err
		}
	}
	return nil
}

// keyword checks one keyword's value.
func (c *schemaChecker) keyword(k string, kind keywordKind, v any, path string) error {
	at := path + "/" + k
	bad := func(want string) error {
		return syntaxErr(k, "%s at %s must be %s, got %s", k, path, want, jsonType(v))
	}
	switch kind {
	case kindSchema:
		return c.schema(v, at)
	case kindSchemaMap:
		m, ok := v.(*object)
		if !ok {
			return bad("an object of schemas")
		}
		for _, name := range m.keys {
			if err := c.schema(m.vals[name], at+"/"+escapePointer(name)); err != nil {
				return err
			}
		}
	case kindSchemaList, kindSchemaItems:
		list, ok := v.([]any)
		if !ok && kind == kindSchemaItems {
			return c.schema(v, at)
		}
		if !ok || (kind == kindSchemaList && len(list) == 0) {
			return bad("a non-empty array of schemas")
		}
		for i, x := range list {
			if err := c.schema(x, at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case kindCount:
		f, ok := number(v)
		if !ok || f < 0 || (!math.IsInf(f, 1) && f != math.Trunc(f)) {
			return bad("a non-negative integer")
		}
	case kindNumber, kindPositive, kindNumberOrBool:
		if _, isBool := v.(bool); isBool && kind == kindNumberOrBool {
			return nil
		}
		f, ok := number(v)
		if !ok {
			return bad("a number")
		}
		if kind == kindPositive && f <= 0 {
			return syntaxErr(k, "%s at %s must be above 0, got %v", k, path, v)
		}
	case kindString:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
	case kindBool:
		if _, ok := v.(bool); !ok {
			return bad("a boolean")
		}
	case kindArray:
		if _, ok := v.([]any); !ok {
			return bad("an array")
		}
	case kindNames:
		if !isNames(v) {
			return bad("an array of property names")
		}
	case kindNamesMap:
		m, ok := v.(*object)
		if !ok {
			return bad("an object of arrays of property names")
		}
		for _, name := range m.keys {
			if !isNames(m.vals[name]) {
				return syntaxErr(k, "%s/%s at %s must be an array of property names", k, name, path)
			}
		}
	case kindDependencies:
		m, ok := v.(*object)
		if !ok {
			return bad("an object")
		}
		for _, name := range m.keys {
			if isNames(m.vals[name]) {
				continue
			}
			if err := c.schema(m.vals[name], at+"/"+escapePointer(name)); err != nil {
				return err
			}
		}
	case kindType:
		return checkType(v, path)
	case kindRef:
		return c.ref(v, path)
	}
	return nil
}

// checkType checks "type": one type name, or a non-empty array of
// distinct ones.
func checkType(v any, path string) error {
	all := []string{"object", "array", "string", "number", "integer", "boolean", "null"}
	var names []any
	switch t := v.(type) {
	case string:
		names = []any{t}
	case []any:
		if len(t) == 0 {
			return syntaxErr("type", "type at %s must not be an empty array", path)
		}
		names = t
	default:
		return syntaxErr("type", "type at %s must be a type name or an array of them, got %s", path, jsonType(v))
	}
	seen := map[string]bool{}
	for _, x := range names {
		name, ok := x.(string)
		if !ok || !slices.Contains(all, name) {
			return syntaxErr("type", "type at %s: %s is not a JSON Schema type (%s)", path, describe(x), strings.Join(all, ", "))
		}
		if seen[name] {
			return syntaxErr("type", "type at %s lists %q twice", path, name)
		}
		seen[name] = true
	}
	return nil
}

// ref checks $ref: a string, and when it points into the document (#…),
// a pointer that resolves there.
func (c *schemaChecker) ref(v any, path string) error {
	target, ok := v.(string)
	if !ok {
		return syntaxErr("$ref", "$ref at %s must be a string, got %s", path, jsonType(v))
	}
	if target != "#" && !strings.HasPrefix(target, "#/") {
		return nil // another document, or an anchor: not resolved here
	}
	if _, err := resolvePointer(c.root, strings.TrimPrefix(target, "#")); err != nil {
		return syntaxErr("$ref", "$ref %q at %s points nowhere: %v", target, path, err)
	}
	return nil
}

// number is a JSON number's value; one too large for a float64 is
// still a number (±Inf here).
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

// isNames reports an array of strings.
func isNames(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range list {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// describe is a value as an error message quotes it.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("a %s", jsonType(v))
}

// escapePointer escapes a name as one JSON pointer token.
func escapePointer(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

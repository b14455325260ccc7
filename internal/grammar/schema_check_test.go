package grammar

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCheckSchema: what is a JSON Schema passes, built here or not; a
// malformed one is refused naming its keyword and where it is.
func TestCheckSchema(t *testing.T) {
	for _, s := range []string{
		`{}`, `true`, `false`, `{"type":"object","properties":{"city":{"type":"string","maxLength":20}},"required":["city"]}`,
		`{"type":["string","null"]}`, `{"not":{"type":"string"}}`, // not is not built, but it is a schema
		`{"type":"object","patternProperties":{"^x":{"type":"integer"}},"minProperties":1}`,
		`{"type":"number","multipleOf":0.5,"exclusiveMinimum":true,"minimum":0}`, // draft 4's boolean exclusiveMinimum
		`{"items":[{"type":"string"}],"additionalItems":false}`, `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`,
		`{"$ref":"https://example.com/schema.json"}`, `{"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
		`{"x-vendor":{"anything":[1,2]},"type":"string"}`, // keywords JSON Schema does not define are ignored
		`{"minItems":2.0}`, // an integral number is an integer
	} {
		if err := CheckSchema([]byte(s)); err != nil {
			t.Errorf("%s: %v, want it accepted", s, err)
		}
	}
	for _, c := range []struct{ schema, keyword, says string }{
		{`{"type":"objekt"}`, "type", `"objekt" is not a JSON Schema type`},
		{`{"type":"object","properties":{"city":{"type":"strng"}}}`, "type", "#/properties/city"},
		{`{"type":[]}`, "type", "empty"},
		{`{"type":["string","string"]}`, "type", "twice"},
		{`{"type":7}`, "type", "got integer"},
		{`{"properties":[]}`, "properties", "an object of schemas"},
		{`{"properties":{"a":5}}`, "schema", "#/properties/a"},
		{`{"required":"city"}`, "required", "property names"},
		{`{"minItems":-1}`, "minItems", "non-negative integer"},
		{`{"maxLength":1.5}`, "maxLength", "non-negative integer"},
		{`{"minimum":"3"}`, "minimum", "a number"},
		{`{"multipleOf":0}`, "multipleOf", "above 0"},
		{`{"anyOf":[]}`, "anyOf", "non-empty array"},
		{`{"items":{"type":"nmber"}}`, "type", "#/items"},
		{`{"$ref":"#/$defs/missing"}`, "$ref", "points nowhere"},
		{`{"$ref":5}`, "$ref", "must be a string"},
		{`{"uniqueItems":"yes"}`, "uniqueItems", "a boolean"},
		{`{"enum":"a"}`, "enum", "an array"},
		{`[1]`, "schema", "object or a boolean"},
		{`{"type":"object"`, "schema", "not valid JSON"},
	} {
		err := CheckSchema([]byte(c.schema))
		var se *SyntaxError
		if !errors.As(err, &se) || se.What != c.keyword || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want a SyntaxError on %s saying %q", c.schema, err, c.keyword, c.says)
		}
	}
}

// FuzzCheckSchema: no document panics the check, its refusals name a
// keyword, and what the compiler builds is a schema (but for annotations,
// which the compiler reads not at all).
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{benchSchema, `{"type":"objekt"}`, `{"$ref":"#/a/0"}`, `{"a":[{"$ref":"#"}],"anyOf":[{"$ref":"#/a/0"}]}`,
		`{"dependencies":{"a":["b"]}}`, `{"type":["null","integer"],"minimum":1e400}`, `true`} {
		f.Add([]byte(s))
	}
	kinds := schemaKeywords()
	f.Fuzz(func(t *testing.T, schema []byte) {
		err := CheckSchema(schema)
		if err == nil {
			return
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v is not a SyntaxError", schema, err)
		}
		if _, known := kinds[se.What]; !known && se.What != "schema" {
			t.Fatalf("%s: the refusal names %q, not a keyword", schema, se.What)
		}
		if _, cerr := JSONSchema(schema); cerr == nil && !slices.Contains(annotationKeywords(), se.What) {
			t.Fatalf("%s compiles, but the check says: %v", schema, err)
		}
	})
}

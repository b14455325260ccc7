package grammar

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzJSONSchema: no schema panics the compiler, and what compiles yields
// JSON outputs.
func FuzzJSONSchema(f *testing.F) {
	for _, s := range []string{benchSchema, `{"type":"string","pattern":"[a-c]+"}`, `{"anyOf":[{"type":"null"},{"$ref":"#"}]}`,
		`{"type":"number","minimum":-3,"exclusiveMaximum":7}`, `{"type":"array","prefixItems":[{"const":1}],"items":false}`, `true`, `{}`,
		`{"type":"string","format":"uuid","pattern":"^[0-9a-f-]{36}$","maxLength":40}`, `{"type":"number","minimum":0.5,"exclusiveMaximum":2.25}`,
		`{"type":"object","propertyNames":{"enum":["a"]},"additionalProperties":{"type":"integer"}}`,
		`{"oneOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},{"type":"object","properties":{"k":{"const":2}},"required":["k"]}]}`} {
		f.Add([]byte(s))
	}
	v := jsonAlphabetVocab(rand.New(rand.NewPCG(1, 1)))
	f.Fuzz(func(t *testing.T, schema []byte) {
		g, err := JSONSchema(schema)
		if err != nil {
			return
		}
		out, done, err := generate(Compile(g, v), rand.New(rand.NewPCG(2, 2)), 300, 0.9)
		if err != nil {
			t.Fatalf("schema %s: %v", schema, err)
		}
		if done && !json.Valid(out) {
			t.Fatalf("schema %s: output %q is not JSON", schema, out)
		}
	})
}

// FuzzRegex: no expression panics the parser, and outputs match it whole
// whenever Go's regexp reads it.
func FuzzRegex(f *testing.F) {
	for _, s := range []string{`[a-z]{2,5}`, `(foo|bar)+`, `\d+\.\d*`, `[^"]{0,3}`, `a|`, `()`, `^(?!^[-+.]*$)[+-]?\d*\.?\d*$`, `(?=.*a)(?!b)[ab]{1,3}`} {
		f.Add(s)
	}
	v := jsonAlphabetVocab(rand.New(rand.NewPCG(1, 1)))
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Regex(src)
		if err != nil {
			return
		}
		std, err := regexp.Compile(`^(?:` + strings.TrimSuffix(strings.TrimPrefix(src, "^"), "$") + `)$`)
		out, done, gerr := generate(Compile(g, v), rand.New(rand.NewPCG(3, 3)), 100, 0.5)
		if gerr != nil {
			t.Fatalf("%q: %v", src, gerr)
		}
		if err == nil && done && !std.Match(out) {
			t.Fatalf("%q: output %q does not match", src, out)
		}
		// Lookaheads, which RE2 lacks: ECMAScript's reading.
		if ecma, eerr := ecmaRegexp(`^(?:` + strings.TrimSuffix(strings.TrimPrefix(src, "^"), "$") + `)$`); err != nil && eerr == nil && done && utf8.Valid(out) && !ecma.MatchString(string(out)) {
			t.Fatalf("%q: output %q does not match in ECMAScript", src, out)
		}
	})
}

// FuzzGBNF: no grammar panics the parser.
func FuzzGBNF(f *testing.F) {
	for _, s := range []string{`root ::= "a" b*` + "\nb ::= [0-9]", `root ::= ("x" | "y"){1,3} .`, `root ::= [^\]]+`} {
		f.Add(s)
	}
	v := jsonAlphabetVocab(rand.New(rand.NewPCG(1, 1)))
	f.Fuzz(func(t *testing.T, src string) {
		g, err := GBNF(src)
		if err != nil {
			return
		}
		if _, _, err := generate(Compile(g, v), rand.New(rand.NewPCG(4, 4)), 100, 0.5); err != nil && !bytes.Contains([]byte(err.Error()), []byte("nothing allowed")) {
			t.Fatalf("%q: %v", src, err)
		}
	})
}

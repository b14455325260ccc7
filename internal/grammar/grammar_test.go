package grammar

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// accepts reports whether the grammar's matcher takes s whole and may end.
func accepts(c *Compiled, s string) bool {
	mt := c.NewMatcher()
	return (s == "" || mt.AcceptBytes([]byte(s))) && mt.CanEnd()
}

func compileOn(t testing.TB, g *Grammar, err error) *Compiled {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return Compile(g, jsonAlphabetVocab(rand.New(rand.NewPCG(5, 6))))
}

// TestRegexOutputsFullMatch: outputs sampled under a regex match it whole
// by Go's regexp (an independent engine), and strings it rejects are
// refused.
func TestRegexOutputsFullMatch(t *testing.T) {
	res := []string{`[a-z]{2,5}`, `(foo|bar)+baz`, `\d{3}-\d{4}`, `^a.c$`, `[^a]{1,3}x`, `(?:ab|cd)*e?`, `\w+@\w+\.(com|org)`,
		`x\s?y`, `[é-ü]{2}`, `(?P<year>\d{4})`, `a{2}b{1,}c*?`, `[\-+]?\d+(\.\d+)?`, `[\]\[]{2}`}
	r := rand.New(rand.NewPCG(8, 9))
	for _, src := range res {
		g, err := Regex(src)
		c := compileOn(t, g, err)
		std := regexp.MustCompile(`^(?:` + strings.TrimSuffix(strings.TrimPrefix(src, "^"), "$") + `)$`)
		for range 20 {
			out, done, err := generate(c, r, 200, 0.5)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if done && !std.Match(out) {
				t.Errorf("%s: output %q does not match", src, out)
			}
		}
		for _, bad := range []string{"", "zzzzzzzzzzzz", "foo", "12-34"} {
			if std.MatchString(bad) != accepts(c, bad) {
				t.Errorf("%s: %q accepted=%v, regexp says %v", src, bad, accepts(c, bad), std.MatchString(bad))
			}
		}
	}
}

func TestRegexRefusesWhatItCannotBuild(t *testing.T) {
	for src, what := range map[string]string{
		`(?<=a)b`: "lookaround", `(?=a)b`: "regex", `a(?!b)`: "lookaround", `(a)\1`: "backreference", `\bword`: "word boundary",
		`(?i)abc`: "inline flags", `\p{L}+`: "unicode property", `a^b`: "anchor", `a++`: "possessive quantifier",
		`a{5000}`: "repetition", `(ab`: "regex", `[[:alpha:]]`: "POSIX class",
	} {
		_, err := Regex(src)
		var se *SyntaxError
		if !errors.As(err, &se) || se.What != what {
			t.Errorf("%s: got %v, want a SyntaxError about %s", src, err, what)
		}
	}
}

func TestChoice(t *testing.T) {
	g, err := Choice([]string{"yes", "no", "maybe so"})
	c := compileOn(t, g, err)
	for s, want := range map[string]bool{"yes": true, "no": true, "maybe so": true, "maybe": false, "yess": false, "": false} {
		if got := accepts(c, s); got != want {
			t.Errorf("%q: accepted %v, want %v", s, got, want)
		}
	}
	if _, err := Choice(nil); err == nil {
		t.Error("an empty choice list compiled")
	}
}

func TestGBNF(t *testing.T) {
	src := `
# arithmetic, right-recursive
root   ::= expr
expr   ::= term ([-+] term)*
term   ::= factor ([*/] factor)*
factor ::= number | "(" expr ")"
number ::= [0-9]+ ("." [0-9]+)?
`
	g, err := GBNF(src)
	c := compileOn(t, g, err)
	for s, want := range map[string]bool{"1+2*3": true, "(1.5-2)/4": true, "((7))": true, "1+": false, "(1": false, "a": false} {
		if got := accepts(c, s); got != want {
			t.Errorf("%q: accepted %v, want %v", s, got, want)
		}
	}
	lit, err := GBNF(`root ::= "say \"hi\"\n" [^a-z\x00]{1,2} .`)
	c = compileOn(t, lit, err)
	if !accepts(c, "say \"hi\"\nAü!") || accepts(c, "say \"hi\"\nab!") {
		t.Error("escapes, negated classes or . read wrongly")
	}
	for src, what := range map[string]string{
		"root ::= root \"a\" | \"b\"":    "left recursion",
		"start: \"a\"":                   "Lark",
		"expr ::= \"a\"":                 "no rule named root",
		"root ::= x":                     "not defined",
		"root ::= \"a\"\nroot ::= \"b\"": "twice",
	} {
		if _, err := GBNF(src); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%q: got %v, want an error about %s", src, err, what)
		}
	}
}

// TestSchemaRefusesKeywordsByName: a schema feature that is not built is
// an error naming the keyword, never a looser grammar.
func TestSchemaRefusesKeywordsByName(t *testing.T) {
	cases := map[string]string{
		`{"type":"integer","multipleOf":3}`:                            "multipleOf",
		`{"not":{"type":"string"}}`:                                    "not",
		`{"type":"object","patternProperties":{"^x":{}}}`:              "patternProperties",
		`{"type":"object","minProperties":1}`:                          "minProperties",
		`{"type":"array","uniqueItems":true}`:                          "uniqueItems",
		`{"type":"array","contains":{"type":"string"}}`:                "contains",
		`{"if":{"type":"string"},"then":{"minLength":1}}`:              "if",
		`{"type":"number","maximum":1e40}`:                             "maximum",
		`{"type":"string","format":"idn-hostname"}`:                    "format",
		`{"type":"string","pattern":"(?=x)"}`:                          "pattern",
		`{"type":"string","pattern":"a+","minLength":4,"maxLength":3}`: "minLength",
		`{"type":"string","pattern":"a{2}","maxLength":1}`:             "pattern",
		`{"allOf":[{"type":"string"},{"maxLength":2}]}`:                "allOf",
		`{"oneOf":[{"type":"integer"},{"type":"number"}]}`:             "oneOf",
		`{"type":"string","anyOf":[{"maxLength":1}]}`:                  "anyOf",
		`{"$ref":"http://example.com/s.json"}`:                         "$ref",
		`{"type":"string","maxLength":100000}`:                         "maxLength",
		`{"type":"object","properties":{"a":false},"required":["a"]}`:  "false",
		// Object branches told apart by nothing, or by a discriminator
		// two of them share.
		`{"oneOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]},{"type":"object","properties":{"k":{"enum":["b","a"]}},"required":["k"]}]}`: "oneOf",
		`{"oneOf":[{"type":"object","properties":{"k":{"const":"a"}}},{"type":"object","properties":{"k":{"const":"b"}},"required":["k"]}]}`:                       "oneOf",
		`{"type":"object","propertyNames":{"type":"integer"}}`:                      "propertyNames",
		`{"type":"object","propertyNames":{"enum":["a"]},"required":["b"]}`:         "propertyNames",
		`{"type":"object","propertyNames":{"pattern":"^a"},"properties":{"ab":{}}}`: "propertyNames",
		`{"type":"object","propertyNames":{"anyOf":[{"maxLength":1}]}}`:             "propertyNames",
		`{"type":"string","format":"email","pattern":"^[0-9]+$"}`:                   "pattern",
		`{"type":"number","minimum":0.1234567890123456789012345678901234567890123}`: "minimum",
	}
	for schema, what := range cases {
		_, err := JSONSchema([]byte(schema))
		var se *SyntaxError
		if !errors.As(err, &se) || se.What != what {
			t.Errorf("%s: got %v, want a SyntaxError naming %s", schema, err, what)
		}
	}
	// Annotations and keywords JSON Schema does not define are ignored.
	if _, err := JSONSchema([]byte(`{"type":"string","title":"t","description":"d","x-vendor":1,"nullable":true}`)); err != nil {
		t.Errorf("annotations: %v", err)
	}
}

// TestSchemaSpecifics pins down what some schemas allow.
func TestSchemaSpecifics(t *testing.T) {
	cases := []struct {
		schema string
		yes    []string
		no     []string
	}{
		{`{"type":"integer","minimum":-12,"exclusiveMaximum":105}`, []string{"-12", "0", "104", "7"}, []string{"-13", "105", "-0", "007", "1.5"}},
		{`{"type":"number","exclusiveMinimum":0,"maximum":2}`, []string{"1", "2", "0.5", "1.25"}, []string{"0", "2.5", "-0.5", "1.0", "1e2"}},
		{`{"type":"string","maxLength":2}`, []string{`""`, `"ab"`, `"é\n"`, `"\u00e9x"`}, []string{`"abc"`, `"\ud800"`}},
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"required":["b"]}`,
			[]string{`{"b":true}`, `{"a": 1, "b": false}`, "{\n  \"a\": 1,\n  \"b\": true\n}"}, []string{`{}`, `{"a":1}`, `{"b":true,"a":1}`, `{"b":true,}`}},
		{`{"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"}}}`, []string{`{}`, `{"b":null}`, `{"a":null,"b":null}`}, []string{`{"b":null,"a":null}`, `{,"b":null}`}},
		{`{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, []string{`[1]`, `[1, 2]`}, []string{`[]`, `[1,2,3]`}},
		{`{"enum":["a",1,null]}`, []string{`"a"`, `1`, `null`}, []string{`"b"`, `2`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-02-28"`, `"1999-12-31"`}, []string{`"2024-02-30"`, `"2024-13-01"`}},
		{`{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"$ref":"#/$defs/t"}`, []string{`[]`, `[[],[[]]]`}, []string{`[[],[],[]]`}},
	}
	for _, tc := range cases {
		g, err := JSONSchema([]byte(tc.schema))
		c := compileOn(t, g, err)
		for _, s := range tc.yes {
			if !accepts(c, s) {
				t.Errorf("%s: %s refused", tc.schema, s)
			}
		}
		for _, s := range tc.no {
			if accepts(c, s) {
				t.Errorf("%s: %s accepted", tc.schema, s)
			}
		}
	}
}

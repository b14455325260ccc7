package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// The property: whatever a model samples among the tokens a mask allows,
// an output that ends is JSON valid against its schema. The "model" here
// picks uniformly among the allowed tokens (random weights), and ends
// when the grammar lets it; schemas are generated at random; validity is
// judged by an independent validator (santhosh-tekuri/jsonschema, with
// formats asserted).

// schemaGen writes random schemas as JSON text.
type schemaGen struct {
	r    *rand.Rand
	defs []string // $defs bodies, referenced as #/$defs/d<i>
}

func (g *schemaGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *schemaGen) schema(depth int) string {
	kinds := []string{"string", "integer", "number", "boolean", "null", "enum", "const", "nullable"}
	if depth > 0 {
		kinds = append(kinds, "object", "object", "array", "anyOf", "oneOf", "ref")
	}
	switch g.pick(kinds...) {
	case "string":
		switch g.r.IntN(7) {
		case 5: // what zod and pydantic write: a format with its own pattern, a pattern with lengths
			return g.pick(`{"type":"string","format":"email","pattern":"^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"}`,
				`{"type":"string","format":"uuid","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12})$"}`,
				`{"type":"string","format":"date","pattern":"^\\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d)$"}`,
				`{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":5}`,
				`{"type":"string","format":"uri","minLength":1,"maxLength":2083}`,
				`{"type":"string","format":"cuid","pattern":"^[cC][0-9a-z]{6,}$"}`)
		case 6: // leading lookaheads (pydantic's decimal, older zod emails)
			return g.pick(`{"type":"string","pattern":"^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"}`,
				`{"type":"string","pattern":"^(?!\\.)(?!.*\\.\\.)[a-z.]{1,8}$"}`,
				`{"type":"string","pattern":"^(?=.*\\d)[a-z0-9]{2,4}$"}`)
		case 0:
			return `{"type":"string"}`
		case 1:
			lo := g.r.IntN(3)
			return fmt.Sprintf(`{"type":"string","minLength":%d,"maxLength":%d}`, lo, lo+g.r.IntN(6))
		case 2:
			p := g.pick(`^[a-z]{1,5}$`, `\\d{3}-\\d{2}`, `(foo|bar)+`, `[A-Z][a-z]{0,6}`, `a.c`, `[^\"\\\\]{0,4}`,
				`\\w{1,4}@\\w{1,3}\\.com`, `x\\s?y`, `[\"\\\\/]{1,3}`, `é[ü-ÿ]+`)
			return fmt.Sprintf(`{"type":"string","pattern":"%s"}`, p)
		case 3:
			return fmt.Sprintf(`{"type":"string","format":"%s"}`, g.pick("date", "time", "date-time", "uuid", "ipv4", "ipv6", "email", "hostname", "duration"))
		default:
			return `{"type":"string","maxLength":3}`
		}
	case "integer":
		if g.r.IntN(2) == 0 {
			return `{"type":"integer"}`
		}
		lo := g.r.IntN(200) - 100
		return fmt.Sprintf(`{"type":"integer","%s":%d,"%s":%d}`, g.pick("minimum", "exclusiveMinimum"), lo,
			g.pick("maximum", "exclusiveMaximum"), lo+2+g.r.IntN(300))
	case "number":
		switch g.r.IntN(3) {
		case 0:
			return `{"type":"number"}`
		case 1: // decimal bounds, as zod's .min(0.5) and pydantic's confloat write them
			lo := float64(g.r.IntN(400)-200) / 8
			return fmt.Sprintf(`{"type":"%s","%s":%g,"%s":%g}`, g.pick("number", "number", "integer"), g.pick("minimum", "exclusiveMinimum"), lo,
				g.pick("maximum", "exclusiveMaximum"), lo+float64(17+g.r.IntN(30))/16) // wide enough for an integer
		}
		lo := g.r.IntN(20) - 10
		return fmt.Sprintf(`{"type":"number","%s":%d,"%s":%d}`, g.pick("minimum", "exclusiveMinimum"), lo,
			g.pick("maximum", "exclusiveMaximum"), lo+1+g.r.IntN(5))
	case "boolean":
		return `{"type":"boolean"}`
	case "null":
		return `{"type":"null"}`
	case "enum":
		return `{"enum":["red","green",3,null,{"a":[1,"x\"y"]},"ünï"]}`
	case "const":
		return g.pick(`{"const":"fixed \"value\""}`, `{"const":42}`, `{"const":[true,{"k":null}]}`)
	case "nullable":
		return g.pick(`{"type":["string","null"],"maxLength":4}`, `{"type":["integer","boolean"]}`)
	case "object":
		n := g.r.IntN(4)
		var props []string
		var required []string
		for i := range n {
			name := g.pick("name", "age", "a\"quote", "ünicode", "x y", "tags", "v")
			name = fmt.Sprintf("%s%d", name, i)
			key, _ := json.Marshal(name)
			props = append(props, fmt.Sprintf(`%s:%s`, key, g.schema(depth-1)))
			if g.r.IntN(2) == 0 {
				required = append(required, string(key))
			}
		}
		s := fmt.Sprintf(`{"type":"object","properties":{%s}`, strings.Join(props, ","))
		if len(required) > 0 {
			s += fmt.Sprintf(`,"required":[%s]`, strings.Join(required, ","))
		}
		switch g.r.IntN(4) {
		case 0:
			s += `,"additionalProperties":false`
		case 1:
			if n == 0 {
				s += `,"additionalProperties":{"type":"integer"}`
			}
		case 2: // z.record's keys
			if n == 0 {
				return g.pick(`{"type":"object","propertyNames":{"type":"string"},"additionalProperties":{"type":"integer"}}`,
					`{"type":"object","propertyNames":{"type":"string","enum":["a","b"]},"additionalProperties":{"type":"number"},"required":["a","b"]}`,
					`{"type":"object","propertyNames":{"pattern":"^k[0-9]$"},"additionalProperties":{"type":"boolean"}}`,
					`{"type":"object","propertyNames":{"maxLength":2},"additionalProperties":{"type":"null"}}`)
			}
		}
		return s + "}"
	case "array":
		s := fmt.Sprintf(`{"type":"array","items":%s,"maxItems":%d`, g.schema(depth-1), g.r.IntN(4))
		if g.r.IntN(3) == 0 {
			s = fmt.Sprintf(`{"type":"array","prefixItems":[%s,%s],"items":false`, g.schema(depth-1), g.schema(depth-1))
		}
		return s + "}"
	case "anyOf":
		return fmt.Sprintf(`{"anyOf":[%s,%s]}`, g.schema(depth-1), g.schema(depth-1))
	case "oneOf":
		if g.r.IntN(2) == 0 { // z.discriminatedUnion, a pydantic discriminated union by $ref
			def := fmt.Sprintf(`{"type":"object","properties":{"kind":{"const":"dog"},"bark":%s},"required":["kind","bark"]}`, g.schema(depth-1))
			i := len(g.defs)
			g.defs = append(g.defs, def)
			return fmt.Sprintf(`{"oneOf":[{"type":"object","properties":{"kind":{"type":"string","const":"cat"},"lives":%s},"required":["kind","lives"],"additionalProperties":false},`+
				`{"$ref":"#/$defs/d%d"},{"type":"object","properties":{"kind":{"enum":["fish","bird"]}},"required":["kind"]},{"type":"string"}]}`, g.schema(depth-1), i)
		}
		return fmt.Sprintf(`{"oneOf":[{"type":"string","maxLength":5},{"type":"integer"},%s]}`, `{"type":"object","properties":{"k":{"type":"boolean"}},"required":["k"]}`)
	case "ref":
		// A recursive list: each node may have one next node.
		i := len(g.defs)
		g.defs = append(g.defs, fmt.Sprintf(`{"type":"object","properties":{"v":%s,"next":{"$ref":"#/$defs/d%d"}},"required":["v"]}`, g.schema(0), i))
		return fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i)
	}
	panic("unreachable")
}

func (g *schemaGen) document() string {
	g.defs = nil
	body := g.schema(3)
	if len(g.defs) == 0 {
		return body
	}
	var defs []string
	for i, d := range g.defs {
		defs = append(defs, fmt.Sprintf(`"d%d":%s`, i, d))
	}
	return fmt.Sprintf(`{"$defs":{%s},"allOf":[%s]}`, strings.Join(defs, ","), body)
}

// validator compiles schema with an independent implementation.
func validator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseRegexpEngine(ecmaRegexp)
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	return s
}

// ecmaRegexp reads patterns as JSON Schema does (ECMA-262, lookaheads
// included), which Go's RE2 cannot.
func ecmaRegexp(src string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(src, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return ecma{re}, nil
}

type ecma struct{ re *regexp2.Regexp }

func (e ecma) MatchString(s string) bool {
	ok, err := e.re.MatchString(s)
	return ok && err == nil
}

func (e ecma) String() string { return e.re.String() }

// generate samples one output: uniformly among allowed tokens, ending as
// soon as the grammar allows with probability pEnd per step. It returns
// the bytes and whether the output ended within limit tokens.
func generate(c *Compiled, r *rand.Rand, limit int, pEnd float64) ([]byte, bool, error) {
	mt := c.NewMatcher()
	mask := make([]uint64, c.v.MaskWords())
	var out []byte
	var allowed []int
	for range limit {
		mt.FillMask(mask)
		allowed = allowed[:0]
		var eos = -1
		for w, word := range mask {
			for word != 0 {
				tok := w*64 + trailing(word)
				word &= word - 1
				if c.v.IsEOS(tok) {
					eos = tok
					continue
				}
				allowed = append(allowed, tok)
			}
		}
		if eos >= 0 && (len(allowed) == 0 || r.Float64() < pEnd) {
			if !mt.Accept(eos) {
				return out, false, fmt.Errorf("EOS allowed but refused after %q", out)
			}
			return out, true, nil
		}
		if len(allowed) == 0 {
			return out, false, fmt.Errorf("nothing allowed after %q", out)
		}
		tok := allowed[r.IntN(len(allowed))]
		if !mt.Accept(tok) {
			return out, false, fmt.Errorf("token %q allowed but refused after %q", c.v.TokenBytes(tok), out)
		}
		out = append(out, c.v.TokenBytes(tok)...)
	}
	return out, false, nil
}

func trailing(w uint64) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}

// checkSchemas generates n random schemas and outputs over v.
func checkSchemas(t *testing.T, v *Vocab, seed uint64, n, walks int) {
	r := rand.New(rand.NewPCG(seed, 7))
	g := &schemaGen{r: r}
	ended := 0
	for i := range n {
		doc := g.document()
		gr, err := JSONSchema([]byte(doc))
		if err != nil {
			t.Fatalf("schema %s: %v", doc, err)
		}
		c := Compile(gr, v)
		val := validator(t, doc)
		for range walks {
			out, done, err := generate(c, r, 400, 0.9)
			if err != nil {
				t.Fatalf("schema %d %s: %v", i, doc, err)
			}
			if !done {
				continue
			}
			ended++
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("schema %d %s: output %q is not JSON: %v", i, doc, out, err)
			}
			if err := val.Validate(inst); err != nil {
				t.Fatalf("schema %d %s: output %s does not validate: %v", i, doc, out, err)
			}
		}
	}
	if ended < n*walks/2 {
		t.Errorf("only %d of %d outputs ended within the limit", ended, n*walks)
	}
	t.Logf("%d schemas, %d of %d outputs ended and validated", n, ended, n*walks)
}

// jsonAlphabetVocab is a small synthetic vocabulary rich in JSON's
// punctuation, so random walks cross every construct quickly.
func jsonAlphabetVocab(r *rand.Rand) *Vocab {
	alpha := []string{`{`, `}`, `[`, `]`, `"`, `:`, `,`, ` `, "\n", `\`, `-`, `.`, `e`, `+`, `t`, `r`, `u`, `f`, `a`, `l`, `s`, `n`,
		`0`, `1`, `2`, `5`, `9`, `x`, `y`, `T`, `Z`, `@`, `é`, `ü`, `/`, `b`, `c`, `o`, `d`}
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for range 1500 {
		var p []byte
		for range 2 + r.IntN(4) {
			p = append(p, alpha[r.IntN(len(alpha))]...)
		}
		pieces = append(pieces, p)
	}
	pieces = append(pieces, []byte(`{"`), []byte(`":`), []byte(`",`), []byte(`": "`), []byte(`"}`), []byte(`null`), []byte(`true`), nil)
	return NewVocab(len(pieces), func(id int) []byte { return pieces[id] }, []int{len(pieces) - 1})
}

func TestSchemasValidateOnASyntheticVocab(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	checkSchemas(t, jsonAlphabetVocab(r), 11, 300, 3)
}

var (
	realVocabOnce sync.Once
	realVocabs    map[string]*Vocab
)

// realVocab loads a real tokenizer's vocabulary from ../shared: GPT-2's
// (byte-level BPE, 50k) or Qwen3's (152k).
func realVocab(t testing.TB, name string) *Vocab {
	t.Helper()
	dir := reftest.Path(t, "testdata", "tokenizer")
	realVocabOnce.Do(func() { realVocabs = map[string]*Vocab{} })
	if v := realVocabs[name]; v != nil {
		return v
	}
	var tok *tokenizer.Tokenizer
	var err error
	switch name {
	case "gpt2":
		var f *gguf.File
		if f, err = gguf.Open(filepath.Join(dir, "ggml-vocab-gpt-2.gguf")); err == nil {
			tok, err = tokenizer.FromGGUF(f)
		}
	case "qwen3":
		tok, err = tokenizer.FromHFJSON(filepath.Join(dir, "hf", "qwen3", "tokenizer.json"))
	}
	if err != nil {
		t.Fatal(err)
	}
	v := NewVocab(tok.VocabSize(), func(id int) []byte {
		if tok.IsSpecial(id) {
			return nil
		}
		return tok.TokenBytes(id)
	}, tok.EOG())
	realVocabs[name] = v
	return v
}

func TestSchemasValidateOnGPT2Vocab(t *testing.T) {
	checkSchemas(t, realVocab(t, "gpt2"), 12, 60, 2)
}

func TestSchemasValidateOnQwenVocab(t *testing.T) {
	if testing.Short() {
		t.Skip("the 152k vocabulary's masks take a while; run without -short")
	}
	checkSchemas(t, realVocab(t, "qwen3"), 13, 25, 2)
}

package grammar

import (
	"path/filepath"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// benchSchema is an agent-style schema: strings, numbers, an enum, a
// format, an array of objects and an optional field.
const benchSchema = `{"type":"object","properties":{
	"name":{"type":"string"},
	"age":{"type":"integer","minimum":0,"maximum":150},
	"email":{"type":"string","format":"email"},
	"role":{"enum":["admin","user","guest"]},
	"score":{"type":"number"},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":8},
	"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street","city","zip"]},
	"notes":{"type":["string","null"]}},
	"required":["name","age","email","role","score","tags","address"]}`

// benchOutput is a valid output, as a model would write it (pretty-printed).
const benchOutput = `{
  "name": "Ada Lovelace, Countess of Lovelace",
  "age": 36,
  "email": "ada@example.org",
  "role": "admin",
  "score": 97.25,
  "tags": ["mathematics", "analytical engine", "poetry of science"],
  "address": {"street": "12 St James's Square", "city": "London", "zip": "10001"},
  "notes": "Wrote the first published algorithm intended for a machine."
}`

// qwenTokenizer is Qwen3's tokenizer, from ../shared.
func qwenTokenizer(t testing.TB) *tokenizer.Tokenizer {
	dir := reftest.Path(t, "testdata", "tokenizer")
	tok, err := tokenizer.FromHFJSON(filepath.Join(dir, "hf", "qwen3", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// qwenTokens encodes benchOutput with Qwen3's tokenizer.
func qwenTokens(b *testing.B) []int { return qwenTokenizer(b).Encode(benchOutput, false, false) }

// BenchmarkMask is one token's mask and advance over Qwen3's 152k-token
// vocabulary, averaged over a whole structured output: "warm" once the
// grammar's frames were seen (every later request of the schema), "cold"
// a new schema's first request, whose frames are computed as reached.
func BenchmarkMask(b *testing.B) {
	v := realVocab(b, "qwen3")
	toks := qwenTokens(b)
	g, err := JSONSchema([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, c *Compiled) {
		mt := c.NewMatcher()
		mask := make([]uint64, v.MaskWords())
		for _, tok := range toks {
			mt.FillMask(mask)
			if mask[tok>>6]&(1<<(tok&63)) == 0 {
				b.Fatalf("token %q not allowed", v.TokenBytes(tok))
			}
			if !mt.Accept(tok) {
				b.Fatalf("token %q refused", v.TokenBytes(tok))
			}
		}
	}
	b.Run("warm", func(b *testing.B) {
		c := Compile(g, v)
		run(b, c)
		b.ResetTimer()
		for b.Loop() {
			run(b, c)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(toks))/1e3, "µs/token")
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			run(b, Compile(g, v))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(toks))/1e3, "µs/token")
	})
}

package cpu

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// benchSchema and benchOutput are an agent-style schema and an output a
// model would write for it (as in grammar's mask benchmark).
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

// BenchmarkConstrainedDecode is one decode step of a Qwen2.5-0.5B-shaped
// model (random Q8_0 weights, 151,936 logits) at batch 1 and 32, free and
// with every sequence held to a JSON schema over Qwen3's real vocabulary,
// masks and advance included: the "json" time over the "free" time is what
// structured outputs cost a step. Each sequence walks through a real
// output, token by token, so the masks vary as in serving; the grammar's
// frames are computed before timing (every request after a schema's
// first). Run it with -count 5 and compare min and median.
func BenchmarkConstrainedDecode(b *testing.B) {
	dir := reftest.Path(b, "testdata", "tokenizer", "hf", "qwen3")
	tok, err := tokenizer.FromHFJSON(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	vocab := grammar.NewVocab(tok.VocabSize(), func(id int) []byte {
		if tok.IsSpecial(id) {
			return nil
		}
		return tok.TokenBytes(id)
	}, tok.EOG())
	g, err := grammar.JSONSchema([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	compiled := grammar.Compile(g, vocab)
	output := tok.Encode(benchOutput, false, false)
	warm := compiled.NewMatcher()
	for _, id := range output {
		warm.FillMask(make([]uint64, vocab.MaskWords()))
		if !warm.Accept(id) {
			b.Fatalf("token %q refused", tok.TokenBytes(id))
		}
	}

	s, _ := model.LookupShape("qwen2.5-0.5b")
	var buf bytes.Buffer
	if err := model.WriteRandom(&buf, model.RandomSpec{Shape: s, Type: gguf.Q8_0, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	f.Owned = true
	w, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	const blocksPerSeq = 8 // 128 tokens of context room
	for _, batch := range []int{1, 32} {
		x, err := New(w, Config{NumBlocks: batch * blocksPerSeq, BlockSize: 16, Threads: 2})
		if err != nil {
			b.Fatal(err)
		}
		for _, constrained := range []bool{false, true} {
			name := fmt.Sprintf("batch-%d/free", batch)
			if constrained {
				name = fmt.Sprintf("batch-%d/json", batch)
			}
			b.Run(name, func(b *testing.B) {
				p := sampling.Defaults()
				batchOf := &engine.Batch{NumTokens: batch}
				matchers := make([]*grammar.Matcher, batch)
				pos := make([]int, batch)
				for i := range batch {
					table := make([]int, blocksPerSeq)
					for j := range table {
						table[j] = i*blocksPerSeq + j
					}
					hist := make([]int, 65)
					for j := range hist {
						hist[j] = 100 + j
					}
					sb := engine.SeqBatch{Seq: i, Tokens: hist[64:], Pos: 64, BlockTable: table, Sample: true,
						History: hist, NumPrompt: 64, Params: &p, RNG: sampling.NewRNG(int64(i))}
					if constrained {
						matchers[i] = compiled.NewMatcher()
						pos[i] = (i * 7) % len(output) // sequences at different points of the output
						for _, id := range output[:pos[i]] {
							matchers[i].Accept(id)
						}
						sb.Constraint = matchers[i]
					}
					batchOf.Seqs = append(batchOf.Seqs, sb)
				}
				var r engine.StepResult
				r.Samples = make([]sampling.Result, batch)
				step := func() {
					if err := x.Execute(batchOf, &r); err != nil {
						b.Fatal(err)
					}
					for i, m := range matchers {
						if m == nil {
							continue
						}
						// The engine advances each matcher past the sampled
						// token; here it follows the real output instead, so
						// the walk stays on a valid path.
						if pos[i] == len(output) {
							m = compiled.NewMatcher()
							matchers[i], batchOf.Seqs[i].Constraint, pos[i] = m, m, 0
						}
						m.Accept(output[pos[i]])
						pos[i]++
					}
				}
				step()
				for b.Loop() {
					step()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1e3, "ms/step")
			})
		}
		x.Close()
	}
}

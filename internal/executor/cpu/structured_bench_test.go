package cpu

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
// masks and advance included, the two kinds of step alternating, sampling
// greedily: json/free is what structured outputs cost a step, and
// mask-cpu-ms/step the time FillMask took on the executor's threads
// (summed over them; applying a mask to the logits is BenchmarkApplyMask). Each
// sequence walks through a real output, token by token, so the masks vary
// as in serving; the grammar's frames are computed before timing (every
// request after a schema's first). Run it with -count 5 and compare min
// and median.
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
		// Free and constrained steps alternate, so that the machine's
		// drift (other load, frequency) falls on both alike.
		b.Run(fmt.Sprintf("batch-%d", batch), func(b *testing.B) {
			free := newDecodeBatch(batch, blocksPerSeq, nil, nil)
			var masking atomic.Int64
			js := newDecodeBatch(batch, blocksPerSeq, compiled, output)
			for i := range js.batch.Seqs {
				js.batch.Seqs[i].Constraint = &timedConstraint{js.matchers[i], &masking}
			}
			var freeTime, jsonTime time.Duration
			step := func(d *decodeBatch, into *time.Duration) {
				start := time.Now()
				if err := x.Execute(d.batch, d.result); err != nil {
					b.Fatal(err)
				}
				d.advance(compiled, output, &masking)
				*into += time.Since(start)
			}
			step(free, new(time.Duration))
			step(js, new(time.Duration))
			masking.Store(0)
			for b.Loop() {
				step(free, &freeTime)
				step(js, &jsonTime)
			}
			n := float64(b.N)
			b.ReportMetric(float64(freeTime.Microseconds())/n/1e3, "free-ms/step")
			b.ReportMetric(float64(jsonTime.Microseconds())/n/1e3, "json-ms/step")
			b.ReportMetric(float64(jsonTime)/float64(freeTime), "json/free")
			b.ReportMetric(float64(masking.Load())/n/1e6, "mask-cpu-ms/step")
		})
		x.Close()
	}
}

// decodeBatch is one decode step's batch: batch sequences at position 64,
// each held, when compiled is set, to the schema by a matcher walking
// through output from its own starting point.
type decodeBatch struct {
	batch    *engine.Batch
	result   *engine.StepResult
	matchers []*grammar.Matcher
	pos      []int
	params   sampling.Params
}

func newDecodeBatch(batch, blocksPerSeq int, compiled *grammar.Compiled, output []int) *decodeBatch {
	d := &decodeBatch{batch: &engine.Batch{NumTokens: batch}, result: &engine.StepResult{Samples: make([]sampling.Result, batch)},
		params: sampling.Defaults(), matchers: make([]*grammar.Matcher, batch), pos: make([]int, batch)}
	// Greedy: the sampler then costs the same over masked and free logits
	// (at temperature 1 a mask makes the softmax cheaper, -Inf being quick
	// to exponentiate), so the difference is the mask's.
	d.params.Temperature = 0
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
			History: hist, NumPrompt: 64, Params: &d.params, RNG: sampling.NewRNG(int64(i))}
		if compiled != nil {
			d.matchers[i] = compiled.NewMatcher()
			d.pos[i] = (i * 7) % len(output) // sequences at different points of the output
			for _, id := range output[:d.pos[i]] {
				d.matchers[i].Accept(id)
			}
			sb.Constraint = d.matchers[i]
		}
		d.batch.Seqs = append(d.batch.Seqs, sb)
	}
	return d
}

// advance moves each matcher on, as the engine does after a step, along
// the real output (so the walk stays on a valid path), starting over at
// its end.
func (d *decodeBatch) advance(compiled *grammar.Compiled, output []int, masking *atomic.Int64) {
	for i, m := range d.matchers {
		if m == nil {
			continue
		}
		if d.pos[i] == len(output) {
			m = compiled.NewMatcher()
			d.matchers[i], d.pos[i] = m, 0
			d.batch.Seqs[i].Constraint = &timedConstraint{m, masking}
		}
		m.Accept(output[d.pos[i]])
		d.pos[i]++
	}
}

// BenchmarkApplyMask is the executor's share of a mask: setting to -Inf the
// 151,936 logits of a Qwen-sized vocabulary that a narrow mask (one JSON
// punctuation state's) leaves out.
func BenchmarkApplyMask(b *testing.B) {
	logits := make([]float32, 151936)
	mask := make([]uint64, (len(logits)+63)/64)
	for i := 0; i < len(mask); i += 97 {
		mask[i] = 0x8421
	}
	for b.Loop() {
		applyMask(logits, mask)
	}
}

// timedConstraint sums the time masks take, on whichever thread.
type timedConstraint struct {
	m     *grammar.Matcher
	spent *atomic.Int64
}

func (c *timedConstraint) FillMask(mask []uint64) {
	start := time.Now()
	c.m.FillMask(mask)
	c.spent.Add(int64(time.Since(start)))
}

func (c *timedConstraint) Accept(tok int) bool { return c.m.Accept(tok) }

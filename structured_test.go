package glassbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestStructuredOutputsOnTheSimulator: the simulator's completions obey
// the schema, streamed or not, for every sample of every prompt.
func TestStructuredOutputsOnTheSimulator(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}})
	schema := `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0},` +
		`"districts":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":4}},"required":["city","population"]}`
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	val := c.MustCompile("s.json")
	check := func(text string) {
		t.Helper()
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%q is not JSON: %v", text, err)
		}
		if err := val.Validate(inst); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	seed := int64(3)
	params := SamplingParams{N: 3, MaxTokens: 400, Temperature: 1, Seed: &seed, StructuredOutputs: &StructuredOutputs{JSON: schema}}
	outs, err := l.Generate(t.Context(), []string{"Describe a city.", "Another one:"}, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		for _, comp := range o.Completions {
			if comp.FinishReason != FinishStop {
				t.Fatalf("completion %d ended %q: %q", comp.Index, comp.FinishReason, comp.Text)
			}
			check(comp.Text)
		}
	}
	t.Logf("e.g. %q", outs[0].Completions[0].Text)
	texts := make([]strings.Builder, 3)
	for comp, err := range l.Stream(t.Context(), "Describe a city.", params) {
		if err != nil {
			t.Fatal(err)
		}
		texts[comp.Index].WriteString(comp.Text)
	}
	for i := range texts {
		check(texts[i].String())
		if texts[i].String() != outs[0].Completions[i].Text {
			t.Errorf("streamed %q, generated %q: seeded runs differ", texts[i].String(), outs[0].Completions[i].Text)
		}
	}
	if _, err := l.Generate(t.Context(), []string{"x"}, SamplingParams{StructuredOutputs: &StructuredOutputs{JSON: `{"type":"integer","multipleOf":2}`}}); err == nil ||
		!strings.Contains(err.Error(), "multipleOf") {
		t.Errorf("an unsupported keyword: %v, want an error naming it", err)
	}
	if _, err := l.Generate(t.Context(), []string{"x"}, SamplingParams{StructuredOutputs: &StructuredOutputs{Regex: "a", JSONObject: true}}); err == nil {
		t.Error("two kinds at once were accepted")
	}
}

// TestStructuredOutputsOnACPUModel: a Qwen-shaped model with random
// weights and Qwen3's real 152k-token vocabulary, whose byte-level tokens
// span `{"`, `":` and runs of whitespace, still writes only JSON valid
// against the schema: validity does not depend on the model being good.
func TestStructuredOutputsOnACPUModel(t *testing.T) {
	tok := reftest.Path(t, "testdata", "tokenizer", "hf", "qwen3")
	path := filepath.Join(t.TempDir(), "random.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	shape := model.Shape{Name: "qwen-vocab", Arch: "qwen2", Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128,
		Vocab: 151936, Context: 2048, RopeBase: 1e6, NormEps: 1e-6, Tied: true}
	if err := model.WriteRandom(f, model.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l := open(t, Options{Model: path, Tokenizer: tok, Threads: 2})
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":6},"n":{"type":"integer","minimum":-5,"maximum":5},` +
		`"ok":{"type":"boolean"},"list":{"type":"array","items":{"enum":["x","y z"]},"maxItems":3}},"required":["name","n","ok","list"],"additionalProperties":false}`
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	val := c.MustCompile("s.json")
	seed := int64(11)
	outs, err := l.Chat(t.Context(), [][]Message{{{Role: "user", Content: "Fill in the form."}}},
		SamplingParams{N: 4, MaxTokens: 120, Temperature: 1, Seed: &seed, StructuredOutputs: &StructuredOutputs{JSON: schema}})
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range outs[0].Completions {
		if comp.FinishReason != FinishStop {
			t.Fatalf("completion %d ended %q after %d tokens: %q", comp.Index, comp.FinishReason, len(comp.TokenIDs), comp.Text)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(comp.Text))
		if err != nil {
			t.Fatalf("%q is not JSON: %v", comp.Text, err)
		}
		if err := val.Validate(inst); err != nil {
			t.Fatalf("%s: %v", comp.Text, err)
		}
	}
	t.Logf("e.g. %q", outs[0].Completions[0].Text)
}

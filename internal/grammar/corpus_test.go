package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// corpusEntry is one schema of testdata/schemas/corpus.json: a shape of
// agent code as one library writes it, or that library's own refusal.
type corpusEntry struct {
	Generator    string          `json:"generator"`
	Name         string          `json:"name"`
	Schema       json.RawMessage `json:"schema"`
	LibraryError string          `json:"library_error"`
}

// corpusRefusals are the corpus's shapes glassbox refuses, with the
// keyword its 400 names; every other schema is generated.
func corpusRefusals() map[string]string {
	return map[string]string{
		"multipleOf": "multipleOf",  // z.number().multipleOf(5)
		"set":        "uniqueItems", // pydantic's set[str]
	}
}

// TestLibrarySchemaCorpus: the JSON Schemas that zod 4, the AI SDK, the
// openai SDK, LangChain and pydantic write for what agent code declares
// (testdata/schemas/corpus.json, written by those libraries: see
// cmd/glassbox's TestSchemaCorpusIsCurrent) compile, and every output a
// model sampling at random among the allowed tokens produces validates
// against them (formats asserted, patterns read as ECMAScript); or they are
// refused naming the keyword.
func TestLibrarySchemaCorpus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "schemas", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var corpus []corpusEntry
	if err := json.Unmarshal(b, &corpus); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	v := jsonAlphabetVocab(r)
	compiled, validated := 0, 0
	for _, e := range corpus {
		if e.Schema == nil {
			continue // the library refused the shape itself
		}
		g, err := JSONSchema(e.Schema)
		if want := corpusRefusals()[e.Name]; want != "" {
			var se *SyntaxError
			if !errors.As(err, &se) || se.What != want {
				t.Errorf("%s %s: got %v, want a refusal naming %s", e.Generator, e.Name, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", e.Generator, e.Name, err)
			continue
		}
		compiled++
		c := Compile(g, v)
		val := validator(t, string(e.Schema))
		for range 4 {
			out, done, err := generate(c, r, 600, 0.9)
			if err != nil {
				t.Fatalf("%s %s: %v", e.Generator, e.Name, err)
			}
			if !done {
				continue
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("%s %s: output %q is not JSON: %v", e.Generator, e.Name, out, err)
			}
			if err := val.Validate(inst); err != nil {
				t.Errorf("%s %s: output %s does not validate: %v", e.Generator, e.Name, out, err)
			}
			validated++
		}
	}
	if compiled < 100 || validated < compiled {
		t.Errorf("%d of the corpus's %d schemas compiled, %d outputs validated", compiled, len(corpus), validated)
	}
	t.Logf("%d of %d schemas compiled, %d outputs validated", compiled, len(corpus), validated)
}

package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// testdata returns ../shared/testdata/tokenizer beside the module.
func testdata(t testing.TB) string { t.Helper(); return reftest.Path(t, "testdata", "tokenizer") }

func loadGGUF(t testing.TB, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func loadHF(t testing.TB, model string) *Tokenizer {
	t.Helper()
	tok, err := FromHFJSON(filepath.Join(testdata(t), "hf", model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ggmlCase is one string of llama.cpp's test-tokenizer-0 and its ids.
type ggmlCase struct {
	text string
	ids  []int
}

// readGGMLCases reads <vocab>.inp and <vocab>.out: the strings are
// separated by "\n__ggml_vocab_test__\n" (which also ends the file), each
// .out line holds the ids after a leading space.
func readGGMLCases(t *testing.T, dir, vocab string) []ggmlCase {
	t.Helper()
	inp, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-"+vocab+".gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "ggml-vocab-"+vocab+".gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] != "" {
		t.Fatalf("%s.inp does not end with the separator", vocab)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d strings but %d id lines", vocab, len(texts), len(lines))
	}
	cases := make([]ggmlCase, len(texts))
	for i, text := range texts {
		cases[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", vocab, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, id)
		}
	}
	return cases
}

// checkGGMLCases encodes as test-tokenizer-0 does (no BOS/EOS, special text
// as plain text) and checks that decoding gives the text back.
func checkGGMLCases(t *testing.T, tok *Tokenizer, cases []ggmlCase) {
	t.Helper()
	for i, c := range cases {
		got := tok.Encode(c.text, false, false)
		if diff := cmp.Diff(c.ids, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("case %d %q: ids (-want +got):\n%s", i, c.text, diff)
		}
		if back := tok.Decode(got, true); back != c.text {
			t.Errorf("case %d: Decode(Encode(%q)) = %q", i, c.text, back)
		}
	}
}

func TestGGMLVocabs(t *testing.T) {
	dir := testdata(t)
	for _, vocab := range []string{"llama-spm", "phi-3", "gpt-2"} {
		t.Run(vocab, func(t *testing.T) {
			tok := loadGGUF(t, filepath.Join(dir, "ggml-vocab-"+vocab+".gguf"))
			cases := readGGMLCases(t, dir, vocab)
			if len(cases) != 46 {
				t.Errorf("%d cases, want llama.cpp's 46", len(cases))
			}
			checkGGMLCases(t, tok, cases)
		})
	}
}

// The Llama 3 and Qwen 2 vocab GGUFs are not in testdata; the same
// vocabularies come from the tokenizer.json files (Qwen 3 shares Qwen 2's
// vocabulary, merges and regex), so llama.cpp's expected ids are checked
// through FromHFJSON.
func TestGGMLVocabsThroughHF(t *testing.T) {
	dir := testdata(t)
	for _, c := range []struct{ vocab, hf string }{{"llama-bpe", "llama3"}, {"qwen2", "qwen3"}} {
		t.Run(c.vocab, func(t *testing.T) {
			checkGGMLCases(t, loadHF(t, c.hf), readGGMLCases(t, dir, c.vocab))
		})
	}
}

// hfCase is one entry of hf/<model>/cases.json.
type hfCase struct {
	Name      string   `json:"name"`
	Text      string   `json:"text"`
	Special   bool     `json:"special"`
	IDs       []int    `json:"ids"`
	Tokens    []string `json:"tokens"`
	Decoded   string   `json:"decoded"`
	Roundtrip bool     `json:"roundtrip"`
}

func TestHFCases(t *testing.T) {
	dir := testdata(t)
	for _, model := range []string{"llama3", "qwen3"} {
		t.Run(model, func(t *testing.T) {
			tok := loadHF(t, model)
			b, err := os.ReadFile(filepath.Join(dir, "hf", model, "cases.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cases []hfCase
			if err := json.Unmarshal(b, &cases); err != nil {
				t.Fatal(err)
			}
			if len(cases) != 79 {
				t.Errorf("%d cases, want 79", len(cases))
			}
			for _, c := range cases {
				got := tok.Encode(c.Text, false, c.Special)
				if diff := cmp.Diff(c.IDs, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s special=%v: ids (-want +got):\n%s", c.Name, c.Special, diff)
					continue
				}
				var strs []string
				for _, id := range got {
					strs = append(strs, tok.TokenString(id))
				}
				if diff := cmp.Diff(c.Tokens, strs, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: token strings (-want +got):\n%s", c.Name, diff)
				}
				if back := tok.Decode(got, false); back != c.Decoded {
					t.Errorf("%s: Decode = %q, want %q", c.Name, back, c.Decoded)
				}
				if (tok.Decode(got, false) == c.Text) != c.Roundtrip {
					t.Errorf("%s: round trip %v, want %v", c.Name, !c.Roundtrip, c.Roundtrip)
				}
			}
		})
	}
}

package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeHF writes a tokenizer.json (and a tokenizer_config.json when config
// is not empty) into a new directory and returns the tokenizer.json path.
func writeHF(t *testing.T, tokenizer, config string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, []byte(tokenizer), 0o644); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// hfJSON is a minimal byte-level BPE tokenizer.json with the given parts.
func hfJSON(model, pre, post, normalizer string) string {
	return `{"added_tokens": [
		{"id": 3, "content": "<|begin|>", "special": true},
		{"id": 4, "content": "<|end|>", "special": true, "rstrip": true},
		{"id": 5, "content": "<tool>", "special": false}],
	"normalizer": ` + normalizer + `,
	"pre_tokenizer": ` + pre + `,
	"post_processor": ` + post + `,
	"model": ` + model + `}`
}

const (
	hfModel    = `{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}`
	hfPairs    = `{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}`
	hfGPT2Pre  = `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}`
	hfByteLvl  = `{"type": "ByteLevel"}`
	hfTemplate = `{"type": "Sequence", "processors": [{"type": "ByteLevel"},
		{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}]}`
)

func TestFromHFJSON(t *testing.T) {
	config := `{"bos_token": {"content": "<|begin|>"}, "eos_token": "<|end|>",
		"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`
	tok, err := FromHFJSON(writeHF(t, hfJSON(hfModel, hfGPT2Pre, hfByteLvl, "null"), config))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 3 || tok.EOS() != 4 || tok.AddBOS() || tok.ChatTemplate() != "D" || !tok.IsEOG(4) {
		t.Errorf("BOS %d EOS %d addBOS %v template %q EOG %v", tok.BOS(), tok.EOS(), tok.AddBOS(), tok.ChatTemplate(), tok.EOG())
	}
	if diff := cmp.Diff([]int{2, 4, 2, 5, 0}, tok.Encode("ab<|end|>  ab<tool>a", true, true)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A TemplateProcessing post-processor adds BOS; merges may be pairs;
	// an NFC normalizer is taken up.
	tok, err = FromHFJSON(writeHF(t, hfJSON(hfPairs, hfGPT2Pre, hfTemplate, `{"type": "NFC"}`), ""))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 2}, tok.Encode("ab", true, false)); diff != "" {
		t.Errorf("BOS from the template (-want +got):\n%s", diff)
	}
	if tok.normalize("a\u0301") != "\u00e1" {
		t.Error("NFC normalizer not applied")
	}
}

func TestFromHFJSONErrors(t *testing.T) {
	split := func(regex string) string {
		return `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "` + regex + `"}, "behavior": "Isolated"},
			{"type": "ByteLevel", "use_regex": false}]}`
	}
	tests := []struct {
		name, json, want string
	}{
		{"not JSON", `{`, "unexpected end"},
		{"WordPiece", hfJSON(`{"type": "WordPiece", "vocab": {"a": 0}}`, hfGPT2Pre, "null", "null"), "WordPiece"},
		{"byte fallback", hfJSON(`{"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": true}`, hfGPT2Pre, "null", "null"), "byte_fallback"},
		{"unknown regex", hfJSON(hfModel, split(`\\\\w+`), "null", "null"), "regex"},
		{"no pre-tokenizer", hfJSON(hfModel, "null", "null", "null"), "pre_tokenizer"},
		{"NFKC", hfJSON(hfModel, hfGPT2Pre, "null", `{"type": "NFKC"}`), "NFKC"},
		{"merge without a space", hfJSON(`{"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}`, hfGPT2Pre, "null", "null"), "no space"},
		{"negative id", hfJSON(`{"type": "BPE", "vocab": {"a": -1, "b": 0}, "merges": []}`, hfGPT2Pre, "null", "null"), "id -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromHFJSON(writeHF(t, tt.json, ""))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "load tokenizer ") {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// FuzzParseHFJSON: any tokenizer.json (and tokenizer_config.json) is loaded
// or refused without a panic, and what loads encodes and decodes anything.
func FuzzParseHFJSON(f *testing.F) {
	f.Add(hfJSON(hfModel, hfGPT2Pre, hfByteLvl, "null"), `{"eos_token": "<|end|>"}`, "ab<|end|> a")
	f.Add(hfJSON(hfPairs, hfGPT2Pre, hfTemplate, `{"type": "NFC"}`), `{"bos_token": null}`, "<tool>ba")
	f.Add(hfJSON(hfModel, `{"type": "Sequence", "pretokenizers": [null, null]}`, "null", "null"), "", "")
	f.Fuzz(func(t *testing.T, tokenizer, config, text string) {
		var cfg hfConfig
		if json.Unmarshal([]byte(config), &cfg) != nil {
			cfg = hfConfig{}
		}
		tok, err := parseHFJSON([]byte(tokenizer), &cfg)
		if err != nil {
			return
		}
		ids := tok.Encode(text, true, true)
		tok.Decode(append(ids, -1, 1<<30), false)
		for _, id := range ids {
			tok.TokenBytes(id)
		}
	})
}

package loader

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	modelpkg "github.com/glassbox-llm/glassbox/internal/model"
)

// TestTooBigToCopy: a model is read into memory unless it would take more
// than three quarters of what is available (unknown: read it).
func TestTooBigToCopy(t *testing.T) {
	for _, c := range []struct {
		size, avail int64
		want        bool
	}{{500, 1000, false}, {800, 1000, true}, {1 << 40, 0, false}} {
		if got := tooBigToCopy(c.size, c.avail); got != c.want {
			t.Errorf("tooBigToCopy(%d, %d) = %v", c.size, c.avail, got)
		}
	}
}

// TestLoadWithTokenizerJSON: Config.Tokenizer (serve --tokenizer)
// replaces the GGUF's tokenizer and chat template with a tokenizer.json
// directory's.
func TestLoadWithTokenizerJSON(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	f, err := os.Create(model)
	if err != nil {
		t.Fatal(err)
	}
	shape, _ := modelpkg.LookupShape("tiny")
	if err := modelpkg.WriteRandom(f, modelpkg.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tokDir := filepath.Join(dir, "tok")
	os.Mkdir(tokDir, 0o755)
	os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), []byte(`{"added_tokens": [{"id": 3, "content": "<|end|>", "special": true}],
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "decoder": {"type": "ByteLevel"},
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`), 0o644)
	os.WriteFile(filepath.Join(tokDir, "tokenizer_config.json"), []byte(`{"eos_token": "<|end|>",
		"chat_template": "{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}"}`), 0o644)

	l, err := Load(Config{Path: model, Tokenizer: tokDir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := l.Vocab.VocabSize(); n != 4 {
		t.Errorf("vocabulary of %d tokens, want the tokenizer.json's 4", n)
	}
	if got := l.Vocab.EncodeChat("abab"); !slices.Equal(got, []int{2, 2}) {
		t.Errorf("EncodeChat(abab) = %v, want [2 2]", got)
	}
	if got, err := l.Chat.Render([]jinja.Message{{Role: "user", Content: "hi"}}, nil); err != nil || got != "[hi]<|end|>" {
		t.Errorf("chat = %q, %v; want the tokenizer_config.json template", got, err)
	}
	if _, err := Load(Config{Path: model, Tokenizer: filepath.Join(dir, "absent")}); err == nil {
		t.Error("a missing tokenizer.json loaded")
	}
}

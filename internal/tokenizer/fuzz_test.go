package tokenizer

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// validKVs is a small SentencePiece vocabulary that loads.
func validKVs() []kv {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{typeUnknown, typeControl, typeControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, typeByte)
	}
	for _, s := range []string{"▁", "a", "b", "▁a", "ab", "▁ab", "▁b"} {
		tokens = append(tokens, s)
		types = append(types, typeNormal)
	}
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	return []kv{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
	}
}

func tinySPM(t testing.TB) *Tokenizer {
	t.Helper()
	f, err := parseKVs(t, validKVs())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// with returns kvs with key's value replaced (or removed when val is nil).
func with(kvs []kv, key string, val any) []kv {
	var out []kv
	for _, e := range kvs {
		if e.key != key {
			out = append(out, e)
		}
	}
	if val != nil {
		out = append(out, kv{key, val})
	}
	return out
}

func TestFromGGUFErrors(t *testing.T) {
	good := validKVs()
	bpe := with(with(good, "tokenizer.ggml.model", "gpt2"), "tokenizer.ggml.merges", []string{"a b"})
	tests := []struct {
		name string
		kvs  []kv
		want string
	}{
		{"no model", with(good, "tokenizer.ggml.model", nil), "tokenizer.ggml.model"},
		{"model not a string", with(good, "tokenizer.ggml.model", uint32(1)), "tokenizer.ggml.model"},
		{"unknown model", with(good, "tokenizer.ggml.model", "t5"), "not supported"},
		{"no tokens", with(good, "tokenizer.ggml.tokens", nil), "tokenizer.ggml.tokens"},
		{"tokens of the wrong type", with(good, "tokenizer.ggml.tokens", []int32{1, 2}), "not an array of string"},
		{"scores too short", with(good, "tokenizer.ggml.scores", []float32{0}), "tokenizer.ggml.scores has 1 entries"},
		{"scores of the wrong type", with(good, "tokenizer.ggml.scores", []string{"x"}), "tokenizer.ggml.scores"},
		{"types of the wrong type", with(good, "tokenizer.ggml.token_type", []float32{1}), "tokenizer.ggml.token_type"},
		{"BPE without merges", with(bpe, "tokenizer.ggml.merges", nil), "merges is missing"},
		{"merges of the wrong type", with(bpe, "tokenizer.ggml.merges", "a b"), "merges"},
		{"unknown pre-tokenizer", with(bpe, "tokenizer.ggml.pre", "klingon"), "klingon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseKVs(t, tt.kvs)
			if err != nil {
				t.Fatal(err)
			}
			_, err = FromGGUF(f)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "load tokenizer: ") {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := FromHFJSON(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Error("FromHFJSON of a missing file succeeded")
	}
}

// FuzzFromGGUF loads arbitrary tokenizer metadata: it may be refused, but
// never panics, and a tokenizer that loads encodes and decodes anything.
func FuzzFromGGUF(f *testing.F) {
	f.Add("llama", "", "<unk>\n<s>\n</s>\n▁a\na", []byte{2, 3, 3, 1, 1}, "", uint32(1), "a a")
	f.Add("gpt2", "qwen2", "a\nb\nab\n<|x|>", []byte{1, 1, 1, 3}, "a b", uint32(3), "ab<|x|>ab")
	f.Add("gpt2", "llama-bpe", "a\nb", []byte{1}, "a b\nb", uint32(99), "ba")
	f.Add("llama", "", "", []byte{}, "", uint32(0), "")
	f.Fuzz(func(t *testing.T, model, pre, tokens string, types []byte, merges string, bos uint32, text string) {
		toks := strings.Split(tokens, "\n")
		tt := make([]int32, len(types))
		for i, b := range types {
			tt[i] = int32(b % 8)
		}
		scores := make([]float32, len(toks))
		for i := range scores {
			scores[i] = float32(len(toks[i]))
		}
		kvs := []kv{
			{"tokenizer.ggml.model", model},
			{"tokenizer.ggml.pre", pre},
			{"tokenizer.ggml.tokens", toks},
			{"tokenizer.ggml.scores", scores},
			{"tokenizer.ggml.token_type", tt},
			{"tokenizer.ggml.merges", strings.Split(merges, "\n")},
			{"tokenizer.ggml.bos_token_id", bos},
			{"tokenizer.ggml.add_eos_token", len(types)%2 == 0},
		}
		gf, err := parseKVs(t, kvs)
		if err != nil {
			return
		}
		tok, err := FromGGUF(gf)
		if err != nil {
			return
		}
		ids := tok.Encode(text, true, true)
		ids = append(ids, -1, tok.VocabSize(), 1<<40)
		tok.Decode(ids, false)
		tok.Decode(ids, true)
		for _, id := range ids {
			tok.TokenBytes(id)
			tok.TokenString(id)
			tok.IsSpecial(id)
		}
	})
}

// fuzzTokenizers are the tokenizers FuzzEncode checks: the synthetic ones
// always, the reference vocabularies when ../shared is there.
func fuzzTokenizers(f *testing.F) map[string]*Tokenizer {
	toks := map[string]*Tokenizer{"tiny-spm": tinySPM(f), "tiny-bpe": tinyBPE(f, "llama-bpe")}
	dir := testdata(f)
	for _, v := range []string{"llama-spm", "gpt-2"} {
		toks[v] = loadGGUF(f, filepath.Join(dir, "ggml-vocab-"+v+".gguf"))
	}
	toks["llama3"] = loadHF(f, "llama3")
	return toks
}

// FuzzEncode: Encode never panics, and decoding gives the text back:
// for byte-level BPE any valid UTF-8 text, for SentencePiece with byte
// fallback any bytes at all, except the escaped-space character U+2581,
// which SentencePiece decodes as a space by design.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "  a\n\n\tb", "ab ab", "日本語 🦙 x", "\xff\xfe", "<s><|im_end|>", "a▁b"} {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		for name, tok := range toks {
			ids := tok.Encode(s, false, false)
			tok.Encode(s, true, true)
			for _, id := range ids {
				if id < 0 || id >= tok.VocabSize() {
					t.Fatalf("%s: Encode(%q) gave id %d", name, s, id)
				}
			}
			check := utf8.ValidString(s)
			if tok.kind == kindSPM {
				check = !strings.Contains(s, spmSpace)
			}
			if got := tok.Decode(ids, true); check && got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q", name, s, got)
			}
		}
	})
}

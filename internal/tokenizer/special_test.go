package tokenizer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// kv is one metadata entry of a synthetic vocabulary file.
type kv struct {
	key string
	val any
}

// parseKVs writes kvs as a GGUF image and parses it back.
func parseKVs(t testing.TB, kvs []kv) (*gguf.File, error) {
	t.Helper()
	w := gguf.NewWriter()
	for _, e := range kvs {
		if err := w.AddKV(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return gguf.Parse(buf.Bytes())
}

// tinyBPE is a byte-level vocabulary: the 256 byte characters (id = byte),
// three merges, and special tokens after them.
func tinyBPE(t testing.TB, pre string, extra ...kv) *Tokenizer {
	t.Helper()
	bl := newByteLevel()
	var tokens []string
	var types []int32
	for b := range 256 {
		tokens = append(tokens, string(bl.char[b]))
		types = append(types, typeNormal)
	}
	add := func(s string, typ int32) {
		tokens = append(tokens, s)
		types = append(types, typ)
	}
	add("he", typeNormal)                 // 256
	add("Ġt", typeNormal)                 // 257
	add("Ġthe", typeNormal)               // 258
	add("<|im_start|>", typeControl)      // 259
	add("<|im_end|>", typeControl)        // 260
	add("<think>", typeUserDefined)       // 261
	add("<|im_start|>x", typeUserDefined) // 262: longer, overlaps 259
	kvs := []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", pre},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", []string{"h e", "Ġ t", "Ġt he"}},
		{"tokenizer.ggml.eos_token_id", uint32(260)},
	}
	f, err := parseKVs(t, append(kvs, extra...))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSpecialTokens(t *testing.T) {
	tok := tinyBPE(t, "qwen2")
	const (
		start, end, think, startX = 259, 260, 261, 262
		sp, the                   = ' ', 258
	)
	tests := []struct {
		name          string
		in            string
		parse         bool
		want          []int
		wantDecoded   string // with skipSpecial
		wantUnskipped string
	}{{
		name: "merges", in: " the", want: []int{the},
		wantDecoded: " the", wantUnskipped: " the",
	}, {
		name: "control tokens are text without parseSpecial", in: "<|im_end|>",
		want:        bytesOf("<|im_end|>"),
		wantDecoded: "<|im_end|>", wantUnskipped: "<|im_end|>",
	}, {
		name: "control tokens are matched with parseSpecial", in: "<|im_start|> the<|im_end|>", parse: true,
		want:        []int{start, the, end},
		wantDecoded: " the", wantUnskipped: "<|im_start|> the<|im_end|>",
	}, {
		name: "user-defined tokens are always matched", in: "a<think>b",
		want:        []int{'a', think, 'b'},
		wantDecoded: "a<think>b", wantUnskipped: "a<think>b",
	}, {
		name: "the longest special token wins", in: "<|im_start|>x<|im_start|>", parse: true,
		want:        []int{startX, start},
		wantDecoded: "<|im_start|>x", wantUnskipped: "<|im_start|>x<|im_start|>",
	}, {
		name: "adjacent and repeated", in: "<|im_end|><|im_end|> ", parse: true,
		want:        []int{end, end, sp},
		wantDecoded: " ", wantUnskipped: "<|im_end|><|im_end|> ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tok.Encode(tt.in, false, tt.parse)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) (-want +got):\n%s", tt.in, diff)
			}
			if s := tok.Decode(got, true); s != tt.wantDecoded {
				t.Errorf("Decode(skip) = %q, want %q", s, tt.wantDecoded)
			}
			if s := tok.Decode(got, false); s != tt.wantUnskipped {
				t.Errorf("Decode = %q, want %q", s, tt.wantUnskipped)
			}
		})
	}
	if !tok.IsSpecial(end) || tok.IsSpecial(think) || tok.IsSpecial('a') || tok.IsSpecial(-1) || tok.IsSpecial(1<<20) {
		t.Error("IsSpecial: want true only for control tokens")
	}
	if tok.TokenBytes(end) != nil || string(tok.TokenBytes(think)) != "<think>" || string(tok.TokenBytes(the)) != " the" {
		t.Error("TokenBytes: control tokens must be empty, user-defined tokens their text, normal ones their bytes")
	}
	if !tok.IsEOG(end) || tok.IsEOG(start) || tok.EOS() != end {
		t.Errorf("EOS %d, EOG %v: want <|im_end|>", tok.EOS(), tok.EOG())
	}
}

func bytesOf(s string) []int {
	var ids []int
	for i := 0; i < len(s); i++ {
		ids = append(ids, int(s[i]))
	}
	return ids
}

func TestAddSpecial(t *testing.T) {
	tok := tinyBPE(t, "qwen2",
		kv{"tokenizer.ggml.bos_token_id", uint32(259)},
		kv{"tokenizer.ggml.add_bos_token", true},
		kv{"tokenizer.ggml.add_eos_token", true})
	if diff := cmp.Diff([]int{259, 'a', 260}, tok.Encode("a", true, false)); diff != "" {
		t.Errorf("BOS and EOS (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{'a'}, tok.Encode("a", false, false)); diff != "" {
		t.Errorf("without addSpecial (-want +got):\n%s", diff)
	}
	// Llama 3's pre-tokenizer adds BOS by default, as in llama.cpp.
	if !tinyBPE(t, "llama-bpe", kv{"tokenizer.ggml.bos_token_id", uint32(259)}).AddBOS() {
		t.Error("llama-bpe: add_bos should default to true")
	}
}

// Phi-3's special tokens eat the whitespace after them (llama.cpp's
// rstrip), and SPM adds its dummy space prefix after every special token.
func TestSPMSpecials(t *testing.T) {
	dir := testdata(t)
	tok := loadGGUF(t, filepath.Join(dir, "ggml-vocab-phi-3.gguf"))
	user, _ := tok.TokenID("<|user|>")
	end, _ := tok.TokenID("<|end|>")
	got := tok.Encode("<|user|>\nHi<|end|>", true, true)
	if len(got) != 4 || got[0] != tok.BOS() || got[1] != user || got[3] != end || tok.TokenString(got[2]) != "▁Hi" {
		t.Errorf("phi-3 chat prompt = %v", got)
	}
	if s := tok.Decode(got, true); s != "Hi" {
		t.Errorf("Decode(skip) = %q, want %q", s, "Hi")
	}

	spm := loadGGUF(t, filepath.Join(dir, "ggml-vocab-llama-spm.gguf"))
	got = spm.Encode("<s>Hello</s>", true, true)
	if diff := cmp.Diff([]int{1, 1, 15043, 2}, got); diff != "" {
		t.Errorf("llama-spm with parseSpecial (-want +got):\n%s", diff)
	}
	// Literal special-token and byte-token text never becomes those
	// tokens without parseSpecial.
	for _, s := range []string{"<s>", "</s>", "<unk>", "<0x0A>", "a<s>b"} {
		for _, id := range spm.Encode(s, false, false) {
			if spm.IsSpecial(id) || spm.attrs[id].has(attrByte) {
				t.Errorf("Encode(%q) produced %q", s, spm.TokenString(id))
			}
		}
	}
	if b := spm.TokenBytes(13); string(b) != "\n" {
		t.Errorf("TokenBytes(<0x0A>) = %q", b)
	}
	if b := spm.TokenBytes(15043); string(b) != " Hello" {
		t.Errorf("TokenBytes(▁Hello) = %q", b)
	}
}

// The golden prompt of the stories260K model (its README).
func TestStories260K(t *testing.T) {
	tok := loadGGUF(t, reftest.Path(t, "models", "stories260K", "stories260K.gguf"))
	if diff := cmp.Diff([]int{1, 403, 407, 261, 378}, tok.Encode("Once upon a time", true, false)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A streamed emoji split over byte-level tokens (one per byte in this
// vocabulary) comes out whole, and a control token shows nothing.
func TestTextSinkWithTokenizer(t *testing.T) {
	tok := tinyBPE(t, "gpt2")
	text := "Hi 🦙 the<|im_end|>"
	ids := tok.Encode(text, false, true)
	sink := NewTextSink(tok, nil, false)
	var got []string
	for _, id := range ids {
		s, _ := sink.Append(id)
		got = append(got, s)
	}
	got = append(got, sink.Flush())
	if joined := strings.Join(got, ""); joined != "Hi 🦙 the" {
		t.Errorf("streamed %q", joined)
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.ContainsRune(s, '\ufffd') }) {
		t.Errorf("a character was split: %q", got)
	}
}

// Encoding from many goroutines shares the word cache safely (run with
// -race) and every one gets the same ids.
func TestConcurrentEncode(t *testing.T) {
	tok := tinyBPE(t, "gpt2")
	const text = "the the the"
	want := tok.Encode(text, false, false)
	done := make(chan []int)
	for i := range 8 {
		go func() {
			tok.Encode(fmt.Sprintf("%d the", i), false, false)
			done <- tok.Encode(text, false, false)
		}()
	}
	for range 8 {
		if diff := cmp.Diff(want, <-done, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

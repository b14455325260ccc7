package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

// englishText is about 4 KB of ordinary English prose: the paragraph
// below, repeated with a counter so the text is not one word cache hit
// after the first few lines.
func englishText() string {
	const para = "The committee met on Tuesday to review the proposal. Several members " +
		"raised concerns about the cost, which had grown by nearly a third since the " +
		"first estimate in March; others argued that delaying the work would only make " +
		"it more expensive. After two hours of discussion, they agreed to ask the " +
		"engineers for a revised plan, with a clear schedule and a budget that includes " +
		"the maintenance of the new bridge for the next 25 years. \"We can't keep " +
		"postponing this,\" said the chair, who's been pushing for the project since 2019.\n"
	var b strings.Builder
	for i := 0; b.Len() < 4096; i++ {
		b.WriteString("Section ")
		b.WriteString(string(rune('A' + i%26)))
		b.WriteString(". ")
		b.WriteString(para)
	}
	return b.String()[:4096]
}

// BenchmarkEncode4KB encodes 4 KB of English with each tokenizer family.
// "warm" keeps the per-word cache across iterations, as a server does;
// "cold" empties it first, the cost of a text of new words.
func BenchmarkEncode4KB(b *testing.B) {
	dir := testdata(b)
	text := englishText()
	toks := []struct {
		name string
		tok  func() *Tokenizer
	}{
		{"spm", func() *Tokenizer { return loadGGUF(b, filepath.Join(dir, "ggml-vocab-llama-spm.gguf")) }},
		{"gpt2", func() *Tokenizer { return loadGGUF(b, filepath.Join(dir, "ggml-vocab-gpt-2.gguf")) }},
		{"llama3", func() *Tokenizer { return loadHF(b, "llama3") }},
		{"qwen3", func() *Tokenizer { return loadHF(b, "qwen3") }},
	}
	for _, tt := range toks {
		for _, cold := range []bool{false, true} {
			if cold && tt.name == "spm" {
				continue // SentencePiece has no word cache
			}
			name := tt.name + "/warm"
			if cold {
				name = tt.name + "/cold"
			}
			b.Run(name, func(b *testing.B) {
				tok := tt.tok()
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					if cold {
						tok.bpe.cache.m = nil
					}
					tok.Encode(text, true, false)
				}
			})
		}
	}
}

// BenchmarkEncodeLongWord is the worst case for merging: one 4 KB word
// (base64-like, no spaces), where a rescan per merge would be quadratic.
func BenchmarkEncodeLongWord(b *testing.B) {
	tok := loadGGUF(b, filepath.Join(testdata(b), "ggml-vocab-gpt-2.gguf"))
	text := strings.Repeat("QmFzZTY0ZW5jb2RlZA", 228)[:4096]
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, false, false)
	}
}

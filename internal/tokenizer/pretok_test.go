package tokenizer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The expected words follow each regex by hand: alternatives in order at
// each position, greedy, with \s+(?!\S) giving back the last space.
func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		pre  string
		in   string
		want []string
	}{
		{"gpt-2", "Hello world", []string{"Hello", " world"}},
		{"gpt-2", "Hello  world", []string{"Hello", " ", " world"}},
		{"gpt-2", "I'm here's IT'S", []string{"I", "'m", " here", "'s", " IT", "'", "S"}},
		{"gpt-2", "abc123 456", []string{"abc", "123", " 456"}},
		{"gpt-2", "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"gpt-2", "a  ", []string{"a", "  "}},
		{"gpt-2", "!!! ?", []string{"!!!", " ?"}},
		{"gpt-2", " \tx", []string{" ", "\t", "x"}},
		{"gpt-2", "", nil},
		{"llama-bpe", "12345678", []string{"123", "456", "78"}},
		{"llama-bpe", "Hello, world!\n\n", []string{"Hello", ",", " world", "!\n\n"}},
		{"llama-bpe", "  indented", []string{" ", " indented"}},
		{"llama-bpe", "IT'S we'Ve", []string{"IT", "'S", " we", "'Ve"}},
		{"llama-bpe", "line1\r\n  x", []string{"line", "1", "\r\n", " ", " x"}},
		{"llama-bpe", "(hello)", []string{"(hello", ")"}},
		{"llama-bpe", "a \n \tb", []string{"a", " \n", " ", "\tb"}},
		{"llama-bpe", "x ", []string{"x", " "}},
		{"llama-bpe", "\n1", []string{"\n", "1"}},
		{"llama-bpe", "a\xffb", []string{"a", "\ufffdb"}},
		{"qwen2", "12345", []string{"1", "2", "3", "4", "5"}},
		{"qwen2", "日本語です。", []string{"日本語です", "。"}},
		{"default", "a+b=12345!", []string{"a", "+", "b", "=", "123", "45", "!"}},
		{"smollm", "x12 y", []string{"x", "1", "2", " y"}},
	}
	for _, tt := range tests {
		p, _, err := preTokenizerFor(tt.pre)
		if err != nil {
			t.Fatal(err)
		}
		got := p.split(tt.in, nil)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tt.pre, tt.in, diff)
		}
	}
}

func TestPreTokenizerUnknown(t *testing.T) {
	if _, _, err := preTokenizerFor("no-such-pre"); err == nil {
		t.Error("an unknown pre-tokenizer was accepted")
	}
}

// Every pre-tokenizer covers its input: the words put back together are
// the (UTF-8-repaired) text, and none is empty.
func FuzzPreTokenizers(f *testing.F) {
	for _, s := range []string{"Hello world", "  a\r\n\tb 123'S", "日本 ١٢٣ x\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, pre := range []string{"default", "llama3", "qwen2", "gpt2", "smollm"} {
			p, _, err := preTokenizerFor(pre)
			if err != nil {
				t.Fatal(err)
			}
			joined := ""
			for _, w := range p.split(s, nil) {
				if w == "" {
					t.Fatalf("%s: empty word in %q", pre, s)
				}
				joined += w
			}
			if want := repairUTF8(s); joined != want {
				t.Fatalf("%s: words of %q join to %q", pre, s, joined)
			}
		}
	})
}

package jinja

import (
	"fmt"
	"path/filepath"
	"testing"
)

func benchMessages(n int) []Message {
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant."}}
	for i := range n {
		msgs = append(msgs,
			Message{Role: "user", Content: fmt.Sprintf("Question %d: what is %d + %d?", i, i, i)},
			Message{Role: "assistant", Content: fmt.Sprintf("<think>\nAdd them.\n</think>\n\n%d", 2*i)})
	}
	return append(msgs, Message{Role: "user", Content: "Thanks."})
}

// BenchmarkQwen3Template renders a 41-message conversation with the Qwen3
// template (parsed once), the per-request cost of a chat completion.
func BenchmarkQwen3Template(b *testing.B) {
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	readJSONB(b, filepath.Join(sharedDir(b), "hf", "qwen3", "tokenizer_config.json"), &cfg)
	tmpl, err := Parse(cfg.ChatTemplate)
	if err != nil {
		b.Fatal(err)
	}
	msgs := benchMessages(20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.RenderChat(msgs, ChatOptions{AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse parses the Qwen3 template, the cost of a model load.
func BenchmarkParse(b *testing.B) {
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	readJSONB(b, filepath.Join(sharedDir(b), "hf", "qwen3", "tokenizer_config.json"), &cfg)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(cfg.ChatTemplate); err != nil {
			b.Fatal(err)
		}
	}
}

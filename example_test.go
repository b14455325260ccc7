package glassbox_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox"
)

// Offline batch inference on the simulated GPU, which needs no files:
// greedy decoding (the zero SamplingParams) is deterministic.
func Example() {
	ctx := context.Background()
	llm, err := glassbox.Open(ctx, glassbox.Options{Sim: &glassbox.SimOptions{}})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	outs, err := llm.Generate(ctx, []string{"Once upon a time", "The capital of France is"},
		glassbox.SamplingParams{MaxTokens: 12})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range outs {
		c := o.Completions[0]
		fmt.Printf("%q: %d tokens (%s)\n%s\n", o.Prompt, len(c.TokenIDs), c.FinishReason, c.Text)
	}
	// Output:
	// "Once upon a time": 12 tokens (length)
	//  spread everything openly gave a silence unless she suffered among feature across
	// "The capital of France is": 12 tokens (length)
	//  of error. Another air beneath each recent guest beyond some engineer
}

// A GGUF model on this CPU, here the 260K-parameter TinyStories model
// glassbox tests with. Temperature 0 gives the model's greedy story.
func ExampleOpen() {
	ctx := context.Background()
	llm, err := glassbox.Open(ctx, glassbox.Options{
		Model:       "stories260K.gguf", // or hf://OWNER/REPO/FILE.gguf
		MaxNumSeqs:  32,
		MaxModelLen: 256,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	outs, err := llm.Generate(ctx, []string{"Once upon a time"}, glassbox.SamplingParams{MaxTokens: 65})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outs[0].Completions[0].Text)
}

// Sampling with a seed is reproducible; n completions of one prompt use
// seed, seed+1, ….
func ExampleLLM_Chat() {
	ctx := context.Background()
	llm, err := glassbox.Open(ctx, glassbox.Options{Sim: &glassbox.SimOptions{}})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	conv := []glassbox.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "Describe the sea."},
	}
	outs, err := llm.Chat(ctx, [][]glassbox.Message{conv},
		glassbox.SamplingParams{N: 2, Temperature: 0.8, TopP: 0.95, Seed: new(int64(7)), MaxTokens: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("prompt: %q\n", outs[0].Prompt)
	for _, c := range outs[0].Completions {
		fmt.Printf("%d: %s\n", c.Index, c.Text)
	}
	// Output:
	// prompt: "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nDescribe the sea.<|im_end|>\n<|im_start|>assistant\n"
	// 0: Another yellow technology published nothing therefore most careful narrow world
	// 1: Every root after school supported therefore many real car earned
}

// Text as it is generated. TimeScale 1 runs the simulated GPU in real
// time, so that tokens come one step at a time; a reader that falls behind
// gets them merged.
func ExampleLLM_Stream() {
	ctx := context.Background()
	llm, err := glassbox.Open(ctx, glassbox.Options{Sim: &glassbox.SimOptions{TimeScale: 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	for c, err := range llm.Stream(ctx, "Once upon a time", glassbox.SamplingParams{MaxTokens: 8}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(c.Text)
		if c.FinishReason != "" {
			fmt.Printf(" [%s]\n", c.FinishReason)
		}
	}
	// Output:
	//  spread everything openly gave a silence unless she [length]
}

// The OpenAI-compatible API, mounted in the caller's own mux, and vLLM's
// metrics on the caller's own registry.
func ExampleLLM_Handler() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	llm, err := glassbox.Open(ctx, glassbox.Options{Sim: &glassbox.SimOptions{}, Registerer: reg})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", llm.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/llm/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0}`))
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, strings.Contains(string(body), `"finish_reason":"length"`))

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "vllm:generation_tokens_total" {
			fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// 200 OK true
	// vllm:generation_tokens_total 5
}

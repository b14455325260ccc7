package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

func storiesPath(t *testing.T) string {
	t.Helper()
	return reftest.Path(t, "models", "stories260K", "stories260K.gguf")
}

// TestServeRealModelGoldenStory: serve --model stories260K.gguf answers a
// greedy completion with the model's documented story, over the API.
func TestServeRealModelGoldenStory(t *testing.T) {
	base, _ := serveTest(t, "--model", storiesPath(t), "--threads", "2")
	var r completionResp
	code := post(t, base+"/v1/completions", map[string]any{
		"model": storiesPath(t), "prompt": "Once upon a time", "max_tokens": 65, "temperature": 0, // the 65 golden ids
	}, &r)
	want := ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said,"
	if code != 200 || len(r.Choices) != 1 || r.Choices[0].Text != want || r.Usage.PromptTokens != 5 {
		t.Fatalf("status %d, prompt tokens %d, text %q\nwant %q", code, r.Usage.PromptTokens, r.Choices[0].Text, want)
	}
}

// TestServeRealModelBatchedEqualsAlone: 32 concurrent greedy requests
// through the API produce exactly what each produces alone.
func TestServeRealModelBatchedEqualsAlone(t *testing.T) {
	base, _ := serveTest(t, "--model", storiesPath(t), "--threads", "2", "--served-model-name", "stories")
	prompts := make([]string, 32)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Once upon a time, %d little %s", i%5, []string{"cats", "dogs", "birds", "girls"}[i%4])
	}
	complete := func(p string) string {
		var r completionResp
		if code := post(t, base+"/v1/completions", map[string]any{"model": "stories", "prompt": p, "max_tokens": 40, "temperature": 0}, &r); code != 200 {
			t.Errorf("status %d", code)
			return ""
		}
		return r.Choices[0].Text
	}
	alone := make([]string, len(prompts))
	for i, p := range prompts {
		alone[i] = complete(p)
	}
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			if got := complete(p); got != alone[i] {
				t.Errorf("prompt %d: batched %q, alone %q", i, got, alone[i])
			}
		})
	}
	wg.Wait()
}

// TestModelRandomInspectAndServe: 'model random' writes a Qwen-architecture
// model, 'model inspect' describes it, and serve answers a chat through its
// Jinja template and byte-level BPE tokenizer.
func TestModelRandomInspectAndServe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-qwen2.gguf")
	var out strings.Builder
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen2", "--shape", "tiny", "--type", "q8_0", "-o", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"model", "inspect", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"architecture:  qwen2: 2 layers, hidden 64", "Q8_0 x", "tokenizer:     gpt2", "chat template:", "KV cache:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
	base, _ := serveTest(t, "--model", path, "--served-model-name", "tiny")
	var r struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	code := post(t, base+"/v1/chat/completions", map[string]any{
		"model": "tiny", "messages": []map[string]string{{"role": "user", "content": "Hello there"}}, "max_tokens": 8, "ignore_eos": true,
	}, &r)
	// <|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n: the
	// template's specials are single tokens, the text byte-level.
	if code != 200 || r.Usage.CompletionTokens != 8 || r.Usage.PromptTokens != len("user\nHello there"+"\n"+"assistant\n")+3 {
		t.Errorf("status %d, usage %+v", code, r.Usage)
	}
	// --mmap maps the file (no repacking) and serves the same way; an
	// alias of the cache type is reported by its one name.
	base, _ = serveTest(t, "--model", path, "--served-model-name", "tiny", "--mmap", "--kv-cache-dtype", "half")
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposition, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`cache_dtype="fp16"`, `kv_cache_dtype="fp16"`} {
		if !strings.Contains(string(exposition), want) {
			t.Errorf("--kv-cache-dtype half: /metrics lacks %s", want)
		}
	}
	code = post(t, base+"/v1/completions", map[string]any{"model": "tiny", "prompt": "Hello", "max_tokens": 8, "ignore_eos": true}, &r)
	if code != 200 || r.Usage.CompletionTokens != 8 {
		t.Errorf("--mmap: status %d, usage %+v", code, r.Usage)
	}
}

// TestModelBench: the llama-bench-style measurement reports both tests
// with one sample per repetition.
func TestModelBench(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"model", "bench", "-p", "16", "-n", "4", "-r", "2", "-t", "1", "-json", storiesPath(t)}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res []model.BenchResult
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(res) != 2 || res[0].Test != "pp16" || res[1].Test != "tg4" || len(res[1].Samples) != 2 || res[1].Min <= 0 || res[1].Median < res[1].Min {
		t.Errorf("results %+v", res)
	}
	if isa := tensor.KernelInfo().ISA; len(res) == 0 || res[0].Kernels != isa+", rows" {
		t.Errorf("an F32 model runs %s on GGUF's rows; results say %+v", isa, res)
	}
	out.Reset()
	if err := run(context.Background(), []string{"model", "bench", "-p", "8", "-n", "4", "-d", "200", "-r", "1", "-t", "1", "-json", storiesPath(t)}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	res = nil
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || len(res) != 2 || res[0].Test != "pp8 @ d200" || res[1].Test != "tg4 @ d200" {
		t.Errorf("at depth: %v %+v", err, res)
	}
}

// TestModelBenchKernels: a result names the layout the weights have, not
// only the CPU's: a Q8_0 model read into memory is repacked where this CPU
// repacks, the same file mapped (-mmap) keeps GGUF's rows.
func TestModelBenchKernels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-q8.gguf")
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen2", "--shape", "tiny", "--type", "q8_0", "-o", path}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	k := tensor.KernelInfo()
	for _, mmap := range []bool{false, true} {
		args := []string{"model", "bench", "-p", "0", "-n", "2", "-r", "1", "-t", "1", "-json", path}
		want := k.ISA + ", rows"
		if mmap {
			args = append(args[:2], append([]string{"-mmap"}, args[2:]...)...)
		} else if k.Layout == "repacked" {
			want = k.ISA + ", repacked (Q8_0)"
		}
		var out strings.Builder
		if err := run(context.Background(), args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var res []model.BenchResult
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil || len(res) != 1 || res[0].Kernels != want {
			t.Errorf("mmap %v: %v %+v, want kernels %q", mmap, err, res, want)
		}
	}
}

// TestModelBenchReadCeiling: -read-bandwidth puts the ceiling measured
// around the tg test in the text, and says why when decode beat it.
func TestModelBenchReadCeiling(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"model", "bench", "-p", "0", "-n", "4", "-r", "1", "-t", "2", "-read-bandwidth", storiesPath(t)}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "kernels: "+tensor.KernelInfo().ISA+", rows\n") {
		t.Errorf("the text does not start with the kernels: %q", out.String())
	}
	if !strings.Contains(out.String(), "of the read ceiling (") || !strings.Contains(out.String(), "before,") {
		t.Errorf("no ceiling in %q", out.String())
	}
	above := ceilingText(model.BenchResult{GBps: 11, ReadBeforeGBps: 10, ReadAfterGBps: 9, ReadCeilingGBps: 10, CeilingShare: 1.1})
	if !strings.HasPrefix(above, "110% of the read ceiling (10.0 GB/s before, 9.0 after): above it") {
		t.Errorf("a share above 100%% reads %q", above)
	}
}

// TestServeRejectsBadSizes: both backends refuse unusable sizes with the
// flag's name, before listening.
func TestServeRejectsBadSizes(t *testing.T) {
	stories := storiesPath(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-num-batched-tokens", "lots"}, "--max-num-batched-tokens"},
		{[]string{"--max-model-len", "-3"}, "--max-model-len"},
		{[]string{"--block-size", "0"}, "block-size"},
		{[]string{"--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization"},
		{[]string{"--model", stories, "--kv-cache-memory-bytes", "1k"}, "--kv-cache-memory-bytes"},
		{[]string{"--model", stories, "--device", "cpu", "--gpu-memory-utilization", "0.5"}, "--gpu-memory-utilization 0.5: the CPU executor"},
		{[]string{"--model", stories, "--block-size", "0"}, "block-size"},
		{[]string{"--model", filepath.Join(t.TempDir(), "missing.gguf")}, "missing.gguf"},
		{[]string{"--model", stories, "--kv-cache-dtype", "fp8"}, "--kv-cache-dtype"},
		{[]string{"--kv-cache-dtype", "fp32"}, "--kv-cache-dtype"},
	} {
		_, err := startServe(context.Background(), append([]string{"--host", "127.0.0.1", "--port", "0"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

// TestModelRandomWithARealVocabulary: --vocab writes random weights with
// another GGUF's tokenizer, whose size replaces the shape's.
func TestModelRandomWithARealVocabulary(t *testing.T) {
	vocab := reftest.Path(t, "testdata", "tokenizer", "ggml-vocab-gpt-2.gguf")
	path := filepath.Join(t.TempDir(), "tiny-gpt2.gguf")
	var out strings.Builder
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen2", "--shape", "tiny", "--vocab", vocab, "-o", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"model", "inspect", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vocab 50257", "tokenizer:     gpt2 (pre \"gpt-2\"), 50257 tokens"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestServeEmbeddingModel: a GGUF that declares pooling serves
// /v1/embeddings through the engine: unit vectors of the hidden size,
// equal for equal inputs; a model that declares none refuses the route.
func TestServeEmbeddingModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "embed.gguf")
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen3", "--shape", "tiny", "--pooling", "last", "-o", path}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	base, _ := serveTest(t, "--model", path, "--served-model-name", "emb")
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if code := post(t, base+"/v1/embeddings", map[string]any{"model": "emb", "input": []string{"the cat", "a dog barks", "the cat"}}, &r); code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(r.Data) != 3 || r.Usage.PromptTokens == 0 {
		t.Fatalf("response %+v", r)
	}
	norm := func(v []float64) (s float64) {
		for _, x := range v {
			s += x * x
		}
		return s
	}
	for _, d := range r.Data {
		if len(d.Embedding) != 64 || norm(d.Embedding) < 0.999 || norm(d.Embedding) > 1.001 {
			t.Errorf("input %d: %d dimensions, squared norm %v", d.Index, len(d.Embedding), norm(d.Embedding))
		}
	}
	if fmt.Sprint(r.Data[0].Embedding) != fmt.Sprint(r.Data[2].Embedding) || fmt.Sprint(r.Data[0].Embedding) == fmt.Sprint(r.Data[1].Embedding) {
		t.Error("equal inputs embed differently, or different ones alike")
	}
	plain := filepath.Join(t.TempDir(), "plain.gguf")
	if err := run(context.Background(), []string{"model", "random", "--shape", "tiny", "-o", plain}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	base, _ = serveTest(t, "--model", plain, "--served-model-name", "gen")
	if code := post(t, base+"/v1/embeddings", map[string]any{"input": "x"}, nil); code != 400 {
		t.Errorf("a generative model's /v1/embeddings: status %d, want 400", code)
	}
}

package cpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// TestDefaultKVBytes: room for every sequence at full length, capped by a
// quarter of available memory and 4 GiB, never below one sequence.
func TestDefaultKVBytes(t *testing.T) {
	for _, c := range []struct {
		perToken    int64
		len, seqs   int
		avail, want int64
	}{
		{100, 1000, 10, 0, 1_000_000},
		{100, 1000, 10, 400_000, 100_000},
		{100, 1000, 10, 40_000, 100_000},     // a quarter is less than one sequence: one sequence
		{1 << 20, 1 << 12, 4096, 0, 4 << 30}, // the 4 GiB cap
	} {
		if got := DefaultKVBytes(c.perToken, c.len, c.seqs, c.avail); got != c.want {
			t.Errorf("DefaultKVBytes(%d, %d, %d, %d) = %d, want %d", c.perToken, c.len, c.seqs, c.avail, got, c.want)
		}
	}
}

// writeModel writes a random tiny model (an embedding one with pooling)
// to a file and returns its path.
func writeModel(t *testing.T, pooling model.Pooling) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shape, _ := model.LookupShape("tiny")
	if err := model.WriteRandom(f, model.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1, Pooling: pooling}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBackendLifecycle: the CPU executor's lifecycle loads the model for
// the limits asked (the model's context where none is), sizes the cache
// from the bytes asked, starts an executor that runs a step, and declares
// what it runs: embeddings once the model read pools, no LoRA, no async
// scheduling, a draft model only when given one.
func TestBackendLifecycle(t *testing.T) {
	b := NewBackend(BackendConfig{Model: writeModel(t, model.PoolNone), Threads: 2})
	defer b.Close()
	if c := b.Capabilities(); c.Embeddings || c.LoRA || c.AsyncScheduling || c.DraftModel || !c.Speculative {
		t.Errorf("capabilities before loading a generative model: %+v", c)
	}
	spec, err := b.Load(executor.Limits{MaxNumSeqs: 4, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if want := (executor.Limits{MaxModelLen: 512, MaxNumSeqs: 4, MaxNumBatchedTokens: DefaultMaxNumBatchedTokens, BlockSize: 16}); spec.Limits != want {
		t.Errorf("limits %+v, want %+v", spec.Limits, want)
	}
	if spec.Embeddings != nil || spec.StepTimeout != DefaultStepTimeout || spec.CacheDtype != "auto" || spec.Info["executor"] != "cpu" {
		t.Errorf("spec %+v", spec)
	}
	per := 2 * 2 * 32 * 2 * 16 // K and V, 2 layers, 2 KV heads of 16 dims, fp16, per block of 16
	n, err := b.KVBlocks(executor.KVMemory{Bytes: int64(10 * per)})
	if err != nil || n != 10 {
		t.Fatalf("KVBlocks of 10 blocks' bytes: %d, %v", n, err)
	}
	started, err := b.Start(n)
	if err != nil {
		t.Fatal(err)
	}
	p := sampling.Defaults()
	p.Temperature = 0
	batch := &engine.Batch{NumTokens: 3, Seqs: []engine.SeqBatch{{Tokens: []int{1, 2, 3}, BlockTable: []int{0}, Sample: true, History: []int{1, 2, 3}, NumPrompt: 3, Params: &p}}}
	r := engine.StepResult{Samples: make([]sampling.Result, 1)}
	if err := started.Executor.Execute(batch, &r); err != nil {
		t.Fatalf("the started executor's step: %v", err)
	}
	if got := engine.CapabilitiesOf(started.Executor); got != b.Capabilities() {
		t.Errorf("the executor declares %+v, its lifecycle %+v", got, b.Capabilities())
	}

	emb := NewBackend(BackendConfig{Model: writeModel(t, model.PoolMean), Threads: 1})
	defer emb.Close()
	spec, err = emb.Load(executor.Limits{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if !emb.Capabilities().Embeddings || spec.Embeddings == nil || spec.Embeddings.Pooling != "mean" {
		t.Errorf("an embedding model: capabilities %+v, embeddings %+v", emb.Capabilities(), spec.Embeddings)
	}
	if c := NewBackend(BackendConfig{Draft: "draft.gguf"}).Capabilities(); !c.DraftModel {
		t.Errorf("with a draft model: %+v", c)
	}
}

// TestBackendRefusesByName: what the CPU executor does not run is refused
// by its flag at Load, before any model is read.
func TestBackendRefusesByName(t *testing.T) {
	for _, c := range []struct {
		cfg  BackendConfig
		want string
	}{
		{BackendConfig{Quantization: "fp8"}, "--quantization fp8"},
		{BackendConfig{KVCacheDtype: "fp7"}, "--kv-cache-dtype"},
		{BackendConfig{Draft: "d.gguf", DraftKVCacheDtype: "fp7"}, "kv_cache_dtype"},
	} {
		b := NewBackend(c.cfg)
		if _, err := b.Load(executor.Limits{BlockSize: 16}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal naming %s", c.cfg, err, c.want)
		}
		b.Close()
	}
}

// TestBackendLoadsThroughTheLoader: the model, its tokenizer and its chat
// template come from the loader (a tokenizer.json beside the GGUF
// replaces its own, as the GPU executor's does).
func TestBackendLoadsThroughTheLoader(t *testing.T) {
	tok := writeTokenizerDir(t)
	b := NewBackend(BackendConfig{Model: writeModel(t, model.PoolNone), Tokenizer: tok, Threads: 1})
	defer b.Close()
	spec, err := b.Load(executor.Limits{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Vocab.VocabSize(); n != 4 {
		t.Errorf("vocabulary of %d tokens, want the tokenizer.json's 4", n)
	}
	if got, err := spec.Chat.Render([]jinja.Message{{Role: "user", Content: "hi"}}, nil); err != nil || got != "[hi]<|end|>" {
		t.Errorf("chat = %q, %v; want the tokenizer_config.json template", got, err)
	}
}

// writeTokenizerDir writes a tokenizer.json of four tokens with a
// tokenizer_config.json's chat template.
func writeTokenizerDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"added_tokens": [{"id": 3, "content": "<|end|>", "special": true}],
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "decoder": {"type": "ByteLevel"},
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "<|end|>",
		"chat_template": "{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}"}`), 0o644)
	return dir
}

package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/fakecuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// writeTiny writes tinyModel's shape with typ weights (an embedding model
// with pooling) to a GGUF file.
func writeTiny(t *testing.T, typ gguf.TensorType, pooling model.Pooling) string {
	t.Helper()
	shape := model.Shape{Name: "tiny64", Arch: "llama", Hidden: 128, Layers: 2, Heads: 2, KVHeads: 1, FFN: 256, Vocab: 512, // the synthetic tokenizer's 260 tokens fit
		Context: 512, RopeBase: 10000, NormEps: 1e-5}
	path := filepath.Join(t.TempDir(), "tiny64.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := model.WriteRandom(f, model.RandomSpec{Shape: shape, Type: typ, Seed: 7, Pooling: pooling}); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeBackend is the lifecycle of cfg on the fake board, which it opens
// at Load (counted in opened).
func fakeBackend(t *testing.T, cfg BackendConfig, opened *int) (*Backend, *fakecuda.GPU) {
	t.Helper()
	d, gpu := fakeDevice(t, fakecuda.Config{Memory: 1 << 30})
	cfg.open = func(DeviceConfig) (*Device, error) { *opened++; return d, nil }
	return NewBackend(cfg), gpu
}

// TestBackendLifecycle: the GPU executor's lifecycle loads the model onto
// the device for the limits (the model's context where none is asked),
// sizes the cache from what is left without allocating anything (a
// sizing that does not fit leaves the device as it was), starts an
// executor that says which kernels it chose, and closes everything,
// each owner after what borrows from it. What it does not run (drafts,
// embeddings) the engine refuses at admission, naming it; its steps no
// longer check.
func TestBackendLifecycle(t *testing.T) {
	opened := 0
	b, gpu := fakeBackend(t, BackendConfig{Model: writeTiny(t, gguf.F16, model.PoolNone), Eager: true}, &opened)
	if c := b.Capabilities(); c != (engine.Capabilities{Name: "the GPU executor"}) {
		t.Errorf("capabilities %+v: the GPU executor runs plain generation only", c)
	}
	empty := gpu.DeviceBytes()
	spec, err := b.Load(executor.Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if want := (executor.Limits{MaxModelLen: 512, MaxNumSeqs: 4, MaxNumBatchedTokens: 64, BlockSize: 16}); spec.Limits != want {
		t.Errorf("limits %+v, want %+v", spec.Limits, want)
	}
	if spec.GPU.PCIBusID == "" || spec.Info["executor"] != "cuda" || spec.CacheDtype != "auto" || spec.GPUMemoryUtilization != DefaultGPUMemoryUtilization {
		t.Errorf("spec %+v", spec)
	}
	loaded := gpu.DeviceBytes()
	if loaded <= empty {
		t.Fatalf("%d bytes on the device after Load, %d before: the model was not uploaded", loaded, empty)
	}
	if _, err := b.KVBlocks(executor.KVMemory{Bytes: 1 << 40}); err == nil || !strings.Contains(err.Error(), "--kv-cache-memory-bytes") {
		t.Errorf("a cache larger than the device: %v, want a refusal naming --kv-cache-memory-bytes", err)
	}
	n, err := b.KVBlocks(executor.KVMemory{Utilization: 0.5})
	if err != nil || n < 1 {
		t.Fatalf("KVBlocks: %d, %v", n, err)
	}
	if got := gpu.DeviceBytes(); got != loaded {
		t.Errorf("%d bytes on the device after sizing the cache, %d before: sizing allocates nothing", got, loaded)
	}
	started, err := b.Start(8)
	if err != nil {
		t.Fatal(err)
	}
	if started.Describe == "" || !strings.Contains(started.Memory, "KV cache") || !strings.Contains(started.Info["kernels"], "cublaslt") {
		t.Errorf("started %+v", started)
	}
	if got := engine.CapabilitiesOf(started.Executor); got != b.Capabilities() {
		t.Errorf("the executor declares %+v, its lifecycle %+v", got, b.Capabilities())
	}
	cfg := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 128, BlockSize: 16, NumBlocks: 8, MaxWaiting: 4,
		Speculative: speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 2, PromptLookupMin: 1, PromptLookupMax: 2}}
	if _, err := engine.New(cfg, started.Executor, nil); err == nil || !strings.Contains(err.Error(), "--speculative-config: the GPU executor") {
		t.Errorf("speculative decoding on the GPU: %v, want it refused by name", err)
	}
	cfg.Speculative = speculative.Config{}
	eng, err := engine.New(cfg, started.Executor, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := sampling.Defaults()
	p.MaxTokens = 1
	_, err = eng.Submit(&engine.Request{ID: "e", Prompt: []int{1, 2}, Params: p, Embed: true})
	var pe *sampling.ParamError
	if !errors.As(err, &pe) || pe.Param != "model" || !strings.Contains(pe.Msg, "does not serve embeddings on the GPU executor") {
		t.Errorf("an embedding request: %v, want it refused at Submit naming the GPU executor", err)
	}
	b.Close()
	b.Close()
	if live := gpu.Live(); len(live) > 0 {
		t.Errorf("left on the board after Close: %v", live)
	}
	if opened != 1 {
		t.Errorf("the device was opened %d times", opened)
	}
}

// TestBackendRefusesBeforeUploading: --quantization is refused before the
// GPU is opened, a model the GPU does not run (an embedding model) and a
// KV cache type it does not keep before anything is uploaded; Close then
// leaves nothing on the board.
func TestBackendRefusesBeforeUploading(t *testing.T) {
	opened := 0
	b, _ := fakeBackend(t, BackendConfig{Quantization: "fp8"}, &opened)
	if _, err := b.Load(executor.Limits{BlockSize: 16}); err == nil || !strings.Contains(err.Error(), "--quantization fp8") || opened != 0 {
		t.Errorf("--quantization: %v (device opened %d times), want a refusal before opening it", err, opened)
	}
	b.Close()
	for _, c := range []struct {
		cfg  BackendConfig
		want string
	}{
		{BackendConfig{Model: writeTiny(t, gguf.F16, model.PoolMean)}, "embedding models"},
		{BackendConfig{Model: writeTiny(t, gguf.F16, model.PoolNone), KVCacheDtype: "bf16"}, "--kv-cache-dtype bf16"},
	} {
		b, gpu := fakeBackend(t, c.cfg, &opened)
		empty := gpu.DeviceBytes()
		if _, err := b.Load(executor.Limits{BlockSize: 16}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal naming %q", c.cfg, err, c.want)
		}
		if got := gpu.DeviceBytes(); got != empty {
			t.Errorf("%+v: %d bytes on the device after the refusal, %d before", c.cfg, got, empty)
		}
		b.Close()
	}
}

// TestBackendLoadsThroughTheLoader: the model, its tokenizer and its chat
// template come from the loader, as the CPU executor's do (a
// tokenizer.json replaces the GGUF's own).
func TestBackendLoadsThroughTheLoader(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"added_tokens": [{"id": 3, "content": "<|end|>", "special": true}],
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "decoder": {"type": "ByteLevel"},
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "<|end|>",
		"chat_template": "{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}"}`), 0o644)
	opened := 0
	b, _ := fakeBackend(t, BackendConfig{Model: writeTiny(t, gguf.F16, model.PoolNone), Tokenizer: dir}, &opened)
	defer b.Close()
	spec, err := b.Load(executor.Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, BlockSize: 16})
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

package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// TestBackendLifecycle: the simulated GPU's lifecycle builds the executor
// at Load with the hardware's step sizes and the model's context where
// none is asked, sizes the cache from the profile's memory, hands the
// same executor over at Start, and declares everything the engine asks
// (a draft model only with one configured, LoRA only when priced).
func TestBackendLifecycle(t *testing.T) {
	b := NewBackend(Config{Hardware: "h200", Model: "llama-3.1-8b"})
	defer b.Close()
	if _, err := b.KVBlocks(executor.KVMemory{}); err == nil {
		t.Error("KVBlocks before Load sized a cache")
	}
	want := engine.Capabilities{Name: "the simulated GPU", Embeddings: true, Speculative: true, AsyncScheduling: true}
	if c := b.Capabilities(); c != want {
		t.Errorf("capabilities %+v, want %+v", c, want)
	}
	spec, err := b.Load(executor.Limits{MaxNumSeqs: 8, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if l := spec.Limits; l.MaxNumSeqs != 8 || l.MaxNumBatchedTokens != 8192 || l.MaxModelLen != 131072 || l.BlockSize != 16 {
		t.Errorf("limits %+v: want 8 sequences as asked, H200's 8192 tokens and the model's 131072 positions", l)
	}
	if spec.GPU.Simulated == nil || spec.GPU.Count != 1 || spec.Embeddings == nil || spec.Chat != nil || spec.GPUMemoryUtilization != DefaultGPUMemoryUtilization {
		t.Errorf("spec %+v", spec)
	}
	n, err := b.KVBlocks(executor.KVMemory{})
	if err != nil || n < 1 {
		t.Fatalf("KVBlocks: %d, %v", n, err)
	}
	if half, _ := b.KVBlocks(executor.KVMemory{Utilization: 0.5}); half >= n {
		t.Errorf("%d blocks at half the memory, %d at the default", half, n)
	}
	started, err := b.Start(n)
	if err != nil {
		t.Fatal(err)
	}
	if got := engine.CapabilitiesOf(started.Executor); got != want {
		t.Errorf("the executor declares %+v, its lifecycle %+v", got, want)
	}

	drafting := NewBackend(Config{Hardware: "h200", Model: "llama-3.1-8b", LoRA: &LoRA{MaxLoRAs: 1, Rank: 8},
		Speculative: speculative.Config{Method: speculative.MethodDraftModel, Model: "llama-3.2-1b", NumSpeculativeTokens: 2, RejectionSampleMethod: speculative.RejectSynthetic,
			Synthetic: []float64{0.5, 0.3}}})
	if c := drafting.Capabilities(); !c.DraftModel || !c.LoRA {
		t.Errorf("with a draft model and LoRA: %+v", c)
	}
	if _, err := drafting.Load(executor.Limits{BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	started, err = drafting.Start(16)
	if err != nil {
		t.Fatal(err)
	}
	if got := engine.CapabilitiesOf(started.Executor); got != drafting.Capabilities() {
		t.Errorf("the executor declares %+v, its lifecycle %+v", got, drafting.Capabilities())
	}
}

// TestAnotherRankSharesTheModel: a data-parallel rank prices the model the
// first rank read, not its config.json read again (which may be gone or
// changed since the server started).
func TestAnotherRankSharesTheModel(t *testing.T) {
	const config = `{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
		"num_key_value_heads": 8, "num_hidden_layers": 32, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000}`
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBackend(Config{Hardware: "h100", Model: path, TensorParallel: 2})
	if _, err := b.Load(executor.Limits{BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rank, err := b.Another(nil)
	if err != nil {
		t.Fatalf("another rank after its config.json went: %v", err)
	}
	if got, want := rank.(*Executor).CostModel().Model.Params, b.exec.CostModel().Model.Params; got != want {
		t.Errorf("another rank prices %v weights, the first %v", got, want)
	}
}

package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/loader"
)

// DefaultGPUMemoryUtilization is vLLM's default share of a GPU's memory.
const DefaultGPUMemoryUtilization = 0.9

// BackendConfig says which GPU runs which model, and how, with vLLM's
// flags' values.
type BackendConfig struct {
	Device DeviceConfig
	Model  string // a local GGUF file, mapped (read as it is uploaded)
	// Tokenizer is a tokenizer.json (or its directory) used instead of
	// the GGUF's (--tokenizer).
	Tokenizer string
	// KVCacheDtype is --kv-cache-dtype: "", auto or the model's own
	// type (KVCacheType). Quantization is --quantization: refused.
	KVCacheDtype, Quantization string
	// Eager runs every step kernel by kernel (--enforce-eager).
	Eager  bool
	Logger *slog.Logger

	// open opens the device (nil: OpenDevice): the host tests' fake
	// board.
	open func(DeviceConfig) (*Device, error)
}

// Backend is the GPU executor's lifecycle (executor.Lifecycle): Load
// opens the GPU, reads the model through the loader and uploads it with
// its step buffers for the limits; KVBlocks sizes the cache from the
// memory left, allocating nothing; Start allocates the cache and makes
// the executor; Close frees each owner after what borrows from it (the
// executor, the model on the GPU, the GPU, the model's file).
type Backend struct {
	cfg    BackendConfig
	dev    *Device
	model  *loader.Model
	loaded *Loaded
	exec   *Executor
	sizes  Sizes
	mem    Memory
	util   float64 // the share KVBlocks sized with
}

// NewBackend is the lifecycle of a GPU executor for cfg.
func NewBackend(cfg BackendConfig) *Backend { return &Backend{cfg: cfg} }

// capabilities is what the GPU executor runs: plain generation, with
// structured outputs and every sampling parameter; no speculative
// decoding, embeddings, LoRA adapters or async scheduling yet.
func capabilities() engine.Capabilities { return engine.Capabilities{Name: "the GPU executor"} }

// Capabilities declares what the executor runs (engine.Capable).
func (e *Executor) Capabilities() engine.Capabilities { return capabilities() }

// Capabilities is what the executor Start makes will declare.
func (b *Backend) Capabilities() engine.Capabilities { return capabilities() }

// Load opens the GPU, reads the model and uploads it (weights and the
// step buffers of l's sizes). What the GPU executor does not run is
// refused by name before anything is uploaded.
func (b *Backend) Load(l executor.Limits) (*executor.Spec, error) {
	if q := b.cfg.Quantization; q != "" {
		return nil, fmt.Errorf("--quantization %s: the GPU executor runs the GGUF file's own weight types (F32, F16, BF16; Q8_0 as fp16)", q)
	}
	open := b.cfg.open
	if open == nil {
		open = OpenDevice
	}
	dev, err := open(b.cfg.Device)
	if err != nil {
		return nil, err
	}
	b.dev = dev
	if b.model, err = loader.Load(loader.Config{Path: b.cfg.Model, Tokenizer: b.cfg.Tokenizer, MMap: true, Logger: b.cfg.Logger}); err != nil {
		return nil, err
	}
	m, w := b.model, b.model.Weights
	if err := CheckWeights(w); err != nil {
		return nil, fmt.Errorf("%s on the GPU: %w", b.cfg.Model, err)
	}
	kvType, err := KVCacheType(w, b.cfg.KVCacheDtype) // the model's: bf16 for BF16 weights, fp16 otherwise
	if err != nil {
		return nil, err
	}
	cacheDtype := kvType
	if b.cfg.KVCacheDtype == "" || b.cfg.KVCacheDtype == "auto" {
		cacheDtype = "auto"
	}
	def := executor.Limits{MaxModelLen: m.ContextLen, MaxNumSeqs: 256, MaxNumBatchedTokens: 2048} // vLLM's defaults,
	if dev.Info.TotalMemory >= 70<<30 {
		def.MaxNumSeqs, def.MaxNumBatchedTokens = 1024, 8192 // raised on large GPUs as vLLM does
	}
	limits := l.Or(def)
	b.sizes = Sizes{MaxTokens: limits.MaxNumBatchedTokens, MaxSeqs: limits.MaxNumSeqs, MaxModelLen: limits.MaxModelLen, BlockSize: limits.BlockSize}
	if b.loaded, err = dev.Upload(w, b.sizes); err != nil {
		return nil, fmt.Errorf("load %s on the GPU: %w", b.cfg.Model, err)
	}
	gemm, _ := GEMMType(w) // CheckWeights passed: every matrix has a GPU type
	return &executor.Spec{
		Name: b.cfg.Model,
		Describe: fmt.Sprintf("%s: %s (%s, %d layers, %s weights on the GPU as %s, %s KV cache)", dev.Describe(), m.Name, w.Arch, w.Config.Layers,
			w.Layers[0].Q.Type, gemm, kvType),
		Vocab: m.Vocab, Chat: m.Chat, EOS: m.EOG,
		Limits: limits, GPUMemoryUtilization: DefaultGPUMemoryUtilization, CacheDtype: cacheDtype,
		Info: map[string]string{"executor": "cuda", "hardware": dev.Info.Name, "model": w.Arch, "tensor_parallel_size": "1",
			"kernels": "cuda ptx (clang), cublaslt " + dev.BLASLt().VersionString(), "kv_cache_dtype": kvType},
		GPU: executor.GPU{PCIBusID: dev.Info.PCIBusID},
	}, nil
}

var errNotLoaded = errors.New("no model is loaded on the GPU")

// KVBlocks sizes the cache from the memory the loaded model leaves
// (Loaded.KVBlocks): it reads the device's free memory and allocates
// nothing.
func (b *Backend) KVBlocks(m executor.KVMemory) (int, error) {
	if b.loaded == nil {
		return 0, fmt.Errorf("size the KV cache: %w", errNotLoaded)
	}
	b.util = cmp.Or(m.Utilization, DefaultGPUMemoryUtilization)
	n, mem, err := b.loaded.KVBlocks(b.util, m.Bytes, b.sizes.BlockSize, b.cfg.Eager)
	b.mem = mem
	if err != nil {
		return 0, fmt.Errorf("size the KV cache of %s on the GPU: %w", b.cfg.Model, err)
	}
	return n, nil
}

// Start allocates the KV cache of numBlocks blocks and makes the
// executor, saying which attention kernels it chose and how the GPU's
// memory is split.
func (b *Backend) Start(numBlocks int) (*executor.Started, error) {
	if b.loaded == nil {
		return nil, fmt.Errorf("new cuda executor: %w", errNotLoaded)
	}
	exec, err := b.loaded.Start(Config{Sizes: b.sizes, NumBlocks: numBlocks, Eager: b.cfg.Eager, Logger: b.cfg.Logger})
	if err != nil {
		return nil, err
	}
	b.exec = exec
	m, gib := b.mem, func(n int64) float64 { return float64(n) / (1 << 30) }
	return &executor.Started{Executor: exec, Describe: exec.Kernels(),
		Info: map[string]string{"kernels": "cuda ptx (clang): " + exec.Kernels() + "; cublaslt " + b.dev.BLASLt().VersionString()},
		Memory: fmt.Sprintf("GPU memory: weights %.2f GiB, step buffers %.2f GiB, KV cache %.2f GiB, CUDA graphs (kept) %.2f GiB, other %.2f GiB, of %.1f GiB (--gpu-memory-utilization %g)",
			gib(m.Weights), gib(m.Activations), gib(m.KV), gib(m.Graphs), gib(m.Other), gib(m.Total), b.util),
	}, nil
}

// Close frees each owner after what borrows from it: the executor, the
// model on the GPU, the GPU, the model's file. What Load or Start left
// half made is freed as well; a second Close does nothing.
func (b *Backend) Close() {
	if b.exec != nil {
		b.exec.Close()
	}
	if b.loaded != nil {
		b.loaded.Close()
	}
	if b.dev != nil {
		b.dev.Close()
	}
	if b.model != nil {
		b.model.Close()
		b.model = nil
	}
}

var _ executor.Lifecycle = (*Backend)(nil)

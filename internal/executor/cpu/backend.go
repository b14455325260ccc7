package cpu

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/loader"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// Scheduling defaults on a CPU, where a step is slow and memory is shared
// with everything else: fewer sequences and a smaller step than on a GPU.
const (
	DefaultMaxNumSeqs          = 64
	DefaultMaxNumBatchedTokens = 2048
)

// DefaultStepTimeout is the engine's watchdog on the CPU: one
// chunked-prefill step of a large model on a few cores takes minutes, so
// long enough for that and still short of forever.
const DefaultStepTimeout = 30 * time.Minute

// BackendConfig says which model the CPU executor runs and how, with
// vLLM's flags' values.
type BackendConfig struct {
	Model string // a local GGUF file
	// Tokenizer is a tokenizer.json (or its directory) used instead of
	// the GGUF's (--tokenizer).
	Tokenizer string
	// MMap maps the file instead of reading it into memory (--mmap).
	MMap bool
	// Threads computes the model (0: one per CPU).
	Threads int
	// KVCacheDtype is --kv-cache-dtype: "", auto (fp16), fp16 or fp32 by
	// one of their names (model.ParseKVDtype); any other is refused.
	KVCacheDtype string
	// Quantization is --quantization: refused (the GGUF's own weight
	// types run).
	Quantization string
	// Draft is speculative decoding's draft model, a GGUF file with the
	// target's tokenizer, its K/V of DraftKVCacheDtype (empty: the
	// target's).
	Draft, DraftKVCacheDtype string
	Logger                   *slog.Logger
}

// Backend is the CPU executor's lifecycle (executor.Lifecycle): Load
// reads the model through the loader, KVBlocks sizes the cache in host
// memory, Start allocates it and makes the executor, Close releases the
// threads and then the model.
type Backend struct {
	cfg                   BackendConfig
	model                 *loader.Model
	kvDtype, draftKVDtype model.KVDtype
	limits                executor.Limits
	threads               int
	exec                  *Executor
}

// NewBackend is the lifecycle of a CPU executor for cfg.
func NewBackend(cfg BackendConfig) *Backend {
	threads := cfg.Threads
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	return &Backend{cfg: cfg, threads: threads}
}

// capabilities is what the CPU executor runs: speculative decoding (a
// draft model when it has one), embeddings when the model pools; no LoRA
// adapters (the GGUF's own weights run) and no async scheduling (its
// host work is its compute).
func capabilities(pooling model.Pooling, draft bool) engine.Capabilities {
	pools := pooling == model.PoolMean || pooling == model.PoolCLS || pooling == model.PoolLast
	return engine.Capabilities{Name: "the CPU executor", Embeddings: pools, Speculative: true, DraftModel: draft}
}

// Capabilities declares what the executor runs (engine.Capable).
func (e *Executor) Capabilities() engine.Capabilities {
	return capabilities(e.runner.W.Config.Pooling, e.draft != nil)
}

// Capabilities is what the executor Start makes will declare; whether it
// embeds is known once Load has read the model.
func (b *Backend) Capabilities() engine.Capabilities {
	pooling := model.PoolNone
	if b.model != nil {
		pooling = b.model.Weights.Config.Pooling
	}
	return capabilities(pooling, b.cfg.Draft != "")
}

// Load reads the model (and its draft) for a context and steps within l.
func (b *Backend) Load(l executor.Limits) (*executor.Spec, error) {
	if q := b.cfg.Quantization; q != "" {
		return nil, fmt.Errorf("--quantization %s: the CPU executor runs the GGUF file's own weight types (quantise the file instead, e.g. glassbox model random --type q8_0)", q)
	}
	var err error
	if b.kvDtype, err = model.ParseKVDtype(b.cfg.KVCacheDtype); err != nil {
		return nil, fmt.Errorf("--kv-cache-dtype: %w", err)
	}
	b.draftKVDtype = b.kvDtype
	if b.cfg.Draft != "" && b.cfg.DraftKVCacheDtype != "" {
		if b.draftKVDtype, err = model.ParseKVDtype(b.cfg.DraftKVCacheDtype); err != nil {
			return nil, fmt.Errorf("--speculative-config kv_cache_dtype: %w", err)
		}
	}
	m, err := loader.Load(loader.Config{Path: b.cfg.Model, Tokenizer: b.cfg.Tokenizer, MMap: b.cfg.MMap, Draft: b.cfg.Draft, Logger: b.cfg.Logger})
	if err != nil {
		return nil, err
	}
	b.model = m
	b.limits = l.Or(executor.Limits{MaxModelLen: m.ContextLen, MaxNumSeqs: DefaultMaxNumSeqs, MaxNumBatchedTokens: DefaultMaxNumBatchedTokens})
	w := m.Weights
	spec := &executor.Spec{
		Name: b.cfg.Model, Describe: b.describe(),
		Vocab: m.Vocab, Chat: m.Chat, EOS: m.EOG,
		Limits: b.limits, CacheDtype: cacheDtypeLabel(b.cfg.KVCacheDtype, b.kvDtype), StepTimeout: DefaultStepTimeout,
		DraftMaxModelLen: m.DraftContextLen,
		Info: map[string]string{"executor": "cpu", "hardware": "cpu", "model": w.Arch, "tensor_parallel_size": "1",
			"kernels": w.Kernels().String(), "kv_cache_dtype": b.kvDtype.String()},
	}
	if wc := w.Config; wc.Pooling != model.PoolNone {
		spec.Embeddings = &executor.Embeddings{Dim: wc.Hidden, Pooling: wc.Pooling.String()}
	}
	return spec, nil
}

// cacheDtypeLabel is cache_config_info's cache_dtype: "auto" as vLLM
// writes its default, else the type's one name whichever alias chose it,
// as glassbox_executor_info names it.
func cacheDtypeLabel(flag string, dt model.KVDtype) string {
	if flag == "" || flag == "auto" {
		return "auto"
	}
	return dt.String()
}

var errNotLoaded = errors.New("no model is loaded")

// KVBlocks is how many blocks the KV cache holds: m.Bytes of them, or
// when that is 0 the default sizing (DefaultKVBytes for the most
// sequences of the longest context). A draft model's K/V share the
// blocks.
func (b *Backend) KVBlocks(m executor.KVMemory) (int, error) {
	if b.model == nil {
		return 0, fmt.Errorf("size the KV cache: %w", errNotLoaded)
	}
	if m.Utilization != 0 && m.Bytes == 0 {
		// Refused rather than ignored: a share of GPU memory has no meaning
		// in memory the CPU shares with everything else.
		return 0, fmt.Errorf("--gpu-memory-utilization %g: the CPU executor has no GPU memory to share out; size its KV cache with --kv-cache-memory-bytes (default: room for --max-num-seqs full-length sequences)", m.Utilization)
	}
	perToken := b.model.Weights.KVBytesPerTokenOf(b.kvDtype)
	if d := b.model.Draft; d != nil {
		perToken += d.KVBytesPerTokenOf(b.draftKVDtype)
	}
	kvBytes := m.Bytes
	if kvBytes == 0 {
		kvBytes = DefaultKVBytes(perToken, b.limits.MaxModelLen, b.limits.MaxNumSeqs, loader.MemAvailable())
	}
	return int(kvBytes / (int64(max(b.limits.BlockSize, 1)) * perToken)), nil
}

// Start makes the executor with its KV cache of numBlocks blocks.
func (b *Backend) Start(numBlocks int) (*executor.Started, error) {
	if b.model == nil {
		return nil, fmt.Errorf("new cpu executor: %w", errNotLoaded)
	}
	exec, err := New(b.model.Weights, Config{NumBlocks: numBlocks, BlockSize: b.limits.BlockSize, Threads: b.threads, KVDtype: b.kvDtype,
		Draft: b.model.Draft, DraftKVDtype: b.draftKVDtype})
	if err != nil {
		return nil, err
	}
	b.exec = exec
	return &executor.Started{Executor: exec}, nil
}

// Close stops the compute threads, then releases the model's memory or
// mapping.
// A second Close does nothing.
func (b *Backend) Close() {
	if b.exec != nil {
		b.exec.Close()
		b.exec = nil
	}
	if b.model != nil {
		b.model.Close()
		b.model = nil
	}
}

// describe is the banner's line.
func (b *Backend) describe() string {
	m := b.model
	w := m.Weights
	s := fmt.Sprintf("this CPU (%d threads, %s kernels): %s (%s, %d layers, %s weights, %s tokenizer, %s KV cache)",
		b.threads, w.Kernels(), m.Name, w.Arch, w.Config.Layers, w.Layers[0].Q.Type, m.Vocab.Kind(), b.kvDtype)
	if d := m.Draft; d != nil {
		s += fmt.Sprintf(", drafting with a %s of %d layers (%s weights, %s KV cache)", d.Arch, d.Config.Layers, d.Layers[0].Q.Type, b.draftKVDtype)
	}
	return s
}

// DefaultKVBytes sizes the KV cache when none is asked for: room for
// maxSeqs full-length sequences, but at most a quarter of the available
// memory (0: unknown) and 4 GiB, and never less than one full-length
// sequence.
func DefaultKVBytes(perToken int64, maxModelLen, maxSeqs int, available int64) int64 {
	want := perToken * int64(maxModelLen) * int64(maxSeqs)
	limit := int64(4 << 30)
	if available > 0 {
		limit = min(limit, available/4)
	}
	return max(min(want, limit), perToken*int64(maxModelLen))
}

var _ executor.Lifecycle = (*Backend)(nil)

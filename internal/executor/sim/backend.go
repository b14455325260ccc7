package sim

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// DefaultGPUMemoryUtilization is the share of a simulated GPU's memory the
// KV cache sizes from by default (vLLM's 0.9 and its activation reserve,
// as its H100 runs measured).
const DefaultGPUMemoryUtilization = 0.92

// Backend is the simulated GPU's lifecycle (executor.Lifecycle): Load
// builds the executor from the profiles, KVBlocks sizes the cache from
// the profile's memory, Start hands the executor over; it holds nothing
// Close must free.
type Backend struct {
	cfg    Config
	exec   *Executor
	limits executor.Limits
}

// NewBackend is the lifecycle of an executor built from cfg.
func NewBackend(cfg Config) *Backend { return &Backend{cfg: cfg} }

// capabilities is what the simulated GPU runs: everything the engine asks
// of an executor, a draft model when it has one and LoRA adapters when it
// prices them.
func capabilities(draft, lora bool) engine.Capabilities {
	return engine.Capabilities{Name: "the simulated GPU", Embeddings: true, Speculative: true, DraftModel: draft, LoRA: lora, AsyncScheduling: true}
}

// Capabilities declares what the executor runs (engine.Capable).
func (e *Executor) Capabilities() engine.Capabilities {
	return capabilities(e.draft != nil, e.lora != nil)
}

// Capabilities is what the executor Load builds will declare.
func (b *Backend) Capabilities() engine.Capabilities {
	return capabilities(b.cfg.Speculative.Method == speculative.MethodDraftModel, b.cfg.LoRA != nil)
}

// Load builds the executor and says what it simulates.
func (b *Backend) Load(l executor.Limits) (*executor.Spec, error) {
	exec, err := New(b.cfg)
	if err != nil {
		return nil, err
	}
	b.exec = exec
	info := exec.Info()
	hw := exec.CostModel().HW
	m := exec.CostModel().Model
	seqs, batched := hw.Defaults()
	b.limits = l.Or(executor.Limits{MaxModelLen: info.MaxModelLen, MaxNumSeqs: seqs, MaxNumBatchedTokens: batched})
	weights, kv := m.WeightsName(), "bf16"
	if m.KVElementBytes() == 1 {
		kv = "fp8"
	}
	describe := fmt.Sprintf("the simulated executor: %s on %d× %s (%s weights, %s KV)", info.Model, info.TensorParallel, info.Hardware, weights, kv)
	if info.Draft != "" {
		describe += fmt.Sprintf(", drafting with %s on %d", info.Draft, info.DraftTensorParallel)
	}
	infoLabels := map[string]string{
		"executor": info.Executor, "hardware": info.Hardware, "model": info.Model,
		"tensor_parallel_size": strconv.Itoa(info.TensorParallel),
		// The host time the simulator adds per step, so that a replay
		// (doctor --verify) can add it too.
		"host_overhead_seconds": strconv.FormatFloat(b.cfg.HostOverhead.Seconds(), 'g', -1, 64),
	}
	if q := b.cfg.Quantization; q != "" {
		// The weights' type (vLLM's --quantization), so that a replay
		// (doctor --verify) runs the same arithmetic.
		infoLabels["quantization"] = q
	}
	if b.cfg.ExpertParallel {
		// vLLM's --enable-expert-parallel, for a replay.
		infoLabels["enable_expert_parallel"] = "True"
	}
	if m.Format(m.Weights.MLP).FP8 || m.Format(m.Weights.Experts).FP8 {
		// The MLPs' (or experts') GEMMs run on FP8 tensor cores, by the
		// flag or the checkpoint: the doctor reads MFU against the FP8 peak.
		infoLabels["weights"] = "fp8"
	}
	return &executor.Spec{
		Name: info.Model, Describe: describe,
		Vocab: exec.Vocab(), EOS: []int{exec.Vocab().EOS()},
		Limits: b.limits, GPUMemoryUtilization: DefaultGPUMemoryUtilization, CacheDtype: cmp.Or(b.cfg.KVCacheDtype, "auto"),
		// Any model profile embeds, its hidden size long; its vectors may
		// be shortened as a Matryoshka model's.
		Embeddings:       &executor.Embeddings{Dim: m.Hidden, Pooling: "simulated", Truncatable: true},
		DraftMaxModelLen: info.DraftMaxModelLen,
		Info:             infoLabels,
		PeakFLOPs:        info.PeakFLOPs, PeakBandwidth: info.MemBandwidth,
		GPU: executor.GPU{Simulated: &hw, Count: info.TensorParallel},
	}, nil
}

var errNotLoaded = errors.New("no simulated executor is loaded")

// KVBlocks sizes the cache from the profile's memory (KVCacheBlocks).
func (b *Backend) KVBlocks(m executor.KVMemory) (int, error) {
	if b.exec == nil {
		return 0, fmt.Errorf("size the KV cache: %w", errNotLoaded)
	}
	return b.exec.KVCacheBlocks(cmp.Or(m.Utilization, DefaultGPUMemoryUtilization), m.Bytes, b.limits.BlockSize)
}

// Start hands over the executor: the simulated cache holds nothing.
func (b *Backend) Start(int) (*executor.Started, error) {
	if b.exec == nil {
		return nil, fmt.Errorf("new sim executor: %w", errNotLoaded)
	}
	return &executor.Started{Executor: b.exec}, nil
}

// Close has nothing to release.
func (b *Backend) Close() {}

// Another is one more copy of the loaded executor on clock, for a
// data-parallel rank (vLLM's --data-parallel-size: each rank its own
// GPUs, KV cache and scheduler).
func (b *Backend) Another(clock engine.Clock) (engine.Executor, error) {
	if b.exec == nil {
		return nil, fmt.Errorf("another sim executor: %w", errNotLoaded)
	}
	c := b.cfg
	c.Clock, c.loaded = clock, b.exec.loaded
	return New(c)
}

// OffloadTier is a CPU KV offload tier of size bytes of host memory in
// blocks of blockSize tokens, and the host link's speed (vLLM's native
// offloading connector, --kv-offloading-size).
func (b *Backend) OffloadTier(size float64, blockSize int) (engine.Offload, error) {
	if b.exec == nil {
		return engine.Offload{}, fmt.Errorf("size the KV offload tier: %w", errNotLoaded)
	}
	cm := b.exec.CostModel()
	n, bytes, bw := costmodel.HostKV(cm.HW, cm.Model, b.exec.Info().TensorParallel, blockSize, size)
	return engine.Offload{Blocks: n, BlockBytes: bytes, Bandwidth: bw}, nil
}

var _ executor.Lifecycle = (*Backend)(nil)

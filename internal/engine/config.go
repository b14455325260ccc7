package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Config is the engine's scheduling and cache configuration, named after
// vLLM's flags.
type Config struct {
	MaxNumSeqs          int  // --max-num-seqs
	MaxNumBatchedTokens int  // --max-num-batched-tokens: token budget per step
	MaxModelLen         int  // --max-model-len: prompt plus output
	BlockSize           int  // --block-size, tokens per KV block
	NumBlocks           int  // KV blocks that fit in the cache
	EnablePrefixCaching bool // --enable-prefix-caching
	MaxWaiting          int  // queued requests beyond which Submit fails with ErrOverloaded
	EOS                 []int
	Logger              *slog.Logger
	// RecordPhases keeps each request's prefill chunks, decode runs and
	// preemptions for FinishedEvent.Phases (--collect-detailed-traces).
	RecordPhases bool
	// Clock is the engine's time; nil means the wall clock.
	Clock Clock
	// Profiling reports whether a profile is recording (the profiler's),
	// so that a KernelTimer executor times its kernels meanwhile; nil
	// means never. The engine asks once per step.
	Profiling func() bool
	// LoRAs are the LoRA adapters served (--lora-modules), by the name a
	// Request gives; MaxLoRAs (--max-loras) is the most one step runs.
	LoRAs    []string
	MaxLoRAs int

	// Speculative is --speculative-config (the zero value: off). The
	// engine drafts by prompt lookup itself; a draft model is the
	// executor's (Capabilities.DraftModel).
	Speculative speculative.Config

	// AsyncScheduling is --async-scheduling: the executor overlaps its
	// host work for the next step with the device's for this one (its
	// Capabilities must say it does; the engine's loop is the same).
	AsyncScheduling bool

	// StepTimeout is the watchdog (serve's --step-timeout): a step whose
	// Execute has not returned after this long of wall time kills the
	// engine with DeathStepTimeout. 0 turns it off. With it, Execute runs
	// on a goroutine of its own that the engine waits for.
	StepTimeout time.Duration

	// Offload is the CPU KV offload tier (--kv-offloading-size); the
	// zero value has none.
	Offload Offload

	// KVCacheMetrics samples GPU blocks' residency (--kv-cache-metrics)
	// at KVCacheMetricsSample (--kv-cache-metrics-sample, in (0, 1]; 0
	// is vLLM's default, 0.01) for StepEvent.BlockEvictions.
	KVCacheMetrics       bool
	KVCacheMetricsSample float64
}

// DefaultKVCacheMetricsSample is vLLM's --kv-cache-metrics-sample.
const DefaultKVCacheMetricsSample = 0.01

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("max-num-seqs must be at least 1, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("max-num-batched-tokens must be at least 1, got %d", c.MaxNumBatchedTokens)
	case c.MaxModelLen < 2:
		return fmt.Errorf("max-model-len must be at least 2, got %d", c.MaxModelLen)
	case c.BlockSize < 1:
		return fmt.Errorf("block-size must be at least 1, got %d", c.BlockSize)
	case c.NumBlocks < 1:
		return fmt.Errorf("the KV cache holds no block of %d tokens: give it more memory (--kv-cache-memory-bytes, --gpu-memory-utilization)", c.BlockSize)
	case c.MaxWaiting < 1:
		return fmt.Errorf("max waiting requests must be at least 1, got %d", c.MaxWaiting)
	case len(c.LoRAs) > 0 && c.MaxLoRAs < 1:
		return fmt.Errorf("max-loras must be at least 1 with LoRA adapters, got %d", c.MaxLoRAs)
	case c.StepTimeout < 0:
		return fmt.Errorf("step timeout must not be negative (0 turns the watchdog off), got %s", c.StepTimeout)
	case c.Speculative.Enabled() && (c.Speculative.NumSpeculativeTokens < 1 || c.Speculative.NumSpeculativeTokens > speculative.MaxSpeculativeTokens):
		return fmt.Errorf("num_speculative_tokens must be in [1, %d], got %d", speculative.MaxSpeculativeTokens, c.Speculative.NumSpeculativeTokens)
	}
	if err := c.Offload.validate(c.EnablePrefixCaching); err != nil {
		return err
	}
	if c.KVCacheMetrics && c.KVCacheMetricsSample != 0 {
		if err := checkSample(c.KVCacheMetricsSample); err != nil {
			return err
		}
	}
	if need := (c.MaxModelLen + c.BlockSize - 1) / c.BlockSize; need > c.NumBlocks {
		return fmt.Errorf("max-model-len %d needs %d KV blocks but the cache holds %d (%d tokens): lower --max-model-len or give the KV cache more memory",
			c.MaxModelLen, need, c.NumBlocks, c.NumBlocks*c.BlockSize)
	}
	return nil
}

//go:build !nocuda

package replica

import (
	"github.com/glassbox-llm/glassbox/internal/executor"
	cudaexec "github.com/glassbox-llm/glassbox/internal/executor/cuda"
)

// cudaLifecycle is the GPU executor for cfg's GGUF model: the file mapped
// (read as it is uploaded), the tokenizer and chat template through the
// same loader as the CPU's.
func cudaLifecycle(cfg *Config) (executor.Lifecycle, error) {
	return cudaexec.NewBackend(cudaexec.BackendConfig{
		Device: cudaexec.DeviceConfig{Ordinal: cfg.CUDA.Ordinal, BLASLt: cfg.CUDA.BLASLt, BLASLtDirs: cfg.CUDA.BLASLtDirs},
		Model:  cfg.Model, Tokenizer: cfg.Tokenizer, KVCacheDtype: cfg.KVCacheDtype, Quantization: cfg.Quantization,
		Eager: cfg.EnforceEager, Logger: cfg.Logger,
	}), nil
}

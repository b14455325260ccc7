//go:build !nocuda

package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	cudaexec "github.com/glassbox-llm/glassbox/internal/executor/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// cudaGPUMemoryUtilization is vLLM's default share of a GPU's memory.
const cudaGPUMemoryUtilization = 0.9

// cudaBackend opens the GPU and loads a GGUF model for the CUDA executor:
// the file mapped (read as it is uploaded), the tokenizer and chat
// template as on the CPU. What the GPU executor does not run yet is
// refused by name before any device memory is spent.
func cudaBackend(cfg *Config) (b *backend, err error) {
	switch {
	case cfg.AsyncScheduling:
		return nil, errors.New("--async-scheduling is not on the GPU executor yet (the simulator's)")
	case cfg.Speculative.Enabled():
		return nil, errors.New("--speculative-config: speculative decoding is not on the GPU executor yet (the CPU and the simulator run it)")
	}
	dev, err := cudaexec.OpenDevice(cudaexec.DeviceConfig{Ordinal: cfg.CUDA.Ordinal, BLASLt: cfg.CUDA.BLASLt, BLASLtDirs: cfg.CUDA.BLASLtDirs})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			dev.Close()
		}
	}()
	l, err := cpu.Load(cpu.LoadConfig{Path: cfg.Model, Tokenizer: cfg.Tokenizer, MMap: true, KVDtype: model.KVF16, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	w := l.Weights
	if err := cudaexec.CheckWeights(w); err != nil {
		return nil, fmt.Errorf("%s on the GPU: %w", cfg.Model, err)
	}
	kvType, err := cudaexec.KVCacheType(w, cfg.KVCacheDtype) // the model's: bf16 for BF16 weights, fp16 otherwise
	if err != nil {
		return nil, err
	}
	cacheDtype := kvType
	if cfg.KVCacheDtype == "" || cfg.KVCacheDtype == "auto" {
		cacheDtype = "auto"
	}
	if cfg.GPUMemoryUtilization == 0 {
		cfg.GPUMemoryUtilization = cudaGPUMemoryUtilization
	}
	seqs, batched := 256, 2048 // vLLM's defaults, raised on large GPUs as vLLM does
	if dev.Info.TotalMemory >= 70<<30 {
		seqs, batched = 1024, 8192
	}
	var (
		closeCounters func() // the NVML exporter's, once started
		loaded        *cudaexec.Loaded
		exec          *cudaexec.Executor
		mem           cudaexec.Memory
		sizes         cudaexec.Sizes
	)
	describe := fmt.Sprintf("%s: %s (%s, %d layers, %s weights on the GPU as %s, %s KV cache)", dev.Describe(), l.Name, w.Arch, w.Config.Layers,
		w.Layers[0].Q.Type, gpuType(w), kvType)
	b = &backend{
		model: l.Vocab, chat: l.Chat, toolParser: templateParser(l.Chat.Template()), eos: l.EOG, name: cfg.Model, describe: describe,
		maxModelLen: l.ContextLen, defaultSeqs: seqs, defaultBatched: batched, cacheDtype: cacheDtype,
		executorInfo: map[string]string{"executor": "cuda", "hardware": dev.Info.Name, "model": w.Arch, "tensor_parallel_size": "1",
			"kernels": "cuda ptx (clang), cublaslt " + dev.BLASLt().VersionString(), "kv_cache_dtype": kvType},
		// Sizing the KV cache uploads the model (the cache takes what is
		// left); a sizing that fails leaves nothing on the GPU, and a
		// second one starts from an empty device.
		blocks: func(kvBytes int64, blockSize, maxModelLen, maxNumSeqs, maxNumBatchedTokens int) (int, error) {
			if loaded != nil {
				loaded.Close()
				loaded = nil
			}
			sizes = cudaexec.Sizes{MaxTokens: maxNumBatchedTokens, MaxSeqs: maxNumSeqs, MaxModelLen: maxModelLen, BlockSize: blockSize}
			l, n, m, err := dev.Fit(w, sizes, cfg.GPUMemoryUtilization, kvBytes, cfg.EnforceEager)
			mem = m
			if err != nil {
				return 0, fmt.Errorf("load %s on the GPU: %w", cfg.Model, err)
			}
			loaded = l
			return n, nil
		},
		start: func(numBlocks, blockSize int) (engine.Executor, error) {
			var err error
			if exec, err = loaded.Start(cudaexec.Config{Sizes: sizes, NumBlocks: numBlocks, Eager: cfg.EnforceEager, Logger: cfg.Logger}); err != nil {
				return nil, err
			}
			b.describe += "; " + exec.Kernels()
			b.executorInfo["kernels"] = "cuda ptx (clang): " + exec.Kernels() + "; cublaslt " + dev.BLASLt().VersionString()
			return exec, nil
		},
		memoryLine: func() string {
			return fmt.Sprintf("GPU memory: weights %.2f GiB, step buffers %.2f GiB, KV cache %.2f GiB, CUDA graphs (kept) %.2f GiB, other %.2f GiB, of %.1f GiB (--gpu-memory-utilization %g)",
				gib(mem.Weights), gib(mem.Activations), gib(mem.KV), gib(mem.Graphs), gib(mem.Other), gib(mem.Total), cfg.GPUMemoryUtilization)
		},
		close: func() {
			if closeCounters != nil {
				closeCounters()
			}
			// Each owner after what borrows from it: the executor, the
			// model on the GPU, the GPU, the model's file.
			if exec != nil {
				exec.Close()
			}
			if loaded != nil {
				loaded.Close()
			}
			dev.Close()
			l.Close()
		},
	}
	b.gpuCounters = func(interval time.Duration, hostname string, log *slog.Logger) (*dcgm.NVMLExporter, error) {
		e, stop, err := gpuCounters(dev.Info.PCIBusID, interval, hostname, log)
		closeCounters = stop
		return e, err
	}
	return b, nil
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

// gpuType names the type the GPU holds w's matrices in.
func gpuType(w *model.Weights) string {
	t, err := cudaexec.GEMMType(w)
	if err != nil {
		return "?"
	}
	return t
}

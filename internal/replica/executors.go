package replica

import (
	"errors"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/speculative"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// The executors a replica runs, each behind its lifecycle
// (executor.Lifecycle, implemented in its own package): which one Config
// asks for, what of Config each takes, and loading it. Everything after
// (sizing, starting, closing) is the same for all three (replica.go).

// chosen is an executor's lifecycle, loaded: what it said of its model,
// and why --device auto took the CPU ("" otherwise).
type chosen struct {
	life executor.Lifecycle
	spec *executor.Spec
	note string
}

// chooseExecutor is the simulator without a model, else the executor
// cfg.Device names; auto takes the GPU when it runs the model and the
// configuration (want), and says in note why it took the CPU otherwise.
// On error nothing is left open.
func chooseExecutor(cfg *Config, want *engine.Config) (*chosen, error) {
	if cfg.Model == "" {
		if cfg.Device == "cuda" {
			return nil, errors.New("--device cuda runs a --model on the GPU; without one glassbox serves the simulator")
		}
		return load(simLifecycle(cfg), cfg, want)
	}
	switch cfg.Device {
	case "cpu":
		return load(cpuLifecycle(cfg), cfg, want)
	case "cuda":
		life, err := cudaLifecycle(cfg)
		var x *chosen
		if err == nil {
			x, err = load(life, cfg, want)
		}
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		return x, nil
	case "", "auto":
		life, err := cudaLifecycle(cfg)
		if err == nil {
			var x *chosen
			if x, err = load(life, cfg, want); err == nil {
				return x, nil
			}
		}
		note := fmt.Sprintf("running on the CPU (--device auto): %v", err)
		cfg.Logger.Debug(note)
		x, err := load(cpuLifecycle(cfg), cfg, want)
		if err != nil {
			return nil, err
		}
		x.note = note
		return x, nil
	}
	return nil, fmt.Errorf("--device %q: want cuda, cpu or auto", cfg.Device)
}

// load refuses, by name, what want asks of life that its executor does
// not run, before anything is loaded; then loads the model for cfg's
// sizes. On error life is closed.
func load(life executor.Lifecycle, cfg *Config, want *engine.Config) (*chosen, error) {
	err := want.CheckCapabilities(life.Capabilities())
	var spec *executor.Spec
	if err == nil {
		spec, err = life.Load(executor.Limits{MaxModelLen: cfg.MaxModelLen, MaxNumSeqs: cfg.MaxNumSeqs,
			MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, BlockSize: cfg.BlockSize})
	}
	if err != nil {
		life.Close()
		return nil, err
	}
	return &chosen{life: life, spec: spec}, nil
}

// simLifecycle is the simulated GPU of cfg.Sim, with the engine's flags
// it models.
func simLifecycle(cfg *Config) executor.Lifecycle {
	s := cfg.Sim
	s.Clock, s.AsyncScheduling, s.Speculative = cfg.Clock, cfg.AsyncScheduling, cfg.Speculative
	s.Quantization, s.KVCacheDtype = cfg.Quantization, cfg.KVCacheDtype
	if cfg.DataParallelSize > 1 {
		s.DataParallel = cfg.DataParallelSize // the ranks expert parallelism spans
	}
	if l := cfg.LoRA; l != nil {
		s.LoRA = &sim.LoRA{MaxLoRAs: l.MaxLoRAs, Rank: l.MaxRank}
	}
	return sim.NewBackend(s)
}

// cpuLifecycle is the CPU executor for cfg's GGUF model (read into
// memory, or with MMap mapped, for the life of the replica).
func cpuLifecycle(cfg *Config) executor.Lifecycle {
	c := cpu.BackendConfig{Model: cfg.Model, Tokenizer: cfg.Tokenizer, MMap: cfg.MMap, Threads: cfg.Threads,
		KVCacheDtype: cfg.KVCacheDtype, Quantization: cfg.Quantization, Logger: cfg.Logger}
	if sp := &cfg.Speculative; sp.Method == speculative.MethodDraftModel {
		c.Draft, c.DraftKVCacheDtype = sp.Model, sp.DraftKVCacheDtype
	}
	return cpu.NewBackend(c)
}

// templateParser is the tool-call parser a chat template calls for:
// hermes for ChatML (no usable template), which glassbox renders tools
// into in that format.
func templateParser(c executor.Chat) string {
	if c == nil || c.Template() == "" {
		return toolcall.Hermes
	}
	return toolcall.Detect(c.Template())
}

// CUDAConfig says which GPU the CUDA executor opens and where cuBLASLt
// is (the executor's DeviceConfig, kept here so that a build without
// the GPU executor, -tags nocuda, links none of it).
type CUDAConfig struct {
	Ordinal int
	// BLASLt is cuBLASLt's file; empty searches the usual places, with
	// BLASLtDirs first.
	BLASLt     string
	BLASLtDirs []string
}

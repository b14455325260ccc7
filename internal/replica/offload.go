package replica

import (
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
)

// offloader is an executor with a host KV tier it prices (the simulated
// GPU's).
type offloader interface {
	OffloadTier(size float64, blockSize int) (engine.Offload, error)
}

// offload is the engine's CPU KV offload tier for --kv-offloading-size
// and --kv-offloading-backend, refused by name where it cannot be: on an
// executor without one, with another backend, or too small for a block.
func offload(cfg *Config, life executor.Lifecycle, spec *executor.Spec, blockSize int) (engine.Offload, error) {
	tier, ok := life.(offloader)
	size := cfg.KVOffloadingSize
	switch backend := strings.ToLower(cfg.KVOffloadingBackend); {
	case size == 0:
		return engine.Offload{}, nil
	case math.IsNaN(size) || math.IsInf(size, 0) || size < 0:
		return engine.Offload{}, fmt.Errorf("--kv-offloading-size %v: want GiB of host memory, more than 0", size)
	case backend != "" && backend != "native":
		return engine.Offload{}, fmt.Errorf("--kv-offloading-backend %s: glassbox offloads with vLLM's native backend only (native); LMCache is not here", cfg.KVOffloadingBackend)
	case !ok && spec.Info["executor"] == "cpu":
		return engine.Offload{}, fmt.Errorf("--kv-offloading-size: the CPU executor's KV cache is in host memory already; the simulated GPU (no --model) offloads to host memory")
	case !ok:
		return engine.Offload{}, fmt.Errorf("--kv-offloading-size: this executor has no host KV tier; the simulated GPU (no --model) prices vLLM's")
	case cfg.NoPrefixCaching:
		return engine.Offload{}, fmt.Errorf("--kv-offloading-size needs prefix caching: offloaded blocks are found by their prefix-cache hashes")
	}
	o, err := tier.OffloadTier(size*(1<<30), blockSize)
	if err != nil {
		return o, err
	}
	// Past 32-bit block ids (4 PiB of 2 MiB blocks) the count does
	// not fit the tier, nor, far past them, an int: refuse by the flag.
	if n := size * (1 << 30) / float64(o.BlockBytes); o.BlockBytes > 0 && n > math.MaxInt32 {
		return o, fmt.Errorf("--kv-offloading-size %v GiB is %.3g KV blocks of %d tokens (%d bytes); the offload tier holds at most %d", size, n, blockSize, o.BlockBytes, math.MaxInt32)
	}
	if o.Blocks < 1 {
		return o, fmt.Errorf("--kv-offloading-size %v GiB holds no KV block of %d tokens (%d bytes)", size, blockSize, o.BlockBytes)
	}
	return o, nil
}

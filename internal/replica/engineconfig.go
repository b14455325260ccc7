package replica

import (
	"cmp"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// The engine's configuration, from Config and the executor's Spec: what is
// asked of it beyond its sizes (features, checked against what the
// executor runs before it loads), then the sizes the executor was loaded
// for and the KV cache it sized.

// checkSpeculative refuses, by name, the speculative decoding this
// replica cannot run: what spec.Check refuses of the deployment. Each
// executor checks its draft model itself (the loader a GGUF, sim.New a
// model profile).
func checkSpeculative(cfg *Config) error {
	sp := &cfg.Speculative
	if !sp.Enabled() {
		return nil
	}
	return sp.Check(speculative.Deployment{Simulated: cfg.Model == "", TensorParallel: max(cfg.Sim.TensorParallel, 1)})
}

// features is what cfg asks of the engine beyond its sizes: what an
// executor must declare it runs (engine.Capabilities) for the engine to
// admit the configuration.
func features(cfg *Config) engine.Config {
	c := engine.Config{Speculative: cfg.Speculative, AsyncScheduling: cfg.AsyncScheduling}
	if l := cfg.LoRA; l != nil {
		for _, m := range l.Modules {
			c.LoRAs = append(c.LoRAs, m.Name)
		}
		c.MaxLoRAs = l.MaxLoRAs
	}
	return c
}

// engineConfig completes c, the features asked, with the sizes the
// executor was loaded for and its KV cache (sized from cfg's memory), and
// checks it before the executor allocates the cache.
func engineConfig(c *engine.Config, cfg *Config, spec *executor.Spec, life executor.Lifecycle) error {
	sp := &c.Speculative
	if sp.Enabled() && sp.DraftMaxModelLen == 0 {
		sp.DraftMaxModelLen = spec.DraftMaxModelLen // vLLM's default: the draft's own context
	}
	cfg.Speculative = *sp
	l := spec.Limits
	c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen, c.BlockSize = l.MaxNumSeqs, l.MaxNumBatchedTokens, l.MaxModelLen, l.BlockSize
	c.EnablePrefixCaching = !cfg.NoPrefixCaching
	c.MaxWaiting = cfg.MaxQueuedRequests
	c.EOS, c.Logger, c.RecordPhases, c.Clock, c.Profiling = spec.EOS, cfg.Logger, cfg.RecordPhases, cfg.Clock, cfg.Profiling
	cfg.GPUMemoryUtilization = cmp.Or(cfg.GPUMemoryUtilization, spec.GPUMemoryUtilization)
	var err error
	if c.NumBlocks, err = life.KVBlocks(executor.KVMemory{Bytes: cfg.KVCacheMemoryBytes, Utilization: cfg.GPUMemoryUtilization}); err != nil {
		return err
	}
	if c.Offload, err = offload(cfg, life, spec, c.BlockSize); err != nil {
		return err
	}
	c.KVCacheMetrics, c.KVCacheMetricsSample = cfg.KVCacheMetrics, cfg.KVCacheMetricsSample
	return c.Validate()
}

// stepTimeout is the engine's watchdog: asked is Config.StepTimeout,
// def the executor's default.
func stepTimeout(asked, def time.Duration, wall bool) time.Duration {
	switch {
	case asked < 0 || asked == 0 && !wall:
		return 0
	case asked > 0:
		return asked
	}
	return def
}

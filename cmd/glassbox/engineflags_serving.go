package main

import (
	"flag"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/replica"
)

// servingFlags are vLLM's flags beyond one engine's own cache and
// scheduler: the CPU KV offload tier, the KV residency metrics, and
// data-parallel ranks behind the one API.
type servingFlags struct {
	dataParallel      int
	offloadingSize    float64
	offloadingBackend string
	cacheMetrics      bool
	cacheMetricsRate  float64
}

func (k *servingFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&k.dataParallel, "data-parallel-size", 1, "engine ranks behind the one API, each a copy of the model on its own GPUs with its own KV cache, "+
		"the API sending each request to the rank of least waiting×4+running as vLLM's (the simulator only)")
	fs.Float64Var(&k.offloadingSize, "kv-offloading-size", 0, "GiB of host memory for a CPU KV offload tier, summed over the tensor-parallel ranks as vLLM's: "+
		"every KV block computed is copied there and a prefix evicted from the GPU is loaded back over PCIe (the simulator only; 0: none)")
	fs.StringVar(&k.offloadingBackend, "kv-offloading-backend", "native", "the offload tier's backend: native (vLLM's OffloadingConnector with its CPU backend)")
	fs.BoolVar(&k.cacheMetrics, "kv-cache-metrics", false, "export the KV block residency histograms (vllm:kv_block_{lifetime,idle_before_evict,reuse_gap}_seconds), sampling blocks at --kv-cache-metrics-sample")
	fs.Float64Var(&k.cacheMetricsRate, "kv-cache-metrics-sample", engine.DefaultKVCacheMetricsSample, "share of KV blocks --kv-cache-metrics follows, in (0, 1]")
}

// apply sets the replica's share of these flags; the replica refuses what
// its executor cannot do. A rank count under 1 is refused here: the
// replica reads 0 as its default, one rank, which the flag's 0 is not.
func (k *servingFlags) apply(c *replica.Config) error {
	if k.dataParallel < 1 {
		return fmt.Errorf("--data-parallel-size %d: want 1 or more", k.dataParallel)
	}
	c.DataParallelSize = k.dataParallel
	c.KVOffloadingSize, c.KVOffloadingBackend = k.offloadingSize, k.offloadingBackend
	c.KVCacheMetrics, c.KVCacheMetricsSample = k.cacheMetrics, k.cacheMetricsRate
	return nil
}

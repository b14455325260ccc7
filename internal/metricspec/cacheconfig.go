package metricspec

import "strconv"

// CacheConfig is the KV-cache configuration vllm:cache_config_info
// carries as labels, as vLLM's CacheConfig.metrics_info() writes them:
// str() of each field, so booleans are "True"/"False" and unset values
// "None".
type CacheConfig struct {
	BlockSize             int
	NumGPUBlocks          int
	EnablePrefixCaching   bool
	GPUMemoryUtilization  float64
	CacheDtype            string // "auto", or the K/V element type
	KVCacheMemoryBytes    int64  // --kv-cache-memory-bytes; 0 when unset
	PrefixCachingHashAlgo string
}

// Label names of vllm:cache_config_info that readers use.
const (
	CacheBlockSize    = "block_size"
	CacheNumGPUBlocks = "num_gpu_blocks"
	CachePrefix       = "enable_prefix_caching"
	CacheGPUMemUtil   = "gpu_memory_utilization"
	CacheKVBytes      = "kv_cache_memory_bytes"
)

// Labels are the info labels (without engine).
func (c CacheConfig) Labels() map[string]string {
	return map[string]string{
		CacheBlockSize:             strconv.Itoa(c.BlockSize),
		CacheNumGPUBlocks:          strconv.Itoa(c.NumGPUBlocks),
		"num_cpu_blocks":           "None",
		CachePrefix:                PythonBool(c.EnablePrefixCaching),
		CacheGPUMemUtil:            PyRepr(c.GPUMemoryUtilization),
		"cache_dtype":              c.CacheDtype,
		CacheKVBytes:               pyOptionalInt(c.KVCacheMemoryBytes),
		"prefix_caching_hash_algo": c.PrefixCachingHashAlgo,
	}
}

// pyOptionalInt is str() of an Optional[int]: "None" for 0.
func pyOptionalInt(n int64) string {
	if n == 0 {
		return "None"
	}
	return strconv.FormatInt(n, 10)
}

package metricspec

import "strconv"

// CacheConfig is the KV-cache configuration vllm:cache_config_info
// carries as labels. vLLM writes str() of every field of its CacheConfig
// (booleans "True"/"False", unset values "None"), so the series has the
// same 33 labels (plus engine) whatever the model; the fields below are
// those glassbox has a value for, the rest take the values vLLM 0.30
// reports for an attention-only model without offloading.
type CacheConfig struct {
	BlockSize int
	// UserSpecifiedBlockSize is whether --block-size was given.
	UserSpecifiedBlockSize bool
	NumGPUBlocks           int
	// MaxModelLen gives kv_cache_max_concurrency: how many full-length
	// requests the cache holds (kv_cache_size_tokens / max_model_len).
	MaxModelLen           int
	EnablePrefixCaching   bool
	GPUMemoryUtilization  float64
	CacheDtype            string // "auto", or the K/V element type
	KVCacheMemoryBytes    int64  // --kv-cache-memory-bytes; 0 when unset
	PrefixCachingHashAlgo string
	KVOffloadingSize      float64 // --kv-offloading-size in GiB; 0 when unset
}

// Label names of vllm:cache_config_info that readers use.
const (
	CacheBlockSize      = "block_size"
	CacheNumGPUBlocks   = "num_gpu_blocks"
	CachePrefix         = "enable_prefix_caching"
	CacheGPUMemUtil     = "gpu_memory_utilization"
	CacheKVBytes        = "kv_cache_memory_bytes"
	CacheSizeTokens     = "kv_cache_size_tokens"
	CacheMaxConcurrency = "kv_cache_max_concurrency"
)

// Labels are the info labels (without engine).
func (c CacheConfig) Labels() map[string]string {
	tokens := c.NumGPUBlocks * c.BlockSize
	concurrency := "None"
	if c.MaxModelLen > 0 {
		concurrency = PyRepr(float64(tokens) / float64(c.MaxModelLen))
	}
	return map[string]string{
		"_block_size_resolved":                   "True",
		CacheBlockSize:                           strconv.Itoa(c.BlockSize),
		"cache_dtype":                            c.CacheDtype,
		"enable_mamba_fine_grained_prefix_cache": "False",
		CachePrefix:                              PythonBool(c.EnablePrefixCaching),
		CacheGPUMemUtil:                          PyRepr(c.GPUMemoryUtilization),
		"is_attention_free":                      "False",
		"kv_cache_dtype_skip_layers":             "[]",
		"kv_cache_layout":                        "None",
		CacheMaxConcurrency:                      concurrency,
		CacheKVBytes:                             pyOptionalInt(c.KVCacheMemoryBytes),
		CacheSizeTokens:                          strconv.Itoa(tokens),
		"kv_offloading_backend":                  "native",
		"kv_offloading_size":                     pyOptionalFloat(c.KVOffloadingSize),
		"kv_sharing_fast_prefill":                "False",
		"mamba_block_size":                       "None",
		"mamba_cache_dtype":                      "auto",
		"mamba_cache_mode":                       "none",
		"mamba_page_size_padded":                 "None",
		"mamba_ssm_cache_dtype":                  "auto",
		"num_cpu_blocks":                         "None",
		CacheNumGPUBlocks:                        strconv.Itoa(c.NumGPUBlocks),
		"num_gpu_blocks_override":                "None",
		"prefix_cache_retention_interval":        "0",
		"prefix_caching_hash_algo":               c.PrefixCachingHashAlgo,
		"prefix_match_unit":                      "None",
		"replayssm_buffer_len":                   "16",
		"skip_page_size_padded":                  "None",
		"sliding_window":                         "None",
		"use_kda_recoverssm":                     "False",
		"use_replayssm":                          "False",
		"user_specified_block_size":              PythonBool(c.UserSpecifiedBlockSize),
		"user_specified_mamba_block_size":        "False",
	}
}

// pyOptionalInt is str() of an Optional[int]: "None" for 0.
func pyOptionalInt(n int64) string {
	if n == 0 {
		return "None"
	}
	return strconv.FormatInt(n, 10)
}

// pyOptionalFloat is str() of an Optional[float]: "None" for 0.
func pyOptionalFloat(v float64) string {
	if v == 0 {
		return "None"
	}
	return PyRepr(v)
}

package metricspec

import (
	"fmt"
	"strconv"
	"strings"
)

// Deprecated is a family vLLM once exported and has since hidden or
// removed. glassbox exports it, with its replacement's value, for
// consumers written against an older vLLM (--show-hidden-metrics-for-version).
type Deprecated struct {
	Family
	// LastMinor is the last vLLM 0.x release that exported it without
	// --show-hidden-metrics-for-version (vllm/v1/metrics/loggers.py history).
	LastMinor int
	// Of is the family whose value it carries.
	Of string
}

// Names of the deprecated families.
const (
	GPUCacheUsagePerc         = "vllm:gpu_cache_usage_perc"
	GPUPrefixCacheQueries     = "vllm:gpu_prefix_cache_queries_total"
	GPUPrefixCacheHits        = "vllm:gpu_prefix_cache_hits_total"
	TimePerOutputTokenSeconds = "vllm:time_per_output_token_seconds"
)

// deprecatedFamilies are vLLM V1's: the gpu_* names deprecated in 0.9.2,
// hidden in 0.11 and removed in 0.12, and time_per_output_token_seconds,
// deprecated in 0.11, hidden in 0.12–0.14 and removed in 0.15. HELP texts
// are vLLM's, missing spaces included.
var deprecatedFamilies = []Deprecated{
	{Family: Family{Name: GPUCacheUsagePerc, Kind: Gauge,
		Help: "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead."},
		LastMinor: 10, Of: KVCacheUsagePerc},
	{Family: Family{Name: GPUPrefixCacheQueries, Kind: Counter,
		Help: "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead."},
		LastMinor: 10, Of: PrefixCacheQueries},
	{Family: Family{Name: GPUPrefixCacheHits, Kind: Counter,
		Help: "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead."},
		LastMinor: 10, Of: PrefixCacheHits},
	{Family: Family{Name: TimePerOutputTokenSeconds, Kind: Histogram, Buckets: fixed(TokenStepBuckets),
		Help: "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead."},
		LastMinor: 11, Of: InterTokenLatency},
}

// HiddenFor lists the deprecated families a consumer of vLLM version v
// (0.N or 0.N.P, as --show-hidden-metrics-for-version takes it) still
// expects: those vLLM 0.N exported by default. vLLM itself matches only its
// own previous minor version; glassbox serves any older one.
func HiddenFor(v string) ([]Deprecated, error) {
	minor, err := parseMinor(v)
	if err != nil {
		return nil, err
	}
	var out []Deprecated
	for _, d := range deprecatedFamilies {
		if minor <= d.LastMinor {
			out = append(out, d)
		}
	}
	return out, nil
}

// DeprecatedFamilies lists every deprecated family glassbox can export.
func DeprecatedFamilies() []Deprecated { return append([]Deprecated(nil), deprecatedFamilies...) }

func parseMinor(v string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "0" {
		return 0, fmt.Errorf("not a vLLM version (0.N or 0.N.P): %q", v)
	}
	for _, p := range parts[1:] {
		if _, err := strconv.Atoi(p); err != nil {
			return 0, fmt.Errorf("not a vLLM version (0.N or 0.N.P): %q", v)
		}
	}
	minor, _ := strconv.Atoi(parts[1])
	return minor, nil
}

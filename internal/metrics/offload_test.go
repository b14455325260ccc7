package metrics

import (
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// TestOffloadFamilies: with an offload tier the connector's families
// carry the transfers the engine reports (loads and stores in the flat
// families and the deprecated transfer_type ones, with vLLM's byte
// buckets), the look-ups, the tier's pins as shares of it and the loads
// by stage; cached prompt tokens split into the device's and the host's;
// without a tier none of the connector's families exists.
func TestOffloadFamilies(t *testing.T) {
	cfg := testConfig()
	cfg.Offload = true
	cfg.Stats = func() engine.Stats {
		return engine.Stats{Waiting: 3, Offload: engine.OffloadStats{Blocks: 200, Storing: 10, Loading: 40, LoadsQueued: 1, LoadsInFlight: 1, LoadsDone: 1}}
	}
	m, reg := newTestMetrics(t, cfg)
	m.ObserveStep(&engine.StepEvent{
		PromptTokens: 1000, CachedTokens: 900, ExternalTokens: 600,
		ExternalQueries: 2000, ExternalHits: 600, ExternalLookups: 2,
		Offload: engine.OffloadEvent{
			Loads:              []engine.Transfer{{Bytes: 50e6, Seconds: 0.001}},
			Stores:             []engine.Transfer{{Bytes: 2e6, Seconds: 0.0001}, {Bytes: 4e6, Seconds: 0.0002}},
			StoreBlocks:        []int{1, 2},
			AllocationFailures: 3,
		},
	})
	text := scrape(t, reg)
	for _, want := range []string{
		"# HELP vllm:kv_offload_load_bytes_total Total bytes loaded from offload storage to GPU.\n# TYPE vllm:kv_offload_load_bytes_total counter\n" +
			`vllm:kv_offload_load_bytes_total{engine="0",model_name="test-model"} 5e+07`,
		`vllm:kv_offload_store_bytes_total{engine="0",model_name="test-model"} 6e+06`,
		`vllm:kv_offload_load_size_bucket{engine="0",le="6e+07",model_name="test-model"} 1.0`,
		`vllm:kv_offload_load_size_bucket{engine="0",le="4e+07",model_name="test-model"} 0.0`,
		`vllm:kv_offload_total_bytes_total{engine="0",model_name="test-model",transfer_type="CPU_to_GPU"} 5e+07`,
		`vllm:kv_offload_total_bytes_total{engine="0",model_name="test-model",transfer_type="GPU_to_CPU"} 6e+06`,
		`vllm:kv_offload_size_count{engine="0",model_name="test-model",transfer_type="GPU_to_CPU"} 2.0`,
		`vllm:kv_offload_cpu_allocation_size_sum{engine="0",model_name="test-model"} 3.0`,
		`vllm:kv_offload_allocation_failure_total{engine="0",model_name="test-model"} 3.0`,
		`vllm:kv_offload_lookup_sync_delay_seconds_count{engine="0",model_name="test-model"} 2.0`,
		`vllm:kv_offload_lookup_async_delay_seconds_count{engine="0",model_name="test-model"} 0.0`,
		`vllm:external_prefix_cache_queries_total{engine="0",model_name="test-model"} 2000.0`,
		`vllm:external_prefix_cache_hits_total{engine="0",model_name="test-model"} 600.0`,
		`vllm:prompt_tokens_by_source_total{engine="0",model_name="test-model",source="external_kv_transfer"} 600.0`,
		`vllm:prompt_tokens_by_source_total{engine="0",model_name="test-model",source="local_cache_hit"} 300.0`,
		`vllm:prompt_tokens_by_source_total{engine="0",model_name="test-model",source="local_compute"} 100.0`,
		`vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="test-model",source="device"} 300.0`,
		`vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="test-model",source="host"} 600.0`,
		`vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="test-model",source="disk"} 0.0`,
		`vllm:prompt_tokens_cached_total{engine="0",model_name="test-model"} 900.0`,
		`vllm:kv_offload_cpu_cache_usage_perc{engine="0",model_name="test-model"} 0.25`,
		`vllm:kv_offload_cpu_cache_write_usage_perc{engine="0",model_name="test-model"} 0.05`,
		`vllm:kv_offload_cpu_cache_read_usage_perc{engine="0",model_name="test-model"} 0.2`,
		`vllm:num_requests_kv_fetch_by_stage{engine="0",model_name="test-model",stage="in_progress"} 1.0`,
		`vllm:num_requests_waiting_by_reason{engine="0",model_name="test-model",reason="capacity"} 3.0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the exposition lacks\n%s", want)
		}
	}
	_, plain := newTestMetrics(t, testConfig())
	text = scrape(t, plain)
	for _, absent := range []string{"vllm:kv_offload_", "vllm:num_requests_kv_fetch_by_stage", "vllm:kv_block_"} {
		if strings.Contains(text, absent) {
			t.Errorf("%s families exported without an offload tier or --kv-cache-metrics", absent)
		}
	}
	if !strings.Contains(text, `vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="test-model",source="p2p"} 0.0`) {
		t.Error("prompt_tokens_cached_by_source is not at 0 from start-up without a tier")
	}
}

// TestResidencyFamilies: --kv-cache-metrics' histograms observe each
// sampled eviction's lifetime and idle time once and each reuse gap.
func TestResidencyFamilies(t *testing.T) {
	cfg := testConfig()
	cfg.KVCacheMetrics = true
	m, reg := newTestMetrics(t, cfg)
	m.ObserveStep(&engine.StepEvent{BlockEvictions: []engine.BlockEviction{
		{Lifetime: 70, Idle: 31, Gaps: [3]float64{20, 0.5}, NumGaps: 2},
		{Lifetime: 0.003, Idle: 0.003},
	}})
	text := scrape(t, reg)
	for _, want := range []string{
		"# HELP vllm:kv_block_lifetime_seconds Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics (controlled by --kv-cache-metrics-sample).\n" +
			"# TYPE vllm:kv_block_lifetime_seconds histogram\n",
		`vllm:kv_block_lifetime_seconds_bucket{engine="0",le="120.0",model_name="test-model"} 2.0`,
		`vllm:kv_block_lifetime_seconds_bucket{engine="0",le="60.0",model_name="test-model"} 1.0`,
		`vllm:kv_block_idle_before_evict_seconds_sum{engine="0",model_name="test-model"} 31.003`,
		`vllm:kv_block_reuse_gap_seconds_count{engine="0",model_name="test-model"} 2.0`,
		`vllm:kv_block_reuse_gap_seconds_bucket{engine="0",le="1800.0",model_name="test-model"} 2.0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the exposition lacks\n%s", want)
		}
	}
}

package metricspec

// KV offload, KV transfer and KV residency families: vLLM's
// OffloadingConnector with its CPU backend (registered only with an
// offload tier, --kv-offloading-size), its scheduler's async-load gauge,
// and the residency histograms of --kv-cache-metrics.
const (
	// Core, always registered: cached prompt tokens by the tier that held
	// them (vLLM PR #56318).
	PromptTokensCachedBySource = "vllm:prompt_tokens_cached_by_source_total"

	// With an offload tier: waiting requests loading their KV, by stage.
	NumRequestsKVFetchByStage = "vllm:num_requests_kv_fetch_by_stage"

	// The connector's transfers (flat names) and look-ups.
	KVOffloadLoadBytes         = "vllm:kv_offload_load_bytes_total"
	KVOffloadLoadTime          = "vllm:kv_offload_load_time_total"
	KVOffloadLoadSize          = "vllm:kv_offload_load_size"
	KVOffloadStoreBytes        = "vllm:kv_offload_store_bytes_total"
	KVOffloadStoreTime         = "vllm:kv_offload_store_time_total"
	KVOffloadStoreSize         = "vllm:kv_offload_store_size"
	KVOffloadLookupSyncDelay   = "vllm:kv_offload_lookup_sync_delay_seconds"
	KVOffloadLookupAsyncDelay  = "vllm:kv_offload_lookup_async_delay_seconds"
	KVOffloadAllocationFailure = "vllm:kv_offload_allocation_failure_total"
	// Deprecated by vLLM for the flat names above, still emitted for the
	// CPU backend, by transfer_type.
	KVOffloadTotalBytes = "vllm:kv_offload_total_bytes_total"
	KVOffloadTotalTime  = "vllm:kv_offload_total_time_total"
	KVOffloadSize       = "vllm:kv_offload_size"
	// The CPU backend's.
	KVOffloadCPUCacheUsage      = "vllm:kv_offload_cpu_cache_usage_perc"
	KVOffloadCPUCacheWriteUsage = "vllm:kv_offload_cpu_cache_write_usage_perc"
	KVOffloadCPUCacheReadUsage  = "vllm:kv_offload_cpu_cache_read_usage_perc"
	KVOffloadCPUAllocationSize  = "vllm:kv_offload_cpu_allocation_size"

	// --kv-cache-metrics.
	KVBlockLifetime        = "vllm:kv_block_lifetime_seconds"
	KVBlockIdleBeforeEvict = "vllm:kv_block_idle_before_evict_seconds"
	KVBlockReuseGap        = "vllm:kv_block_reuse_gap_seconds"
)

// Label names and values of these families.
const (
	LabelStage        = "stage"
	LabelTransferType = "transfer_type"

	// vllm:num_requests_kv_fetch_by_stage's stages: a load whose transfer
	// has not started (queued behind others on the link), one copying,
	// one done whose request waits to run.
	StageWaitingToStart   = "waiting_to_start"
	StageInProgress       = "in_progress"
	StageCompletedWaiting = "completed_waiting"

	TransferLoad  = "CPU_to_GPU"
	TransferStore = "GPU_to_CPU"
)

// CacheSources are vllm:prompt_tokens_cached_by_source_total's sources
// (vLLM's CacheHitSource): the GPU's prefix cache, host memory (the
// offload tier), another engine, disk, and an external store it cannot
// tell apart. glassbox has the first two.
func CacheSources() []string {
	return []string{"device", "host", "p2p", "disk", "external_unspecified"}
}

// KVStages are vllm:num_requests_kv_fetch_by_stage's stages, in order.
func KVStages() []string {
	return []string{StageWaitingToStart, StageInProgress, StageCompletedWaiting}
}

// KVResidencyBuckets is vLLM's set for the kv_block_*_seconds histograms.
func KVResidencyBuckets() []float64 {
	return []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800}
}

// OffloadTransferBuckets is vLLM's set for the offload transfer sizes, in
// bytes.
func OffloadTransferBuckets() []float64 {
	return []float64{1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6}
}

// LookupSyncDelayBuckets and LookupAsyncDelayBuckets are vLLM's sets for
// the offload look-ups' delays.
func LookupSyncDelayBuckets() []float64 {
	return []float64{0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1}
}

func LookupAsyncDelayBuckets() []float64 {
	return []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
}

// CPUAllocationBuckets is vLLM's set for kv_offload_cpu_allocation_size,
// in blocks.
func CPUAllocationBuckets() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144}
}

// offloadFamilies are the offload connector's families, in the order
// vLLM's KVConnectorPrometheus creates them (the deprecated ones first,
// then the CPU backend's, then the connector's own). HELP texts are
// vLLM's (vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py
// and vllm/v1/kv_offload/cpu/spec.py).
var offloadFamilies = []Family{
	{Name: KVOffloadTotalBytes, Kind: Counter, Labels: []string{LabelTransferType}, Offload: true,
		Help: "Number of bytes offloaded by KV connector"},
	{Name: KVOffloadTotalTime, Kind: Counter, Labels: []string{LabelTransferType}, Offload: true,
		Help: "Total time measured by all KV offloading operations"},
	{Name: KVOffloadSize, Kind: Histogram, Labels: []string{LabelTransferType}, Offload: true, Buckets: fixed(OffloadTransferBuckets),
		Help: "Histogram of KV offload transfer size, in bytes."},
	{Name: KVOffloadCPUCacheUsage, Kind: Gauge, Offload: true,
		Help: "Fraction of CPU KV-cache space currently pinned by active transfers (0.0 = idle, 1.0 = saturated). " +
			"Sustained high values indicate transfers (stores or promotions) may be dropped due to insufficient capacity."},
	{Name: KVOffloadCPUCacheWriteUsage, Kind: Gauge, Offload: true,
		Help: "Fraction of CPU KV-cache space currently pinned by in-flight stores that have not yet completed (0.0 = idle, 1.0 = saturated)."},
	{Name: KVOffloadCPUCacheReadUsage, Kind: Gauge, Offload: true,
		Help: "Fraction of CPU KV-cache space currently pinned by in-flight loads that have not yet completed (0.0 = idle, 1.0 = saturated)."},
	{Name: KVOffloadCPUAllocationSize, Kind: Histogram, Offload: true, Buckets: fixed(CPUAllocationBuckets),
		Help: "Histogram of the number of CPU blocks requested by each KV offload prepare_store call."},
	{Name: KVOffloadLoadBytes, Kind: Counter, Offload: true, Help: "Total bytes loaded from offload storage to GPU."},
	{Name: KVOffloadLoadTime, Kind: Counter, Offload: true, Help: "Total load time from offload storage to GPU, in seconds."},
	{Name: KVOffloadLoadSize, Kind: Histogram, Offload: true, Buckets: fixed(OffloadTransferBuckets),
		Help: "Histogram of KV offload load operation size, in bytes."},
	{Name: KVOffloadStoreBytes, Kind: Counter, Offload: true, Help: "Total bytes stored from GPU to offload storage."},
	{Name: KVOffloadStoreTime, Kind: Counter, Offload: true, Help: "Total store time from GPU to offload storage, in seconds."},
	{Name: KVOffloadStoreSize, Kind: Histogram, Offload: true, Buckets: fixed(OffloadTransferBuckets),
		Help: "Histogram of KV offload store operation size, in bytes."},
	{Name: KVOffloadLookupSyncDelay, Kind: Histogram, Offload: true, Buckets: fixed(LookupSyncDelayBuckets),
		Help: "Histogram of the time spent in a single offload lookup call, in seconds."},
	{Name: KVOffloadLookupAsyncDelay, Kind: Histogram, Offload: true, Buckets: fixed(LookupAsyncDelayBuckets),
		Help: "Histogram of time between a request's offload lookup first deferring and the following lookup resolving, or request finish, in seconds."},
	{Name: KVOffloadAllocationFailure, Kind: Counter, Offload: true, Help: "Number of KV offload store allocation attempts that failed."},
}

// residencyFamilies are --kv-cache-metrics' histograms, vLLM's HELP
// (vllm/v1/metrics/loggers.py).
var residencyFamilies = []Family{
	{Name: KVBlockLifetime, Kind: Histogram, KVCacheMetrics: true, Buckets: fixed(KVResidencyBuckets),
		Help: "Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics (controlled by --kv-cache-metrics-sample)."},
	{Name: KVBlockIdleBeforeEvict, Kind: Histogram, KVCacheMetrics: true, Buckets: fixed(KVResidencyBuckets),
		Help: "Histogram of idle time before KV cache block eviction. Sampled metrics (controlled by --kv-cache-metrics-sample)."},
	{Name: KVBlockReuseGap, Kind: Histogram, KVCacheMetrics: true, Buckets: fixed(KVResidencyBuckets),
		Help: "Histogram of time gaps between consecutive KV cache block accesses. Only the most recent accesses are recorded (ring buffer). " +
			"Sampled metrics (controlled by --kv-cache-metrics-sample)."},
}

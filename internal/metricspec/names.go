// Package metricspec is glassbox's vocabulary of metrics: the name, type,
// HELP text, variable labels and bucket boundaries of every family glassbox
// exports (vLLM's vllm:* families, glassbox's glassbox_* additions and the
// HTTP families of vLLM's API server), and the Python-style number and
// label formatting vLLM's exposition uses. metrics registers exactly these
// families; doctor, bench and dashboards read them by these names, so a
// rename cannot leave a query behind.
//
// It is a leaf: it imports nothing of glassbox's and no Prometheus library.
package metricspec

// Family names. Counters carry their _total suffix as exposed.
const (
	// Gauges read from the engine's stats at scrape time.
	NumRequestsRunning         = "vllm:num_requests_running"
	NumRequestsWaiting         = "vllm:num_requests_waiting"
	NumRequestsWaitingByReason = "vllm:num_requests_waiting_by_reason"
	KVCacheUsagePerc           = "vllm:kv_cache_usage_perc"
	KVCacheBlocks              = "glassbox_kv_cache_blocks"

	// Info gauges (value 1) and constant gauges.
	CacheConfigInfo          = "vllm:cache_config_info"
	EngineSleepState         = "vllm:engine_sleep_state"
	SchedulerConfigInfo      = "glassbox_scheduler_config_info"
	ExecutorInfo             = "glassbox_executor_info"
	ExecutorPeakFLOPs        = "glassbox_executor_peak_flops_per_second"
	ExecutorPeakMemBandwidth = "glassbox_executor_peak_memory_bandwidth_bytes_per_second"
	EngineDead               = "glassbox_engine_dead" // 1 for what killed the engine, read from its stats

	// Counters and histograms fed by engine steps.
	PromptTokensBySource       = "vllm:prompt_tokens_by_source_total"
	PrefixCacheQueries         = "vllm:prefix_cache_queries_total"
	PrefixCacheHits            = "vllm:prefix_cache_hits_total"
	ExternalPrefixCacheQueries = "vllm:external_prefix_cache_queries_total"
	ExternalPrefixCacheHits    = "vllm:external_prefix_cache_hits_total"
	MMCacheQueries             = "vllm:mm_cache_queries_total"
	MMCacheHits                = "vllm:mm_cache_hits_total"
	NumPreemptions             = "vllm:num_preemptions_total"
	PromptTokens               = "vllm:prompt_tokens_total"
	PromptTokensCached         = "vllm:prompt_tokens_cached_total"
	GenerationTokens           = "vllm:generation_tokens_total"
	EstimatedFLOPsPerGPU       = "vllm:estimated_flops_per_gpu_total"
	EstimatedReadBytesPerGPU   = "vllm:estimated_read_bytes_per_gpu_total"
	EstimatedWriteBytesPerGPU  = "vllm:estimated_write_bytes_per_gpu_total"
	ExecutorBusySeconds        = "glassbox_executor_busy_seconds_total"
	EngineHostSeconds          = "glassbox_engine_host_seconds_total"
	EngineSteps                = "glassbox_engine_steps_total"
	IterationTokens            = "vllm:iteration_tokens_total" // a histogram, despite the name
	TimeToFirstToken           = "vllm:time_to_first_token_seconds"
	InterTokenLatency          = "vllm:inter_token_latency_seconds"
	EngineStepDuration         = "glassbox_engine_step_duration_seconds"

	// Counters and histograms fed by finished requests.
	RequestSuccess              = "vllm:request_success_total"
	E2ERequestLatency           = "vllm:e2e_request_latency_seconds"
	RequestQueueTime            = "vllm:request_queue_time_seconds"
	RequestPrefillTime          = "vllm:request_prefill_time_seconds"
	RequestDecodeTime           = "vllm:request_decode_time_seconds"
	LoRARequestsInfo            = "vllm:lora_requests_info" // only with --enable-lora
	RequestInferenceTime        = "vllm:request_inference_time_seconds"
	RequestTimePerOutputToken   = "vllm:request_time_per_output_token_seconds"
	RequestPromptTokens         = "vllm:request_prompt_tokens"
	RequestGenerationTokens     = "vllm:request_generation_tokens"
	RequestParamsMaxTokens      = "vllm:request_params_max_tokens"
	RequestPrefillKVComputed    = "vllm:request_prefill_kv_computed_tokens"
	RequestMaxNumGenerationToks = "vllm:request_max_num_generation_tokens"
	RequestParamsN              = "vllm:request_params_n"
	RequestNumPreemptions       = "vllm:request_num_preemptions"

	// Frontend: requests refused with 503 (vLLM 0.32's admission control).
	AdmissionRejections = "vllm:admission_rejections_total"

	// HTTP families, named as prometheus-fastapi-instrumentator names them.
	HTTPRequests             = "http_requests_total"
	HTTPRequestDuration      = "http_request_duration_seconds"
	HTTPRequestDurationHighR = "http_request_duration_highr_seconds"
	HTTPRequestSize          = "http_request_size_bytes"
	HTTPResponseSize         = "http_response_size_bytes"
)

// Reasons a request is refused at admission, the reason label of
// vllm:admission_rejections_total: the waiting queue is full
// (--max-num-queued-reqs), the engine is shutting down, or the server is
// handling its limit of requests at once (--limit-concurrency).
const (
	RejectQueueFull   = "max_num_queued_reqs"
	RejectShutdown    = "shutdown"
	RejectConcurrency = "limit_concurrency"
)

// Label names.
const (
	LabelModel          = "model_name"
	LabelEngine         = "engine"
	LabelFinishedReason = "finished_reason"
	LabelReason         = "reason"
	LabelSource         = "source"
	LabelState          = "state"
	LabelSleepState     = "sleep_state"
	LabelLe             = "le"
	LabelPosition       = "position"
)

// Speculative decoding's counters (vLLM's SpecDecodingProm): registered
// only when --speculative-config is set, before every other engine family
// as vLLM's logger creates them.
const (
	SpecDecodeDrafts            = "vllm:spec_decode_num_drafts_total"
	SpecDecodeDraftTokens       = "vllm:spec_decode_num_draft_tokens_total"
	SpecDecodeAcceptedTokens    = "vllm:spec_decode_num_accepted_tokens_total"
	SpecDecodeAcceptedTokensPos = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
)

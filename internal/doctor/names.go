package doctor

// The families the doctor reads. They duplicate internal/metrics' names
// because that package imports the engine, which the doctor must not reach
// (internal/layering); TestNamesAreExported fails when one of these is not
// a family glassbox exports, so a rename cannot leave the doctor behind.
const (
	mRunning        = "vllm:num_requests_running"
	mWaiting        = "vllm:num_requests_waiting"
	mKVUsage        = "vllm:kv_cache_usage_perc"
	mCacheInfo      = "vllm:cache_config_info"
	mSchedInfo      = "glassbox_scheduler_config_info"
	mExecInfo       = "glassbox_executor_info"
	mPeakFLOPs      = "glassbox_executor_peak_flops_per_second"
	mPrefixQueries  = "vllm:prefix_cache_queries_total"
	mPrefixHits     = "vllm:prefix_cache_hits_total"
	mPreemptions    = "vllm:num_preemptions_total"
	mPromptTokens   = "vllm:prompt_tokens_total"
	mPromptCached   = "vllm:prompt_tokens_cached_total"
	mGenTokens      = "vllm:generation_tokens_total"
	mFLOPs          = "vllm:estimated_flops_per_gpu_total"
	mBusy           = "glassbox_executor_busy_seconds_total"
	mSteps          = "glassbox_engine_steps_total"
	mTTFT           = "vllm:time_to_first_token_seconds"
	mITL            = "vllm:inter_token_latency_seconds"
	mSuccess        = "vllm:request_success_total"
	mE2E            = "vllm:e2e_request_latency_seconds"
	mQueueTime      = "vllm:request_queue_time_seconds"
	mPrefillTime    = "vllm:request_prefill_time_seconds"
	mDecodeTime     = "vllm:request_decode_time_seconds"
	mInferenceTime  = "vllm:request_inference_time_seconds"
	mReqGen         = "vllm:request_generation_tokens"
	mUp             = "up" // Prometheus' own scrape health
	labelFinished   = "finished_reason"
	keyAborts       = mSuccess + `{finished_reason="abort"}`
	kvAggregatorMax = "max" // KV usage is a fraction: the fullest engine, not a sum
)

// seriesSpec is one series the doctor reads: a family, summed (or maxed)
// over every label set, optionally restricted to one label value.
type seriesSpec struct {
	key    string // the Snapshot.Values key
	family string
	label  string // restricting label name, or ""
	value  string // its value
	agg    string // "sum" or "max"
}

// scalarSeries are the counters and gauges of a window.
func scalarSeries() []seriesSpec {
	sum := func(f string) seriesSpec { return seriesSpec{key: f, family: f, agg: "sum"} }
	out := []seriesSpec{
		sum(mRunning), sum(mWaiting), {key: mKVUsage, family: mKVUsage, agg: kvAggregatorMax},
		sum(mPrefixQueries), sum(mPrefixHits), sum(mPreemptions), sum(mPromptTokens), sum(mPromptCached),
		sum(mGenTokens), sum(mFLOPs), sum(mBusy), sum(mSteps), sum(mSuccess), {key: mPeakFLOPs, family: mPeakFLOPs, agg: "max"},
		{key: keyAborts, family: mSuccess, label: labelFinished, value: "abort", agg: "sum"},
	}
	for _, h := range histogramFamilies() {
		out = append(out, sum(h+"_sum"), sum(h+"_count"))
	}
	return out
}

// histogramFamilies are the histograms whose sums and counts a window
// holds; quantileFamilies those whose buckets it also holds.
func histogramFamilies() []string {
	return []string{mTTFT, mITL, mE2E, mQueueTime, mPrefillTime, mDecodeTime, mInferenceTime, mReqGen}
}

func quantileFamilies() []string { return []string{mTTFT, mITL, mE2E, mQueueTime} }

// infoFamilies are the info gauges whose labels describe the target's
// configuration.
func infoFamilies() []string { return []string{mCacheInfo, mSchedInfo, mExecInfo} }

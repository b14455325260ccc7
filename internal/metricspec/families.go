package metricspec

// Kind is a family's Prometheus type.
type Kind uint8

const (
	Counter Kind = iota + 1
	Gauge
	Histogram
	Summary
)

func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	case Summary:
		return "summary"
	}
	return "untyped"
}

// Family is one metric family's definition.
type Family struct {
	Name string
	Kind Kind
	Help string
	// Labels are the variable labels a series carries besides the
	// engine's own model_name and engine (finished_reason, reason, …).
	Labels []string
	// Buckets gives a histogram's upper bounds; the token-count
	// histograms follow --max-model-len as vLLM's do.
	Buckets func(maxModelLen int) []float64
	// Speculative families exist only when speculative decoding is
	// configured, Offload ones only with a KV offload tier, and
	// KVCacheMetrics ones only with --kv-cache-metrics.
	Speculative, Offload, KVCacheMetrics bool
}

func fixed(b func() []float64) func(int) []float64 { return func(int) []float64 { return b() } }

// coreFamilies is the table every lookup reads (with offload.go's), in the order vLLM 0.30
// registers them (its /metrics lists families in that order), then
// glassbox's own. HELP texts are vLLM's verbatim, typos and trailing
// spaces included: consumers compare them.
var coreFamilies = []Family{
	{Name: SpecDecodeDrafts, Kind: Counter, Help: "Number of spec decoding drafts.", Speculative: true},
	{Name: SpecDecodeDraftTokens, Kind: Counter, Help: "Number of draft tokens.", Speculative: true},
	{Name: SpecDecodeAcceptedTokens, Kind: Counter, Help: "Number of accepted tokens.", Speculative: true},
	{Name: SpecDecodeAcceptedTokensPos, Kind: Counter, Help: "Accepted tokens per draft position.", Labels: []string{LabelPosition}, Speculative: true},
	// The offload connector's families (offload.go) come here, after
	// the spec-decode ones, as vLLM's logger creates them.
	{Name: EstimatedFLOPsPerGPU, Kind: Counter,
		Help: "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations)."},
	{Name: EstimatedReadBytesPerGPU, Kind: Counter,
		Help: "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations)."},
	{Name: EstimatedWriteBytesPerGPU, Kind: Counter,
		Help: "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations)."},
	{Name: NumRequestsRunning, Kind: Gauge, Help: "Number of requests in model execution batches."},
	{Name: NumRequestsWaiting, Kind: Gauge, Help: "Number of requests waiting to be processed."},
	{Name: NumRequestsWaitingByReason, Kind: Gauge, Labels: []string{LabelReason},
		Help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; " +
			"'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). " +
			"Sum of all reasons equals vllm:num_requests_waiting."},
	// glassbox's wording: vLLM's own HELP was not at hand (the gauge is
	// registered only with an offload tier here, as with vLLM's connectors).
	{Name: NumRequestsKVFetchByStage, Kind: Gauge, Labels: []string{LabelStage}, Offload: true,
		Help: "Number of waiting requests loading their KV cache asynchronously, by stage. Stage labels: " +
			"'waiting_to_start' = transfer not started; 'in_progress' = transfer running; 'completed_waiting' = loaded, waiting to run."},
	{Name: EngineSleepState, Kind: Gauge, Labels: []string{LabelSleepState},
		Help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; " +
			"weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."},
	{Name: KVCacheUsagePerc, Kind: Gauge, Help: "KV-cache usage. 1 means 100 percent usage."},
	{Name: PrefixCacheQueries, Kind: Counter, Help: "Prefix cache queries, in terms of number of queried tokens."},
	{Name: PrefixCacheHits, Kind: Counter, Help: "Prefix cache hits, in terms of number of cached tokens."},
	{Name: ExternalPrefixCacheQueries, Kind: Counter,
		Help: "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."},
	{Name: ExternalPrefixCacheHits, Kind: Counter,
		Help: "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."},
	{Name: MMCacheQueries, Kind: Counter, Help: "Multi-modal cache queries, in terms of number of queried items."},
	{Name: MMCacheHits, Kind: Counter, Help: "Multi-modal cache hits, in terms of number of cached items."},
	{Name: NumPreemptions, Kind: Counter, Help: "Cumulative number of preemption from the engine."},
	{Name: PromptTokens, Kind: Counter, Help: "Number of prefill tokens processed."},
	{Name: PromptTokensBySource, Kind: Counter, Labels: []string{LabelSource}, Help: "Number of prompt tokens by source."},
	{Name: PromptTokensCached, Kind: Counter, Help: "Number of cached prompt tokens (local + external)."},
	// glassbox's wording: vLLM PR #56318's own HELP was not at hand.
	{Name: PromptTokensCachedBySource, Kind: Counter, Labels: []string{LabelSource},
		Help: "Number of cached prompt tokens by the cache tier that held them (sums to vllm:prompt_tokens_cached_total)."},
	{Name: GenerationTokens, Kind: Counter, Help: "Number of generation tokens processed."},
	{Name: RequestSuccess, Kind: Counter, Labels: []string{LabelFinishedReason}, Help: "Count of successfully processed requests."},
	{Name: RequestPromptTokens, Kind: Histogram, Help: "Number of prefill tokens processed.", Buckets: OneTwoFiveBuckets},
	{Name: RequestGenerationTokens, Kind: Histogram, Help: "Number of generation tokens processed.", Buckets: OneTwoFiveBuckets},
	{Name: IterationTokens, Kind: Histogram, Help: "Histogram of number of tokens per engine_step.", Buckets: fixed(IterationTokenBuckets)},
	{Name: RequestMaxNumGenerationToks, Kind: Histogram, Buckets: OneTwoFiveBuckets,
		Help: "Histogram of maximum number of requested generation tokens."},
	{Name: RequestParamsN, Kind: Histogram, Help: "Histogram of the n request parameter.", Buckets: fixed(ParamsNBuckets)},
	{Name: RequestParamsMaxTokens, Kind: Histogram, Help: "Histogram of the max_tokens request parameter.", Buckets: OneTwoFiveBuckets},
	{Name: TimeToFirstToken, Kind: Histogram, Help: "Histogram of time to first token in seconds.", Buckets: fixed(TTFTBuckets)},
	{Name: InterTokenLatency, Kind: Histogram, Help: "Histogram of inter-token latency in seconds.", Buckets: fixed(TokenStepBuckets)},
	{Name: RequestTimePerOutputToken, Kind: Histogram, Help: "Histogram of time_per_output_token_seconds per request.", Buckets: fixed(TokenStepBuckets)},
	{Name: E2ERequestLatency, Kind: Histogram, Help: "Histogram of e2e request latency in seconds.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestQueueTime, Kind: Histogram, Help: "Histogram of time spent in WAITING phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestInferenceTime, Kind: Histogram, Help: "Histogram of time spent in RUNNING phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestPrefillTime, Kind: Histogram, Help: "Histogram of time spent in PREFILL phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestDecodeTime, Kind: Histogram, Help: "Histogram of time spent in DECODE phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	// Registered only with LoRA adapters; its labels are its own (no
	// model_name, no engine), its value the Unix time its combination of
	// adapters was last current.
	{Name: LoRARequestsInfo, Kind: Gauge, Help: "Running stats on lora requests.",
		Labels: []string{"max_lora", "waiting_lora_adapters", "running_lora_adapters"}},
	{Name: RequestNumPreemptions, Kind: Histogram, Help: "Histogram of the number of times a request was preempted.",
		Buckets: fixed(NumPreemptionsBuckets)},
	{Name: RequestPrefillKVComputed, Kind: Histogram, Buckets: OneTwoFiveBuckets,
		Help: "Histogram of new KV tokens computed during prefill (excluding cached tokens)."},
	// The residency families (offload.go) follow the finished-request
	// histograms, as vLLM's logger creates them.
	{Name: CacheConfigInfo, Kind: Gauge, Help: "Information of the LLMEngine CacheConfig"},
	{Name: AdmissionRejections, Kind: Counter, Labels: []string{LabelReason},
		Help: "Number of requests rejected at admission (HTTP 503), by reason."},

	{Name: HTTPRequests, Kind: Counter, Labels: []string{"handler", "method", "status"},
		Help: "Total number of requests by method, status and handler."},
	{Name: HTTPRequestSize, Kind: Summary, Labels: []string{"handler"},
		Help: "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
	{Name: HTTPResponseSize, Kind: Summary, Labels: []string{"handler"},
		Help: "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
	{Name: HTTPRequestDurationHighR, Kind: Histogram, Buckets: fixed(HTTPHighResBuckets),
		Help: "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. "},
	{Name: HTTPRequestDuration, Kind: Histogram, Labels: []string{"handler", "method"}, Buckets: fixed(HTTPDurationBuckets),
		Help: "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. "},

	// glassbox's own.
	{Name: KVCacheBlocks, Kind: Gauge, Labels: []string{LabelState},
		Help: "KV-cache blocks by state: free (empty), cached (free but holding reusable prefix-cache content), used (held by running requests)."},
	{Name: SchedulerConfigInfo, Kind: Gauge, Help: "Scheduler configuration of the engine (value 1)."},
	{Name: ExecutorInfo, Kind: Gauge, Help: "Executor and hardware behind the engine (value 1)."},
	{Name: ExecutorPeakFLOPs, Kind: Gauge,
		Help: "Peak dense FLOP/s of one GPU of the executor; divide estimated FLOP rates by it for MFU."},
	{Name: ExecutorPeakMemBandwidth, Kind: Gauge,
		Help: "Peak memory bandwidth of one GPU of the executor in bytes/s; divide estimated byte rates by it for MBU."},
	{Name: EngineDead, Kind: Gauge, Labels: []string{LabelReason},
		Help: "1 once the engine is dead, for what killed it: executor_error (a sticky device fault), step_timeout (a step past --step-timeout), executor_panic; 0 while it serves. /health answers 503 meanwhile."},
	{Name: ExecutorBusySeconds, Kind: Counter, Help: "Time spent inside the executor; its rate is the executor's utilisation."},
	{Name: EngineHostSeconds, Kind: Counter,
		Help: "Time inside engine iterations but outside the executor (scheduling, output processing, the host's share of a step), during which the GPU idles."},
	{Name: EngineSteps, Kind: Counter, Help: "Engine iterations run."},
	{Name: EngineStepDuration, Kind: Histogram, Buckets: fixed(StepDurationBuckets),
		Help: "Wall time of one engine iteration: scheduling, execution and output delivery."},
}

type entry struct {
	*Family
	index int
}

// families is the whole table: the core one with offload.go's spliced in
// where vLLM's logger creates them.
var families = func() []Family {
	at := func(fs []Family, name string) int {
		for i := range fs {
			if fs[i].Name == name {
				return i
			}
		}
		panic("BUG: metricspec: no family " + name)
	}
	out := append([]Family(nil), coreFamilies...)
	i := at(out, SpecDecodeAcceptedTokensPos) + 1
	out = append(out[:i], append(append([]Family(nil), offloadFamilies...), out[i:]...)...)
	i = at(out, CacheConfigInfo)
	return append(out[:i], append(append([]Family(nil), residencyFamilies...), out[i:]...)...)
}()

var byName = func() map[string]entry {
	m := make(map[string]entry, len(families))
	for i := range families {
		m[families[i].Name] = entry{&families[i], i}
	}
	return m
}()

// Index is a family's place in the exposition order, or -1.
func Index(name string) int {
	f, ok := byName[name]
	if !ok {
		return -1
	}
	return f.index
}

// Families lists every family, in the table's order. The slice is a copy;
// the Family values share their Labels slices: do not modify them.
func Families() []Family { return append([]Family(nil), families...) }

// Lookup finds a family by name.
func Lookup(name string) (Family, bool) {
	f, ok := byName[name]
	if !ok {
		return Family{}, false
	}
	return *f.Family, true
}

// Must is Lookup for names the caller spells with this package's
// constants: an unknown one is a bug.
func Must(name string) Family {
	f, ok := Lookup(name)
	if !ok {
		panic("BUG: metricspec: no family " + name)
	}
	return f
}

// EngineDeadReasons are glassbox_engine_dead's reason values (the engine's
// DeathReasons, which internal/metrics' tests hold it to), for readers
// that must not import the engine: the doctor.
var EngineDeadReasons = []string{"executor_error", "step_timeout", "executor_panic"}

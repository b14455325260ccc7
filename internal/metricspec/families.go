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
}

func fixed(b func() []float64) func(int) []float64 { return func(int) []float64 { return b() } }

// families is the table every lookup reads.
var families = []Family{
	{Name: NumRequestsRunning, Kind: Gauge, Help: "Number of requests in model execution batches."},
	{Name: NumRequestsWaiting, Kind: Gauge, Help: "Number of requests waiting to be processed."},
	{Name: NumRequestsWaitingByReason, Kind: Gauge, Labels: []string{LabelReason},
		Help: "Number of requests waiting, by reason: capacity (no room to schedule) or deferred (held back by transient constraints)."},
	{Name: KVCacheUsagePerc, Kind: Gauge, Help: "KV-cache usage. 1 means 100 percent usage."},
	{Name: KVCacheBlocks, Kind: Gauge, Labels: []string{LabelState},
		Help: "KV-cache blocks by state: free (empty), cached (free but holding reusable prefix-cache content), used (held by running requests)."},

	{Name: CacheConfigInfo, Kind: Gauge, Help: "Information of the LLMEngine CacheConfig"},
	{Name: EngineSleepState, Kind: Gauge, Labels: []string{LabelSleepState},
		Help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; " +
			"weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."},
	{Name: SchedulerConfigInfo, Kind: Gauge, Help: "Scheduler configuration of the engine (value 1)."},
	{Name: ExecutorInfo, Kind: Gauge, Help: "Executor and hardware behind the engine (value 1)."},
	{Name: ExecutorPeakFLOPs, Kind: Gauge,
		Help: "Peak dense FLOP/s of one GPU of the executor; divide estimated FLOP rates by it for MFU."},
	{Name: ExecutorPeakMemBandwidth, Kind: Gauge,
		Help: "Peak memory bandwidth of one GPU of the executor in bytes/s; divide estimated byte rates by it for MBU."},

	{Name: PromptTokensBySource, Kind: Counter, Labels: []string{LabelSource}, Help: "Number of prompt tokens by source."},
	{Name: PrefixCacheQueries, Kind: Counter, Help: "Prefix cache queries, in terms of number of queried tokens."},
	{Name: PrefixCacheHits, Kind: Counter, Help: "Prefix cache hits, in terms of number of cached tokens."},
	{Name: ExternalPrefixCacheQueries, Kind: Counter,
		Help: "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."},
	{Name: ExternalPrefixCacheHits, Kind: Counter,
		Help: "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."},
	{Name: NumPreemptions, Kind: Counter, Help: "Cumulative number of preemption from the engine."},
	{Name: PromptTokens, Kind: Counter, Help: "Number of prefill tokens processed."},
	{Name: PromptTokensCached, Kind: Counter, Help: "Number of cached prompt tokens (local + external)."},
	{Name: GenerationTokens, Kind: Counter, Help: "Number of generation tokens processed."},
	{Name: EstimatedFLOPsPerGPU, Kind: Counter,
		Help: "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations)."},
	{Name: EstimatedReadBytesPerGPU, Kind: Counter,
		Help: "Estimated number of bytes read from memory per GPU (for Model Bandwidth Utilization calculations)."},
	{Name: EstimatedWriteBytesPerGPU, Kind: Counter,
		Help: "Estimated number of bytes written to memory per GPU (for Model Bandwidth Utilization calculations)."},
	{Name: ExecutorBusySeconds, Kind: Counter, Help: "Time spent inside the executor; its rate is the executor's utilisation."},
	{Name: EngineSteps, Kind: Counter, Help: "Engine iterations run."},
	{Name: IterationTokens, Kind: Histogram, Help: "Histogram of number of tokens per engine_step.", Buckets: fixed(IterationTokenBuckets)},
	{Name: TimeToFirstToken, Kind: Histogram, Help: "Histogram of time to first token in seconds.", Buckets: fixed(TTFTBuckets)},
	{Name: InterTokenLatency, Kind: Histogram, Help: "Histogram of inter-token latency in seconds.", Buckets: fixed(TokenStepBuckets)},
	{Name: EngineStepDuration, Kind: Histogram, Buckets: fixed(StepDurationBuckets),
		Help: "Wall time of one engine iteration: scheduling, execution and output delivery."},

	{Name: RequestSuccess, Kind: Counter, Labels: []string{LabelFinishedReason}, Help: "Count of successfully processed requests."},
	{Name: E2ERequestLatency, Kind: Histogram, Help: "Histogram of e2e request latency in seconds.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestQueueTime, Kind: Histogram, Help: "Histogram of time spent in WAITING phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestPrefillTime, Kind: Histogram, Help: "Histogram of time spent in PREFILL phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestDecodeTime, Kind: Histogram, Help: "Histogram of time spent in DECODE phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestInferenceTime, Kind: Histogram, Help: "Histogram of time spent in RUNNING phase for request.", Buckets: fixed(RequestLatencyBuckets)},
	{Name: RequestTimePerOutputToken, Kind: Histogram, Help: "Histogram of time_per_output_token_seconds per request.", Buckets: fixed(TokenStepBuckets)},
	{Name: RequestPromptTokens, Kind: Histogram, Help: "Number of prefill tokens processed.", Buckets: OneTwoFiveBuckets},
	{Name: RequestGenerationTokens, Kind: Histogram, Help: "Number of generation tokens processed.", Buckets: OneTwoFiveBuckets},
	{Name: RequestParamsMaxTokens, Kind: Histogram, Help: "Histogram of the max_tokens request parameter.", Buckets: OneTwoFiveBuckets},
	{Name: RequestPrefillKVComputed, Kind: Histogram, Buckets: OneTwoFiveBuckets,
		Help: "Histogram of new KV tokens computed during prefill (excluding cached tokens)."},
	{Name: RequestMaxNumGenerationToks, Kind: Histogram, Buckets: OneTwoFiveBuckets,
		Help: "Histogram of maximum number of requested generation tokens."},
	{Name: RequestParamsN, Kind: Histogram, Help: "Histogram of the n request parameter.", Buckets: fixed(ParamsNBuckets)},

	{Name: HTTPRequests, Kind: Counter, Labels: []string{"method", "status", "handler"},
		Help: "Total number of requests by method, status and handler."},
	{Name: HTTPRequestDuration, Kind: Histogram, Labels: []string{"method", "handler"}, Buckets: fixed(HTTPDurationBuckets),
		Help: "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important."},
	{Name: HTTPRequestDurationHighR, Kind: Histogram, Buckets: fixed(HTTPHighResBuckets),
		Help: "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations."},
	{Name: HTTPRequestSize, Kind: Summary, Labels: []string{"handler"},
		Help: "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored."},
	{Name: HTTPResponseSize, Kind: Summary, Labels: []string{"handler"},
		Help: "Size of responses by handler: bytes of body written."},
}

var byName = func() map[string]*Family {
	m := make(map[string]*Family, len(families))
	for i := range families {
		m[families[i].Name] = &families[i]
	}
	return m
}()

// Families lists every family, in the table's order. The slice is a copy;
// the Family values share their Labels slices: do not modify them.
func Families() []Family { return append([]Family(nil), families...) }

// Lookup finds a family by name.
func Lookup(name string) (Family, bool) {
	f, ok := byName[name]
	if !ok {
		return Family{}, false
	}
	return *f, true
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

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// stepSeries are the families fed by StepEvent. Every field is a
// pre-bound child: the engine goroutine only does atomic adds.
type stepSeries struct {
	prefixQueries, prefixHits                prometheus.Counter
	extPrefixQueries, extPrefixHits          prometheus.Counter // no KV connector: stay 0
	preemptions                              prometheus.Counter
	promptTokens, promptCached               prometheus.Counter
	promptLocalCompute, promptCacheHit       prometheus.Counter
	generationTokens                         prometheus.Counter
	flops, readBytes, writeBytes             prometheus.Counter
	busySeconds, steps                       prometheus.Counter
	iterationTokens, ttft, itl, stepDuration prometheus.Observer
}

func newStepSeries(b *builder) stepSeries {
	bySource := b.counterVec("vllm:prompt_tokens_by_source_total",
		"Number of prompt tokens by source.", "source",
		[]string{"local_compute", "local_cache_hit", "external_kv_transfer"})
	return stepSeries{
		prefixQueries: b.counter("vllm:prefix_cache_queries_total",
			"Prefix cache queries, in terms of number of queried tokens."),
		prefixHits: b.counter("vllm:prefix_cache_hits_total",
			"Prefix cache hits, in terms of number of cached tokens."),
		extPrefixQueries: b.counter("vllm:external_prefix_cache_queries_total",
			"External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."),
		extPrefixHits: b.counter("vllm:external_prefix_cache_hits_total",
			"External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."),
		preemptions: b.counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens: b.counter("vllm:prompt_tokens_total",
			"Number of prefill tokens processed."),
		promptCached: b.counter("vllm:prompt_tokens_cached_total",
			"Number of cached prompt tokens (local + external)."),
		promptLocalCompute: bySource["local_compute"],
		promptCacheHit:     bySource["local_cache_hit"],
		generationTokens: b.counter("vllm:generation_tokens_total",
			"Number of generation tokens processed."),
		flops: b.counter("vllm:estimated_flops_per_gpu_total",
			"Estimated number of floating point operations per GPU (for Model Flops Utilization calculations)."),
		readBytes: b.counter("vllm:estimated_read_bytes_per_gpu_total",
			"Estimated number of bytes read from memory per GPU (for Model Bandwidth Utilization calculations)."),
		writeBytes: b.counter("vllm:estimated_write_bytes_per_gpu_total",
			"Estimated number of bytes written to memory per GPU (for Model Bandwidth Utilization calculations)."),
		busySeconds: b.counter("glassbox_executor_busy_seconds_total",
			"Time spent inside the executor; its rate is the executor's utilisation."),
		steps: b.counter("glassbox_engine_steps_total", "Engine iterations run."),
		iterationTokens: b.histogram("vllm:iteration_tokens_total",
			"Histogram of number of tokens per engine_step.", iterationTokenBuckets()),
		ttft: b.histogram("vllm:time_to_first_token_seconds",
			"Histogram of time to first token in seconds.", ttftBuckets()),
		itl: b.histogram("vllm:inter_token_latency_seconds",
			"Histogram of inter-token latency in seconds.", tokenStepBuckets()),
		stepDuration: b.histogram("glassbox_engine_step_duration_seconds",
			"Wall time of one engine iteration: scheduling, execution and output delivery.", stepDurationBuckets()),
	}
}

// finishedSeries are the families fed by FinishedEvent.
type finishedSeries struct {
	success                                  map[engine.FinishReason]prometheus.Counter
	e2e, queue, prefill, decode, inference   prometheus.Observer
	tpot                                     prometheus.Observer
	promptLen, genLen, maxTokens, kvComputed prometheus.Observer
	maxGenLen, paramsN                       prometheus.Observer // per parent request
}

func newFinishedSeries(b *builder, maxModelLen int) finishedSeries {
	bySource := b.counterVec("vllm:request_success_total",
		"Count of successfully processed requests.", "finished_reason", finishReasonValues())
	success := make(map[engine.FinishReason]prometheus.Counter, len(bySource))
	for k, c := range bySource {
		success[engine.FinishReason(k)] = c
	}
	lat := requestLatencyBuckets
	tok := func() []float64 { return oneTwoFiveBuckets(maxModelLen) }
	return finishedSeries{
		success: success,
		e2e: b.histogram("vllm:e2e_request_latency_seconds",
			"Histogram of e2e request latency in seconds.", lat()),
		queue: b.histogram("vllm:request_queue_time_seconds",
			"Histogram of time spent in WAITING phase for request.", lat()),
		prefill: b.histogram("vllm:request_prefill_time_seconds",
			"Histogram of time spent in PREFILL phase for request.", lat()),
		decode: b.histogram("vllm:request_decode_time_seconds",
			"Histogram of time spent in DECODE phase for request.", lat()),
		inference: b.histogram("vllm:request_inference_time_seconds",
			"Histogram of time spent in RUNNING phase for request.", lat()),
		tpot: b.histogram("vllm:request_time_per_output_token_seconds",
			"Histogram of time_per_output_token_seconds per request.", tokenStepBuckets()),
		promptLen: b.histogram("vllm:request_prompt_tokens",
			"Number of prefill tokens processed.", tok()),
		genLen: b.histogram("vllm:request_generation_tokens",
			"Number of generation tokens processed.", tok()),
		maxTokens: b.histogram("vllm:request_params_max_tokens",
			"Histogram of the max_tokens request parameter.", tok()),
		kvComputed: b.histogram("vllm:request_prefill_kv_computed_tokens",
			"Histogram of new KV tokens computed during prefill (excluding cached tokens).", tok()),
		maxGenLen: b.histogram("vllm:request_max_num_generation_tokens",
			"Histogram of maximum number of requested generation tokens.", tok()),
		paramsN: b.histogram("vllm:request_params_n",
			"Histogram of the n request parameter.", paramsNBuckets()),
	}
}

// groupStats accumulates the children of one n>1 parent request until the
// last one finishes, as vLLM's ParentRequest does.
type groupStats struct {
	remaining int
	maxGen    int
}

// ObserveStep implements engine.Observer.
func (m *Metrics) ObserveStep(s *engine.StepEvent) {
	if !m.enabled {
		return
	}
	st := &m.step
	st.prefixQueries.Add(float64(s.PrefixQueries))
	st.prefixHits.Add(float64(s.PrefixHits))
	st.preemptions.Add(float64(s.Preemptions))
	st.promptTokens.Add(float64(s.PromptTokens))
	st.promptCached.Add(float64(s.CachedTokens))
	st.promptCacheHit.Add(float64(s.CachedTokens))
	st.promptLocalCompute.Add(float64(max(s.PromptTokens-s.CachedTokens, 0)))
	st.generationTokens.Add(float64(s.GenerationTokens))
	st.flops.Add(s.FLOPs)
	st.readBytes.Add(s.ReadBytes)
	st.writeBytes.Add(s.WriteBytes)
	st.busySeconds.Add(s.ExecuteTime.Seconds())
	st.steps.Inc()
	// vLLM's frontend records an iteration only when the engine step
	// produced outputs; a step that ran a prefill chunk alone is invisible.
	if s.IterationTokens > 0 || s.GenerationTokens > 0 {
		st.iterationTokens.Observe(float64(s.IterationTokens))
	}
	for _, v := range s.TTFTs {
		st.ttft.Observe(v)
	}
	for _, v := range s.ITLs {
		st.itl.Observe(v)
	}
	if !s.Start.IsZero() && !s.End.IsZero() {
		st.stepDuration.Observe(s.End.Sub(s.Start).Seconds())
	}
}

// ObserveFinished implements engine.Observer. Histograms whose interval has
// a missing end (a request aborted in the queue has no first token) are not
// observed; the request still counts in request_success_total and e2e.
func (m *Metrics) ObserveFinished(f *engine.FinishedEvent) {
	if !m.enabled {
		return
	}
	fs := &m.finished
	c, ok := fs.success[f.Reason]
	if !ok {
		c = fs.success[engine.FinishError] // a reason vLLM does not know is an engine bug: count it as one
	}
	c.Inc()
	observeInterval(fs.e2e, f.Arrival, f.Finished)
	observeInterval(fs.queue, f.Queued, f.FirstScheduled)
	observeInterval(fs.prefill, f.FirstScheduled, f.FirstToken)
	observeInterval(fs.decode, f.FirstToken, f.LastToken)
	observeInterval(fs.inference, f.FirstScheduled, f.LastToken)
	if !f.FirstToken.IsZero() && !f.LastToken.IsZero() {
		tpot := 0.0
		if f.GenerationTokens > 1 {
			tpot = f.LastToken.Sub(f.FirstToken).Seconds() / float64(f.GenerationTokens-1)
		}
		fs.tpot.Observe(tpot)
	}
	fs.promptLen.Observe(float64(f.PromptTokens))
	fs.genLen.Observe(float64(f.GenerationTokens))
	fs.kvComputed.Observe(float64(max(f.PromptTokens-f.CachedTokens, 0)))
	if f.MaxTokens > 0 {
		fs.maxTokens.Observe(float64(f.MaxTokens))
	}
	m.observeGroup(f)
}

// observeGroup records the per-parent histograms: directly for n = 1, and
// when the last of the n children finishes otherwise.
func (m *Metrics) observeGroup(f *engine.FinishedEvent) {
	if f.GroupSize <= 1 || f.Group == "" {
		m.finished.paramsN.Observe(1)
		m.finished.maxGenLen.Observe(float64(f.GenerationTokens))
		return
	}
	g := m.groups[f.Group]
	if g == nil {
		g = &groupStats{remaining: f.GroupSize}
		m.groups[f.Group] = g
	}
	g.maxGen = max(g.maxGen, f.GenerationTokens)
	g.remaining--
	if g.remaining > 0 {
		return
	}
	delete(m.groups, f.Group)
	m.finished.paramsN.Observe(float64(f.GroupSize))
	m.finished.maxGenLen.Observe(float64(g.maxGen))
}

// observeInterval observes end−start unless either end is missing. A
// negative interval (clock steps between engine timestamps) is clamped.
func observeInterval(h prometheus.Observer, start, end time.Time) {
	if start.IsZero() || end.IsZero() {
		return
	}
	h.Observe(max(end.Sub(start).Seconds(), 0))
}

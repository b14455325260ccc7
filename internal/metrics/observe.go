package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// stepSeries are the families fed by StepEvent. Every field is a
// pre-bound child: the engine goroutine only does atomic adds, and takes
// one lock a step for the latencies (batchHistogram).
type stepSeries struct {
	prefixQueries, prefixHits                prometheus.Counter
	extPrefixQueries, extPrefixHits          prometheus.Counter // the offload tier's look-ups
	preemptions                              prometheus.Counter
	promptTokens, promptCached               prometheus.Counter
	promptLocalCompute, promptCacheHit       prometheus.Counter
	promptExternal                           prometheus.Counter
	cachedDevice, cachedHost                 prometheus.Counter
	generationTokens                         prometheus.Counter
	flops, readBytes, writeBytes             prometheus.Counter
	busySeconds, hostSeconds, steps          prometheus.Counter
	iterationTokens, ttft, itl, stepDuration prometheus.Observer
}

func newStepSeries(b *builder) stepSeries {
	bySource := b.counterVec(metricspec.PromptTokensBySource, []string{"local_compute", "local_cache_hit", "external_kv_transfer"})
	cachedBySource := b.counterVec(metricspec.PromptTokensCachedBySource, metricspec.CacheSources())
	// No multi-modal inputs: the cache families exist and stay 0, as
	// vLLM's do for a text model.
	b.counter(metricspec.MMCacheQueries)
	b.counter(metricspec.MMCacheHits)
	s := stepSeries{
		prefixQueries:      b.counter(metricspec.PrefixCacheQueries),
		prefixHits:         b.counter(metricspec.PrefixCacheHits),
		extPrefixQueries:   b.counter(metricspec.ExternalPrefixCacheQueries),
		extPrefixHits:      b.counter(metricspec.ExternalPrefixCacheHits),
		preemptions:        b.counter(metricspec.NumPreemptions),
		promptTokens:       b.counter(metricspec.PromptTokens),
		promptCached:       b.counter(metricspec.PromptTokensCached),
		promptLocalCompute: bySource["local_compute"],
		promptCacheHit:     bySource["local_cache_hit"],
		promptExternal:     bySource["external_kv_transfer"],
		cachedDevice:       cachedBySource["device"],
		cachedHost:         cachedBySource["host"],
		generationTokens:   b.counter(metricspec.GenerationTokens),
		flops:              b.counter(metricspec.EstimatedFLOPsPerGPU),
		readBytes:          b.counter(metricspec.EstimatedReadBytesPerGPU),
		writeBytes:         b.counter(metricspec.EstimatedWriteBytesPerGPU),
		busySeconds:        b.counter(metricspec.ExecutorBusySeconds),
		hostSeconds:        b.counter(metricspec.EngineHostSeconds),
		steps:              b.counter(metricspec.EngineSteps),
		iterationTokens:    b.histogram(metricspec.IterationTokens, 0),
		ttft:               b.batchHistogram(metricspec.TimeToFirstToken),
		itl:                b.batchHistogram(metricspec.InterTokenLatency),
		stepDuration:       b.histogram(metricspec.EngineStepDuration, 0),
	}
	return s
}

// finishedSeries are the families fed by FinishedEvent.
type finishedSeries struct {
	success                                  map[engine.FinishReason]prometheus.Counter
	e2e, queue, prefill, decode, inference   prometheus.Observer
	tpot, preemptions                        prometheus.Observer
	promptLen, genLen, maxTokens, kvComputed prometheus.Observer
	maxGenLen, paramsN                       prometheus.Observer // per parent request
}

func newFinishedSeries(b *builder, maxModelLen int) finishedSeries {
	byReason := b.counterVec(metricspec.RequestSuccess, finishReasonValues())
	success := make(map[engine.FinishReason]prometheus.Counter, len(byReason))
	for k, c := range byReason {
		success[engine.FinishReason(k)] = c
	}
	h := func(name string) prometheus.Observer { return b.histogram(name, maxModelLen) }
	return finishedSeries{
		success:     success,
		e2e:         h(metricspec.E2ERequestLatency),
		queue:       h(metricspec.RequestQueueTime),
		prefill:     h(metricspec.RequestPrefillTime),
		decode:      h(metricspec.RequestDecodeTime),
		inference:   h(metricspec.RequestInferenceTime),
		tpot:        h(metricspec.RequestTimePerOutputToken),
		preemptions: h(metricspec.RequestNumPreemptions),
		promptLen:   h(metricspec.RequestPromptTokens),
		genLen:      h(metricspec.RequestGenerationTokens),
		maxTokens:   h(metricspec.RequestParamsMaxTokens),
		kvComputed:  h(metricspec.RequestPrefillKVComputed),
		maxGenLen:   h(metricspec.RequestMaxNumGenerationToks),
		paramsN:     h(metricspec.RequestParamsN),
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
	if m.lora != nil {
		m.lora.note()
	}
	st := &m.step
	st.prefixQueries.Add(float64(s.PrefixQueries))
	st.prefixHits.Add(float64(s.PrefixHits))
	st.preemptions.Add(float64(s.Preemptions))
	st.promptTokens.Add(float64(s.PromptTokens))
	// Cached tokens are the prefix cache's (the device's) and those loaded
	// from the offload tier (the host's, an external KV transfer to vLLM).
	local := max(s.CachedTokens-s.ExternalTokens, 0)
	st.promptCached.Add(float64(s.CachedTokens))
	st.promptCacheHit.Add(float64(local))
	st.promptExternal.Add(float64(s.ExternalTokens))
	st.cachedDevice.Add(float64(local))
	st.cachedHost.Add(float64(s.ExternalTokens))
	st.promptLocalCompute.Add(float64(max(s.PromptTokens-s.CachedTokens, 0)))
	st.extPrefixQueries.Add(float64(s.ExternalQueries))
	st.extPrefixHits.Add(float64(s.ExternalHits))
	m.offload.observe(s)
	m.residency.observe(s)
	st.generationTokens.Add(float64(s.GenerationTokens))
	st.flops.Add(s.FLOPs)
	st.readBytes.Add(s.ReadBytes)
	st.writeBytes.Add(s.WriteBytes)
	st.busySeconds.Add(s.ExecuteTime.Seconds())
	st.steps.Inc()
	m.spec.observe(s)
	// vLLM's frontend records an iteration only when the engine step
	// produced outputs; a step that ran a prefill chunk alone is invisible.
	if s.IterationTokens > 0 || s.GenerationTokens > 0 {
		st.iterationTokens.Observe(float64(s.IterationTokens))
	}
	observeAll(st.ttft, s.TTFTs)
	observeAll(st.itl, s.ITLs)
	if !s.Start.IsZero() && !s.End.IsZero() {
		d := s.End.Sub(s.Start)
		st.stepDuration.Observe(d.Seconds())
		// The rest of the step is the host's: the GPU waits for it.
		st.hostSeconds.Add(max(d-s.ExecuteTime, 0).Seconds())
	}
}

// ObserveFinished implements engine.Observer. Every per-request histogram
// is observed once for every finished request, as vLLM's are, so their
// _counts equal vllm:request_success_total; a phase a request never
// reached (an abort in the queue has no prefill) counts as 0 seconds.
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
	t := &f.Timing
	fs.e2e.Observe(t.E2E())
	fs.queue.Observe(t.QueueTime())
	fs.prefill.Observe(t.PrefillTime())
	fs.decode.Observe(t.DecodeTime())
	fs.inference.Observe(t.InferenceTime())
	fs.tpot.Observe(t.TPOT(f.GenerationTokens))
	fs.preemptions.Observe(float64(t.Preemptions))
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

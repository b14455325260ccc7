package doctor

import (
	"math"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// signals are the numbers the rules reason over, derived once from a
// window. A NaN means the window could not say (no data, or a vLLM target
// without glassbox's series).
type signals struct {
	w        *Window
	client   *ClientView
	seconds  float64
	glassbox bool // the target exports glassbox_* series (utilisation, scheduler config)

	running, waiting, kv []Point
	run, wait, kvs       stats
	waitingShare         float64 // share of readings with a request waiting
	kvHighShare          float64 // share of readings at or above the 0.9 watermark

	busy      float64 // executor utilisation: busy seconds per second (or its stand-in, busySrc)
	busySrc   source
	stepFill  float64 // computed tokens per step / max_num_batched_tokens
	tokPerStp float64
	budgetSrc source // where max_num_batched_tokens came from
	seqsSrc   source // where max_num_seqs came from
	mfu, mbu  float64
	peakSrc   source // where the GPU's peak FLOP/s and bandwidth came from
	gpu       string // the hardware profile behind them, when known

	dcgmSM, dcgmTensor, dcgmDRAM float64 // DCGM's means over the window, NaN without DCGM

	genRate, promptRate, preemptRate float64
	finished, aborts                 float64
	abortShare                       float64
	queueShare, prefillShare         float64 // of e2e time; of inference (prefill + decode) time
	hitRate                          float64
	prefillStarted                   float64 // requests through prefill (count of the prefill-time histogram)
	recomputeShare                   float64 // estimated share of computed tokens spent recomputing preempted requests
	meanPrompt, meanGen              float64 // tokens per finished request
	arrivalRate                      float64 // requests/s arriving, finished plus the change in those in the engine

	ttftP50, ttftP90, itlP50, itlP90, e2eP99 float64

	cfg targetConfig
}

// targetConfig is the target's configuration from its info series; zero
// where unknown.
type targetConfig struct {
	maxNumSeqs, maxBatchedTokens, maxModelLen int
	blockSize, numBlocks, kvBytes             int
	prefixCaching                             *bool
	gpuMemUtil                                float64
	hardware, model                           string
	tensorParallel                            int
}

func readConfig(w *Window) targetConfig {
	atoi := func(f, k string) int {
		n, _ := strconv.Atoi(w.Info[f][k])
		return n
	}
	c := targetConfig{
		maxNumSeqs: atoi(metricspec.SchedulerConfigInfo, "max_num_seqs"), maxBatchedTokens: atoi(metricspec.SchedulerConfigInfo, "max_num_batched_tokens"),
		maxModelLen: atoi(metricspec.SchedulerConfigInfo, "max_model_len"), blockSize: atoi(metricspec.CacheConfigInfo, "block_size"),
		numBlocks: atoi(metricspec.CacheConfigInfo, "num_gpu_blocks"), kvBytes: atoi(metricspec.CacheConfigInfo, "kv_cache_memory_bytes"),
		hardware: w.Info[metricspec.ExecutorInfo]["hardware"], model: w.Info[metricspec.ExecutorInfo]["model"], tensorParallel: atoi(metricspec.ExecutorInfo, "tensor_parallel_size"),
	}
	c.gpuMemUtil, _ = strconv.ParseFloat(w.Info[metricspec.CacheConfigInfo]["gpu_memory_utilization"], 64)
	switch w.Info[metricspec.CacheConfigInfo]["enable_prefix_caching"] {
	case "True", "true":
		t := true
		c.prefixCaching = &t
	case "False", "false":
		f := false
		c.prefixCaching = &f
	}
	return c
}

// derive computes the signals of a window.
func derive(w *Window) *signals {
	s := &signals{w: w, seconds: w.Duration().Seconds(), cfg: readConfig(w), busySrc: srcNone, budgetSrc: srcNone, seqsSrc: srcNone, peakSrc: srcNone}
	s.glassbox = w.Has(metricspec.ExecutorBusySeconds)
	s.running, s.waiting, s.kv = w.Gauge(metricspec.NumRequestsRunning), w.Gauge(metricspec.NumRequestsWaiting), w.Gauge(metricspec.KVCacheUsagePerc)
	s.run, s.wait, s.kvs = summarise(s.running), summarise(s.waiting), summarise(s.kv)
	s.waitingShare = fraction(s.waiting, func(v float64) bool { return v >= 1 })
	s.kvHighShare = fraction(s.kv, func(v float64) bool { return v >= kvWatermark })

	per := func(key string) float64 {
		if s.seconds <= 0 || !w.Has(key) {
			return math.NaN()
		}
		return w.Increase(key) / s.seconds
	}
	ratio := func(a, b float64) float64 {
		if b > 0 {
			return a / b
		}
		return math.NaN()
	}
	s.genRate, s.promptRate, s.preemptRate = per(metricspec.GenerationTokens), per(metricspec.PromptTokens), per(metricspec.NumPreemptions)
	s.finished, s.aborts = w.Increase(metricspec.RequestSuccess), w.Increase(keyAborts)
	s.abortShare = ratio(s.aborts, s.finished)
	s.queueShare = ratio(w.Increase(metricspec.RequestQueueTime+"_sum"), w.Increase(metricspec.E2ERequestLatency+"_sum"))
	s.prefillShare = ratio(w.Increase(metricspec.RequestPrefillTime+"_sum"), w.Increase(metricspec.RequestPrefillTime+"_sum")+w.Increase(metricspec.RequestDecodeTime+"_sum"))
	s.prefillStarted = w.Increase(metricspec.RequestPrefillTime + "_count")
	s.hitRate = ratio(w.Increase(metricspec.PrefixCacheHits), w.Increase(metricspec.PrefixCacheQueries))
	gen, prompt, cached := w.Increase(metricspec.GenerationTokens), w.Increase(metricspec.PromptTokens), w.Increase(metricspec.PromptTokensCached)
	// Per-request lengths: prompt tokens are counted once, at a request's
	// first token, as is TTFT; generated tokens per finished request come
	// from the histogram observed at finish. Either way requests still
	// running at the window's edges do not skew them.
	s.meanPrompt = ratio(prompt, w.Increase(metricspec.TimeToFirstToken+"_count"))
	s.meanGen = ratio(w.Increase(metricspec.RequestGenerationTokens+"_sum"), w.Increase(metricspec.RequestGenerationTokens+"_count"))
	s.tokPerStp = ratio(w.Increase(metricspec.IterationTokens+"_sum"), w.Increase(metricspec.IterationTokens+"_count"))
	if math.IsNaN(s.tokPerStp) {
		s.tokPerStp = ratio(prompt-cached+gen, w.Increase(metricspec.EngineSteps))
	}
	// A preempted request recomputes what it had: on average its prompt
	// and half its output.
	waste := w.Increase(metricspec.NumPreemptions) * (zeroNaN(s.meanPrompt) + zeroNaN(s.meanGen)/2)
	s.recomputeShare = ratio(waste, prompt-cached+gen+waste)
	s.arrivalRate = math.NaN()
	if len(s.running) >= 2 && len(s.waiting) >= 2 && s.seconds > 0 {
		inFlight := func(i int) float64 { return s.running[i].V + s.waiting[i].V }
		s.arrivalRate = max(0, (s.finished+inFlight(len(s.running)-1)-inFlight(0))/s.seconds)
	}
	s.ttftP50, s.ttftP90 = w.Quantile(0.5, metricspec.TimeToFirstToken), w.Quantile(0.9, metricspec.TimeToFirstToken)
	s.itlP50, s.itlP90 = w.Quantile(0.5, metricspec.InterTokenLatency), w.Quantile(0.9, metricspec.InterTokenLatency)
	s.e2eP99 = w.Quantile(0.99, metricspec.E2ERequestLatency)
	s.resolveHardware(per)
	s.resolveBusy(per)
	s.resolveLimits()
	return s
}

// Thresholds of the rules; docs/doctor.md's rule table quotes them.
const (
	kvWatermark       = 0.9  // vLLM's preemption line, and the KV alert's
	kvSpare           = 0.8  // below it the KV cache has room
	busyHigh          = 0.9  // the executor is busy nearly all the time
	busyLow           = 0.5  // the executor idles half the time
	fillHigh          = 0.5  // steps carry at least half the token budget
	fillLow           = 0.25 // steps this empty leave compute to spare
	waitingPersistent = 0.5  // share of readings with a request waiting
	preemptStorm      = 0.5  // preemptions per second, as the alert
	queueDominates    = 0.5  // share of e2e time spent queued, as the alert
	abortHigh         = 0.1  // share of finished requests aborted, as the alert
	minAborts         = 3    // fewer aborts are anecdotes
	prefillDominates  = 0.5  // share of inference time in prefill
	trendRise         = 1.5  // last third over first third
	holdShare         = 0.8  // generation throughput of the last third over the first
	itlGrowth         = 1.5  // ITL at the widest batch over the narrowest
	minCorrelation    = 0.6  // of ITL with batch width
	promptHeavy       = 2.0  // prompt tokens per generated token
	promptDominated   = 10.0 // computed prompt tokens per generated token that make prefill the work
	hitIneffective    = 0.3  // prefix cache hit rate below which caching helps little
	hitShared         = 0.05 // a hit rate this high shows prompts do share prefixes
	pinnedShare       = 0.7  // share of readings with running at max_num_seqs
	staleShare        = 0.25 // share of missed readings that makes the target down, not flaky
	minReadings       = 3    // a window needs this many readings for a trend
)

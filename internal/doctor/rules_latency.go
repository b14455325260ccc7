package doctor

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The latency rules say where a request's time goes: prefill, decode,
// the queue, or a client that gave up.

func prefillBound(s *signals, p promql) *Finding {
	if !(s.prefillStarted >= 3) {
		return nil
	}
	ttft := s.w.IntervalMeans(metricspec.TimeToFirstToken)
	t0, t1, okT := thirds(ttft)
	g0, g1, okG := thirds(s.w.Rates(metricspec.GenerationTokens))
	// Chunked prefill interleaves prompts with other requests' decodes, so
	// prefill work also shows up as decode time: a prompt-dominated load
	// with a fair prefill share counts too.
	perGen := (s.w.Increase(metricspec.PromptTokens) - s.w.Increase(metricspec.PromptTokensCached)) / s.w.Increase(metricspec.GenerationTokens)
	heavy := perGen >= promptHeavy && s.prefillShare >= 0.25
	rising := heavy && okT && okG && t0 > 0 && t1 >= trendRise*t0 && g1 >= holdShare*g0 && !(s.queueShare >= queueDominates)
	if !(s.prefillShare >= prefillDominates) && !rising && !(heavy && perGen >= promptDominated) {
		return nil
	}
	var changes []Change
	var apply func(*ReplicaConfig)
	if s.cfg.prefixCaching != nil && !*s.cfg.prefixCaching {
		changes = append(changes, Change{Flag: "--enable-prefix-caching", Why: "prompts that share a prefix then skip its prefill"})
		apply = func(rc *ReplicaConfig) { rc.PrefixCaching = true }
	}
	if s.stepFill >= 0.8 && s.cfg.maxBatchedTokens > 0 {
		n := 2 * s.cfg.maxBatchedTokens
		changes = append(changes, Change{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(n), Why: "steps are full of prefill chunks: larger chunks cut TTFT (at some inter-token latency)"})
		prev := apply
		apply = func(rc *ReplicaConfig) {
			if prev != nil {
				prev(rc)
			}
			rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, n)
		}
	}
	changes = append(changes, Change{Why: "otherwise shorten prompts, or add replicas (or disaggregate prefill) to cut time to first token"})
	inf := fmt.Sprintf("Prefill took %.0f%% of the time requests spent being computed, and %.0f prompt tokens were computed per generated one: long prompts, not decoding, set the latency.", 100*s.prefillShare, perGen)
	if rising {
		inf = fmt.Sprintf("Time to first token rose %.1f× over the window while generation throughput held (%.0f → %.0f tokens/s): prefills queue behind each other.", t1/t0, g0, g1)
	}
	return &Finding{Severity: Warning, Title: "prefill bound: time to first token is spent computing prompts",
		Evidence: []Evidence{ev("share of inference time in prefill", s.prefillShare, "ratio", p.ratio(p.inc(metricspec.RequestPrefillTime+"_sum"), "("+p.inc(metricspec.RequestPrefillTime+"_sum")+" + "+p.inc(metricspec.RequestDecodeTime+"_sum")+")")),
			ev("TTFT p50", s.ttftP50, "s", p.quantile(0.5, metricspec.TimeToFirstToken)), ev("TTFT p90", s.ttftP90, "s", p.quantile(0.9, metricspec.TimeToFirstToken)),
			ev("mean TTFT, first third of the window", t0, "s", ""), ev("mean TTFT, last third", t1, "s", ""),
			ev("computed prompt tokens per generated token", perGen, "", "("+p.inc(metricspec.PromptTokens)+" - "+p.inc(metricspec.PromptTokensCached)+") / "+p.inc(metricspec.GenerationTokens)),
			ev("prompt tokens per request", s.meanPrompt, "tokens", p.ratio(p.inc(metricspec.PromptTokens), p.inc(metricspec.TimeToFirstToken+"_count"))), s.evGen(p)},
		Inference: inf, Changes: changes, apply: apply}
}

// itlFit regresses each interval's mean inter-token latency on its mean
// batch width (requests running).
type itlFit struct {
	n              int
	a, b, r        float64 // ITL = a + b·running; r the correlation
	xMin, xMax     float64
	yAtMin, yAtMax float64
	growth         float64 // yAtMax / yAtMin
}

func fitITL(s *signals) itlFit {
	var xs, ys []float64
	itl := s.w.IntervalMeans(metricspec.InterTokenLatency)
	run := s.running
	for _, pt := range itl {
		// the interval ends at pt.T; its batch width is the mean of its two readings
		for i := 1; i < len(run); i++ {
			if run[i].T.Equal(pt.T) {
				xs, ys = append(xs, (run[i-1].V+run[i].V)/2), append(ys, pt.V)
				break
			}
		}
	}
	f := itlFit{n: len(xs)}
	if f.n < minReadings+1 {
		return f
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(f.n), my/float64(f.n)
	var sxx, syy, sxy float64
	f.xMin, f.xMax = math.Inf(1), math.Inf(-1)
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx, syy, sxy = sxx+dx*dx, syy+dy*dy, sxy+dx*dy
		f.xMin, f.xMax = math.Min(f.xMin, xs[i]), math.Max(f.xMax, xs[i])
	}
	if sxx == 0 || syy == 0 {
		return f
	}
	f.b = sxy / sxx
	f.a = my - f.b*mx
	f.r = sxy / math.Sqrt(sxx*syy)
	f.yAtMin, f.yAtMax = f.a+f.b*f.xMin, f.a+f.b*f.xMax
	if f.yAtMin > 0 {
		f.growth = f.yAtMax / f.yAtMin
	}
	return f
}

func decodeBound(s *signals, p promql) *Finding {
	// Prefill chunks mixed into decode steps also slow every token, and
	// more so with more requests in flight: only a load that is not
	// prompt-heavy (computed prompt tokens under twice the generated ones)
	// can blame the batch width.
	computedPrompt := s.w.Increase(metricspec.PromptTokens) - s.w.Increase(metricspec.PromptTokensCached)
	if s.prefillShare >= prefillDominates || !(computedPrompt < promptHeavy*s.w.Increase(metricspec.GenerationTokens)) {
		return nil
	}
	f := fitITL(s)
	if f.r < minCorrelation || f.growth < itlGrowth || f.xMax-f.xMin < 2 {
		return nil
	}
	target := 1.25 * f.yAtMin
	seqs := int(math.Max(1, math.Floor((target-f.a)/f.b)))
	changes := []Change{{Flag: "--max-num-seqs", Value: fmt.Sprint(seqs),
		Why: fmt.Sprintf("keeps the fitted inter-token latency near %.1f ms (ITL ≈ %.2f ms + %.3f ms per running request); costs throughput", 1000*target, 1000*f.a, 1000*f.b)},
		{Why: "or add replicas, to keep the throughput at the narrower batch"}}
	return &Finding{Severity: Warning, Title: "decode bound: inter-token latency grows with the batch width",
		Evidence: []Evidence{ev("correlation of interval ITL with requests running", f.r, "ratio", ""),
			ev("fitted ITL at the narrowest batch", f.yAtMin, "s", ""), ev("fitted ITL at the widest batch", f.yAtMax, "s", ""),
			ev("narrowest mean batch", f.xMin, "requests", ""), ev("widest mean batch", f.xMax, "requests", ""),
			ev("ITL p50", s.itlP50, "s", p.quantile(0.5, metricspec.InterTokenLatency)), ev("ITL p90", s.itlP90, "s", p.quantile(0.9, metricspec.InterTokenLatency)), s.evRunning(p)},
		Inference: fmt.Sprintf("Across %d intervals, inter-token latency rose %.1f× as the batch widened from %.0f to %.0f requests: each decode step reads every running sequence's KV cache, so wider batches make every token slower.",
			f.n, f.growth, f.xMin, f.xMax),
		Changes: changes, apply: func(rc *ReplicaConfig) { rc.MaxNumSeqs = seqs }}
}

func queueingDominates(s *signals, p promql) *Finding {
	if !(s.queueShare > queueDominates) {
		return nil
	}
	return &Finding{Severity: Warning, Title: "queueing dominates latency: requests spend most of their time waiting to be scheduled",
		Evidence: []Evidence{ev("share of end-to-end time spent queued", s.queueShare, "ratio", p.ratio(p.inc(metricspec.RequestQueueTime+"_sum"), p.inc(metricspec.E2ERequestLatency+"_sum"))),
			ev("queue time p50", s.w.Quantile(0.5, metricspec.RequestQueueTime), "s", p.quantile(0.5, metricspec.RequestQueueTime)),
			ev("end-to-end latency p99", s.e2eP99, "s", p.quantile(0.99, metricspec.E2ERequestLatency)), s.evWaitingMean(p)},
		Inference: fmt.Sprintf("%.0f%% of end-to-end request time was spent in the queue: the engine is saturated, and faster steps would help less than more capacity.", 100*s.queueShare),
		Changes:   []Change{{Why: "add capacity where the capacity finding points (KV blocks, compute or --max-num-seqs), or shed load"}}}
}

func clientTimeouts(s *signals, p promql) *Finding {
	c := s.client
	byServer := s.aborts >= minAborts && s.abortShare > abortHigh
	byClient := c != nil && c.Timeouts > 0
	if !byServer && !byClient {
		return nil
	}
	evs := []Evidence{ev("share of finished requests aborted", s.abortShare, "ratio", p.ratio(p.inc(metricspec.RequestSuccess, `finished_reason="abort"`), p.inc(metricspec.RequestSuccess))),
		ev("aborts per second", s.aborts/s.seconds, "/s", p.rate(metricspec.RequestSuccess, `finished_reason="abort"`)),
		ev("end-to-end latency p99 (finished requests)", s.e2eP99, "s", p.quantile(0.99, metricspec.E2ERequestLatency))}
	if c != nil {
		evs = append(evs, ev("client: failed requests", float64(c.Failed), "", ""), ev("client: failures naming a timeout", float64(c.Timeouts), "", ""))
	}
	changes := []Change{{Why: "fix the latency first if another finding explains it"}}
	if s.e2eP99 > 0 {
		changes = append([]Change{{Flag: "client timeout", Value: fmt.Sprintf("≥ %.0fs", math.Ceil(2*s.e2eP99)),
			Why: "twice the p99 end-to-end latency; check proxies' idle timeouts for streams too"}}, changes...)
	}
	return &Finding{Severity: Warning, Title: "client timeouts: clients abort requests before they finish",
		Evidence: evs,
		Inference: fmt.Sprintf("%.0f%% of finished requests ended as aborts: clients disconnect before the answer is complete, most often a client timeout firing; their work so far is lost.",
			100*zeroNaN(s.abortShare)),
		Changes: changes}
}

func prefixCaching(s *signals, p promql) *Finding {
	pc := s.cfg.prefixCaching
	if pc == nil || s.finished < 3 {
		return nil
	}
	ratio := s.promptRate / s.genRate
	if !*pc && ratio >= promptHeavy {
		return &Finding{Severity: Warning, Title: "prefix caching is off on a prompt-heavy workload",
			Evidence: []Evidence{ev("enable_prefix_caching", 0, "", p.info(metricspec.CacheConfigInfo)),
				ev("prompt tokens per generated token", ratio, "", p.ratio(p.rate(metricspec.PromptTokens), p.rate(metricspec.GenerationTokens))),
				ev("share of inference time in prefill", s.prefillShare, "ratio", p.ratio(p.inc(metricspec.RequestPrefillTime+"_sum"), "("+p.inc(metricspec.RequestPrefillTime+"_sum")+" + "+p.inc(metricspec.RequestDecodeTime+"_sum")+")"))},
			Inference: fmt.Sprintf("Prompts carry %.1f tokens for every generated one and every prefix is recomputed: a shared system prompt or conversation history would be computed once with prefix caching.", ratio),
			Changes:   []Change{{Flag: "--enable-prefix-caching", Why: "vLLM's default; costs little when prompts share nothing"}},
			apply:     func(rc *ReplicaConfig) { rc.PrefixCaching = true }}
	}
	// With preemptions, hits are partly preempted requests finding their own
	// blocks again, so they show no sharing: the preemption finding covers it.
	if *pc && s.hitRate >= hitShared && s.hitRate < hitIneffective && s.kvHigh() && s.preemptRate == 0 {
		changes, apply := s.kvChanges(1.5)
		return &Finding{Severity: Warning, Title: "prefix caching is ineffective: shared prefixes are evicted before reuse",
			Evidence: []Evidence{ev("prefix-cache hit rate", s.hitRate, "ratio", p.ratio(p.inc(metricspec.PrefixCacheHits), p.inc(metricspec.PrefixCacheQueries))), s.evKV(p), s.evKVHigh(p)},
			Inference: fmt.Sprintf("Prompts do share prefixes (%.0f%% of looked-up tokens hit), but the KV cache is full, so cached blocks are evicted for running requests before they can be reused.",
				100*s.hitRate),
			Changes: changes, apply: apply}
	}
	return nil
}

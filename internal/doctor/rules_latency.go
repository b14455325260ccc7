package doctor

import (
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The latency rules say where a request's time goes: prefill, decode,
// the queue, or a client that gave up.

// ttftTrend is the mean TTFT of the window's first and last thirds, and
// generation throughput's; ok when both have three intervals.
func (s *Signals) ttftTrend() (t0, t1, g0, g1 float64, ok bool) {
	t0, t1, okT := thirds(s.w.IntervalMeans(metricspec.TimeToFirstToken))
	g0, g1, okG := thirds(s.w.Rates(metricspec.GenerationTokens))
	return t0, t1, g0, g1, okT && okG
}

// prefillRising: TTFT rose over the window while generation held, on a
// prompt-heavy load that is not queueing.
func (s *Signals) prefillRising() bool {
	t0, t1, g0, g1, ok := s.ttftTrend()
	return s.promptHeavy() && ok && t0 > 0 && t1 >= s.th.TrendRise*t0 && g1 >= s.th.HoldShare*g0 && !(s.v(sigQueueShare) >= s.th.QueueShare)
}

// promptHeavy: computed prompt tokens at least twice the generated ones,
// and prefill a fair share of inference time. Chunked prefill interleaves
// prompts with other requests' decodes, so prefill work also shows up as
// decode time.
func (s *Signals) promptHeavy() bool {
	return s.v(sigPromptPerGen) >= s.th.PromptHeavy && s.v(sigPrefillShare) >= s.th.PrefillFair
}

func prefillBoundWhen(s *Signals) bool {
	if !(s.v(sigPrefills) >= 3) {
		return false
	}
	return s.v(sigPrefillShare) >= s.th.PrefillDominates || s.prefillRising() || (s.promptHeavy() && s.v(sigPromptPerGen) >= s.th.PromptDominated)
}

func prefillBound(s *Signals, _ *diagnosis) *Finding {
	var changes []Change
	var applies []func(*ReplicaConfig)
	untested := ""
	if c := s.cfg.prefixCaching; c != nil && !*c {
		changes = append(changes, Change{Flag: "--enable-prefix-caching", Why: "prompts that share a prefix then skip its prefill"})
		untested = untestedPrefix
	}
	if s.v(sigFill) >= 0.8 && s.cfg.maxBatchedTokens > 0 {
		n := 2 * s.cfg.maxBatchedTokens
		changes = append(changes, Change{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(n), Why: "steps are full of prefill chunks: larger chunks cut TTFT (at some inter-token latency)"})
		applies = append(applies, func(rc *ReplicaConfig) { rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, n) })
	}
	changes = append(changes, Change{Why: "otherwise shorten prompts, or add replicas (or disaggregate prefill) to cut time to first token"})
	inf := fmt.Sprintf("Prefill took %s of the time requests spent being computed, and %.0f prompt tokens were computed per generated one: long prompts, not decoding, set the latency.",
		pct(s.v(sigPrefillShare)), s.v(sigPromptPerGen))
	t0, t1, g0, g1, _ := s.ttftTrend()
	if s.prefillRising() {
		inf = fmt.Sprintf("Time to first token rose %.1f× over the window while generation throughput held (%.0f → %.0f tokens/s): prefills queue behind each other.", t1/t0, g0, g1)
	}
	evs := append(s.evs(sigPrefillShare, sigTTFTp50, sigTTFTp90),
		ev("mean TTFT, first third of the window", t0, "s", ""), ev("mean TTFT, last third", t1, "s", ""))
	evs = append(evs, s.evs(sigPromptPerGen, sigPromptMean, sigGenRate)...)
	var apply func(*ReplicaConfig)
	if len(applies) > 0 {
		apply = func(rc *ReplicaConfig) {
			for _, a := range applies {
				a(rc)
			}
		}
	}
	return &Finding{Title: "prefill bound: time to first token is spent computing prompts", Evidence: evs, Inference: inf, Changes: changes, apply: apply, untested: untested}
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

func fitITL(w *Window) itlFit {
	var xs, ys []float64
	itl := w.IntervalMeans(metricspec.InterTokenLatency)
	run := w.Gauge(metricspec.NumRequestsRunning)
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

// minReadings is the readings a window needs for a trend.
const minReadings = 3

// decodeFit is the ITL-against-batch fit when it shows decode-bound
// growth, else nil. Prefill chunks mixed into decode steps also slow every
// token, and more so with more requests in flight: only a load that is not
// prompt-heavy can blame the batch width.
func (s *Signals) decodeFit() *itlFit {
	if s.v(sigPrefillShare) >= s.th.PrefillDominates || !(s.v(sigPromptPerGen) < s.th.PromptHeavy) {
		return nil
	}
	f := fitITL(s.w)
	if f.r < s.th.MinCorrelation || f.growth < s.th.ITLGrowth || f.xMax-f.xMin < s.th.MinWidthSpread {
		return nil
	}
	return &f
}

func decodeBound(s *Signals, _ *diagnosis) *Finding {
	f := s.decodeFit()
	target := 1.25 * f.yAtMin
	seqs := int(math.Max(1, math.Floor((target-f.a)/f.b)))
	changes := []Change{{Flag: "--max-num-seqs", Value: fmt.Sprint(seqs),
		Why: fmt.Sprintf("keeps the fitted inter-token latency near %.1f ms (ITL ≈ %.2f ms + %.3f ms per running request); costs throughput", 1000*target, 1000*f.a, 1000*f.b)},
		{Why: "or add replicas, to keep the throughput at the narrower batch"}}
	evs := []Evidence{ev("correlation of interval ITL with requests running", f.r, "ratio", ""),
		ev("fitted ITL at the narrowest batch", f.yAtMin, "s", ""), ev("fitted ITL at the widest batch", f.yAtMax, "s", ""),
		ev("narrowest mean batch", f.xMin, "requests", ""), ev("widest mean batch", f.xMax, "requests", "")}
	return &Finding{Title: "decode bound: inter-token latency grows with the batch width",
		Evidence: append(evs, s.evs(sigITLp50, sigITLp90, sigRunning)...),
		Inference: fmt.Sprintf("Across %d intervals, inter-token latency rose %.1f× as the batch widened from %.0f to %.0f requests: each decode step reads every running sequence's KV cache, so wider batches make every token slower.",
			f.n, f.growth, f.xMin, f.xMax),
		Changes: changes, apply: func(rc *ReplicaConfig) { rc.MaxNumSeqs = seqs }, itl: true}
}

// capacityFindings are the findings that say what holds requests in the
// queue.
var capacityFindings = []string{"compute-and-kv-bound", "kv-capacity-bound", "compute-bound", "host-bound", "concurrency-cap"}

func queueingDominates(s *Signals, d *diagnosis) *Finding {
	var named []string
	for _, c := range capacityFindings {
		if d.has(c) {
			named = append(named, c)
		}
	}
	var changes []Change
	if len(named) > 0 {
		changes = append(changes, Change{Why: "apply what " + strings.Join(named, " and ") + " recommends: it names what holds the queue"})
	} else {
		changes = append(changes, Change{Why: "no capacity finding names what holds the queue (the doctor could not tell compute, KV blocks or the sequence cap apart from this window: " +
			s.missing() + "); add replicas, or shed load, and read the three answers above"})
	}
	return &Finding{Title: "queueing dominates latency: requests spend most of their time waiting to be scheduled",
		Evidence:  s.evs(sigQueueShare, sigQueueP50, sigE2Ep99, sigWaiting),
		Inference: fmt.Sprintf("%s of end-to-end request time was spent in the queue: the engine is saturated, and faster steps would help less than more capacity.", pct(s.v(sigQueueShare))),
		Changes:   changes}
}

// missing says which signals a capacity diagnosis lacked.
func (s *Signals) missing() string {
	var out []string
	for _, n := range []string{sigBusy, sigHostShare, sigBlocks, sigMaxSeqs} {
		if math.IsNaN(s.v(n)) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "every signal was there, but none crossed its threshold"
	}
	return "unknown: " + strings.Join(out, ", ")
}

func clientTimeoutsWhen(s *Signals) bool {
	byServer := s.v(sigAborts) >= s.th.MinAborts && s.v(sigAbortShare) > s.th.AbortShare
	return byServer || s.client != nil && s.client.Timeouts > 0
}

func clientTimeouts(s *Signals, _ *diagnosis) *Finding {
	c := s.client
	evs := s.evs(sigAbortShare, sigAborts, sigE2Ep99)
	if c != nil {
		evs = append(evs, ev("client: failed requests", float64(c.Failed), "", ""), ev("client: failures naming a timeout", float64(c.Timeouts), "", ""))
	}
	changes := []Change{{Why: "fix the latency first if another finding explains it"}}
	if p99 := s.v(sigE2Ep99); p99 > 0 {
		changes = append([]Change{{Flag: "client timeout", Value: fmt.Sprintf("≥ %.0fs", math.Ceil(2*p99)),
			Why: "twice the p99 end-to-end latency; check proxies' idle timeouts for streams too"}}, changes...)
	}
	return &Finding{Title: "client timeouts: clients abort requests before they finish",
		Evidence: evs,
		Inference: fmt.Sprintf("%s of finished requests ended as aborts: clients disconnect before the answer is complete, most often a client timeout firing; their work so far is lost.",
			pct(zeroNaN(s.v(sigAbortShare)))),
		Changes: changes}
}

// prefixAdvice is which prefix-caching finding holds: 1 caching is off on
// a prompt-heavy load, 2 caching is on but its hits are evicted, 0 none.
func (s *Signals) prefixAdvice() int {
	pc := s.cfg.prefixCaching
	if pc == nil || !(s.v(sigFinished) >= 3) {
		return 0
	}
	if !*pc && s.v(sigPromptRate)/s.v(sigGenRate) >= s.th.PromptHeavy {
		return 1
	}
	// With preemptions, hits are partly preempted requests finding their own
	// blocks again, so they show no sharing: the preemption finding covers it.
	hit := s.v(sigHitRate)
	if *pc && hit >= s.th.HitShared && hit < s.th.HitIneffective && s.v(sigKVHighShare) >= s.th.KVHighShare && s.v(sigPreemptRate) == 0 {
		return 2
	}
	return 0
}

func prefixCaching(s *Signals, _ *diagnosis) *Finding {
	if s.prefixAdvice() == 1 {
		ratio := s.v(sigPromptRate) / s.v(sigGenRate)
		return &Finding{Title: "prefix caching is off on a prompt-heavy workload",
			Evidence: append([]Evidence{ev("enable_prefix_caching", 0, "", s.p.info(metricspec.CacheConfigInfo)),
				ev("prompt tokens per generated token", ratio, "", s.p.ratio(s.p.rate(metricspec.PromptTokens), s.p.rate(metricspec.GenerationTokens)))}, s.ev(sigPrefillShare)),
			Inference: fmt.Sprintf("Prompts carry %.1f tokens for every generated one and every prefix is recomputed: a shared system prompt or conversation history would be computed once with prefix caching.", ratio),
			Changes:   []Change{{Flag: "--enable-prefix-caching", Why: "vLLM's default; costs little when prompts share nothing"}},
			untested:  untestedPrefix}
	}
	changes, apply := s.kvChanges(1.5)
	return &Finding{Title: "prefix caching is ineffective: shared prefixes are evicted before reuse",
		Evidence: s.evs(sigHitRate, sigKV, sigKVHighShare),
		Inference: fmt.Sprintf("Prompts do share prefixes (%s of looked-up tokens hit), but the KV cache is full, so cached blocks are evicted for running requests before they can be reused.",
			pct(s.v(sigHitRate))),
		Changes: changes, apply: apply}
}

// untestedPrefix is why enabling prefix caching is not replayed.
const untestedPrefix = "--enable-prefix-caching is not replayed: the replay's prompts share nothing, and with caching off the target's metrics cannot show how much its prompts share"

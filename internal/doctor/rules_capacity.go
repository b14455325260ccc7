package doctor

import (
	"fmt"
	"math"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The capacity rules answer "why do requests wait?": KV blocks, compute,
// or the --max-num-seqs cap; or nothing waits and the load is the limit.
// The executor's busy ratio alone cannot tell them apart (like a GPU's
// "engine active", it is near 1 whenever anything runs), so compute
// headroom is the busy ratio together with how full the steps are: the
// computed tokens per step against --max-num-batched-tokens.

func kvCapacityBound(s *signals, p promql) *Finding {
	if !s.kvLimited() || !s.queued() || s.computeSaturated() || s.pinned() {
		return nil
	}
	f := s.kvFactor()
	changes, apply := s.kvChanges(f)
	changes = append(changes, s.kvRemedies()...)
	evs := []Evidence{s.evKV(p), s.evKVHigh(p), ev("peak KV-cache usage", s.kvs.max, "ratio", fmt.Sprintf("max_over_time(max(%s)[%s:%s])", p.s(metricspec.KVCacheUsagePerc), p.window, p.step)),
		ev("preemptions per second", s.preemptRate, "/s", p.rate(metricspec.NumPreemptions)),
		s.evWaiting(p), s.evWaitingMean(p), s.evRunning(p), s.evMaxSeqs(p), s.evBusy(p), s.evFill(p)}
	if s.w.Has(keyWaitingCapacity) {
		evs = append(evs, ev("mean requests waiting for capacity (vLLM's reason label)", summarise(s.w.Gauge(keyWaitingCapacity)).mean, "",
			fmt.Sprintf("avg_over_time(sum(%s)[%s:%s])", p.s(metricspec.NumRequestsWaitingByReason, `reason="capacity"`), p.window, p.step)))
	}
	if c := s.kvMaxConcurrency(); c > 0 {
		evs = append(evs, ev("kv_cache_max_concurrency: full-length requests the KV cache holds", c, "", p.info(metricspec.CacheConfigInfo)))
	}
	evs = append(evs, s.evDCGM(p)...)
	compute := fmt.Sprintf("the steps used only %.1f%% of the token budget", 100*s.stepFill)
	switch {
	case s.busySrc == srcEstimate:
		compute += fmt.Sprintf(" (vLLM's steps × their latency put the engine loop busy %.0f%% of the time; that counts host time too, so the GPU's share is lower)", 100*s.busy)
	case !math.IsNaN(s.busy):
		compute += fmt.Sprintf(" and the GPU was busy %.0f%% of the time (%s)", 100*s.busy, s.busySrc)
	}
	return &Finding{Severity: Warning, Title: "KV-capacity bound: requests wait for KV blocks while compute has room",
		Evidence: evs,
		Inference: fmt.Sprintf("The KV cache ran full (at the 0.9 watermark, or out of blocks and preempting) while requests waited, and %s: "+
			"the engine could compute more sequences at once but has no blocks to hold them.", compute) + s.conflict(),
		Changes: changes, apply: apply}
}

// kvMaxConcurrency is vLLM's kv_cache_max_concurrency label, or 0.
func (s *signals) kvMaxConcurrency() float64 {
	v, _ := strconv.ParseFloat(s.w.Info[metricspec.CacheConfigInfo][metricspec.CacheMaxConcurrency], 64)
	return v
}

// kvRemedies are the usual KV remedies besides more memory, each with
// whether it helps here and why.
func (s *signals) kvRemedies() []Change {
	var out []Change
	if s.cfg.prefixCaching == nil || *s.cfg.prefixCaching {
		why := "prefix caching is on"
		if !math.IsNaN(s.hitRate) {
			why = fmt.Sprintf("prefix caching is on and serves %.0f%% of prompt tokens: ", 100*s.hitRate)
			if s.hitRate < hitShared {
				why += "the prompts share no prefixes, so caching cannot free blocks here"
			} else {
				why += "shared prefixes already share their blocks"
			}
		}
		out = append(out, Change{Why: why})
	}
	if bs := s.cfg.blockSize; bs > 16 {
		out = append(out, Change{Flag: "--block-size", Value: "16",
			Why: fmt.Sprintf("blocks of %d tokens waste up to %d tokens at each sequence's tail; 16 wastes at most 15", bs, bs-1)})
	} else if bs > 0 {
		ctx := zeroNaN(s.meanPrompt) + zeroNaN(s.meanGen)/2
		if ctx > 0 {
			out = append(out, Change{Why: fmt.Sprintf("a smaller --block-size would not help: blocks of %d tokens waste about %.1f%% of a %.0f-token context", bs, 100*float64(bs)/2/ctx, ctx)})
		}
	}
	switch n := s.cfg.maxNumSeqs; {
	case n > 0 && s.run.mean < 0.9*float64(n):
		out = append(out, Change{Why: fmt.Sprintf("raising --max-num-seqs (%d, %s) would not help: %.0f run on average, held there by the KV cache, not the cap; lowering it trades throughput for fewer preemptions", n, s.seqsSrc, s.run.mean)})
	case n == 0:
		out = append(out, Change{Why: fmt.Sprintf("raising --max-num-seqs would not help: %.0f run on average, held there by the KV cache; lowering it below that trades throughput for fewer preemptions", s.run.mean)})
	}
	return out
}

func computeBound(s *signals, p promql) *Finding {
	if !(s.busy >= busyHigh) || !(s.stepFill >= fillLow) || !s.queued() || s.kvLimited() || s.pinned() {
		return nil
	}
	done := s.finished / s.seconds
	replicas := 2.0
	if s.arrivalRate > 0 && done > 0 {
		replicas = math.Max(2, math.Ceil(s.arrivalRate/done))
	}
	changes := []Change{{Why: fmt.Sprintf("scale out to %.0f replicas: requests arrive at %.2f/s and one replica finishes %.2f/s", replicas, s.arrivalRate, done)}}
	var apply func(*ReplicaConfig)
	if s.stepFill >= 0.9 && s.cfg.maxBatchedTokens > 0 {
		n := 2 * s.cfg.maxBatchedTokens
		changes = append(changes, Change{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(n),
			Why: "steps are full: larger steps amortise the weight reads (better TTFT, worse inter-token latency)"})
		apply = func(rc *ReplicaConfig) { rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, n) }
	}
	evs := append([]Evidence{s.evBusy(p), s.evFill(p)}, s.evPeaks(p)...)
	evs = append(evs, s.evDCGM(p)...)
	evs = append(evs, s.evWaiting(p), s.evWaitingMean(p), s.evKV(p), s.evRunning(p), s.evMaxSeqs(p),
		ev("request arrival rate (finished + change in flight)", s.arrivalRate, "requests/s",
			fmt.Sprintf("(%s + delta((sum(%s) + sum(%s))[%s:%s])) / %g", p.inc(metricspec.RequestSuccess), p.s(metricspec.NumRequestsRunning), p.s(metricspec.NumRequestsWaiting), p.window, p.step, math.Round(s.seconds))),
		ev("request completion rate", done, "requests/s", p.rate(metricspec.RequestSuccess)))
	return &Finding{Severity: Warning, Title: "compute bound: the executor is busy all the time and requests still wait",
		Evidence: evs,
		Inference: fmt.Sprintf("The executor was busy %.0f%% of the time (%s) with KV blocks and sequence slots to spare, yet requests waited: "+
			"the work offered exceeds what one replica computes.", 100*s.busy, s.busySrc) + s.conflict(),
		Changes: changes, apply: apply}
}

func concurrencyCap(s *signals, p promql) *Finding {
	if !s.pinned() || !s.queued() || s.kvs.max >= kvSpare || s.stepFill >= fillHigh {
		return nil
	}
	n := float64(s.cfg.maxNumSeqs)
	kvLimit := n * kvSpare / math.Max(s.kvs.max, 0.01)
	fillLimit := n * fillHigh / math.Max(s.stepFill, 0.001)
	want := math.Max(2*n, math.Ceil(1.25*(s.run.mean+s.wait.mean)))
	suggest := int(math.Floor(math.Min(want, math.Min(kvLimit, fillLimit))))
	if suggest <= s.cfg.maxNumSeqs {
		return nil
	}
	return &Finding{Severity: Warning, Title: "concurrency cap: running is pinned at --max-num-seqs with KV and compute to spare",
		Evidence: []Evidence{s.evRunning(p), s.evMaxSeqs(p),
			ev("share of the window with running within 10% of max_num_seqs", s.pinnedShare(), "ratio",
				p.share(metricspec.NumRequestsRunning, "sum", fmt.Sprintf(">= bool %g", 0.9*n-1))),
			s.evWaiting(p), s.evWaitingMean(p), ev("peak KV-cache usage", s.kvs.max, "ratio", fmt.Sprintf("max_over_time(max(%s)[%s:%s])", p.s(metricspec.KVCacheUsagePerc), p.window, p.step)),
			s.evFill(p), s.evBusy(p)},
		Inference: fmt.Sprintf("Requests waited while exactly %d ran, with the KV cache at most %.0f%% full and steps using %.1f%% of the token budget: "+
			"the scheduler's sequence cap, not the hardware, limits the batch.", s.cfg.maxNumSeqs, 100*s.kvs.max, 100*s.stepFill),
		Changes: []Change{{Flag: "--max-num-seqs", Value: fmt.Sprint(suggest),
			Why: fmt.Sprintf("from %d: the KV cache would stay under %.0f%% (linear in sequences) and steps under half the token budget", s.cfg.maxNumSeqs, 100*kvSpare)}},
		apply: func(rc *ReplicaConfig) { rc.MaxNumSeqs = max(rc.MaxNumSeqs, suggest) }}
}

func underLoaded(s *signals, p promql) *Finding {
	// A request caught between arrival and its first step is not a queue.
	if s.waitingShare >= 0.1 || !(s.busy < busyLow) {
		return nil
	}
	inf := fmt.Sprintf("Nothing waited and the executor idled %.0f%% of the time: the engine has capacity to spare, so throughput is set by the offered load or by the client.", 100*(1-s.busy))
	if c := s.client; c != nil && c.Failed == 0 && c.Completed > 0 {
		inf += fmt.Sprintf(" The client completed %d requests at %.2f/s without failures: it, not the server, set the pace.", c.Completed, c.RequestThroughput)
	}
	return &Finding{Severity: Info, Title: "under-loaded or client-bound: nothing waits and the executor is mostly idle",
		Evidence: append([]Evidence{s.evBusy(p), s.evWaiting(p),
			s.evRunning(p), s.evGen(p)}, s.evDCGM(p)...),
		Inference: inf,
		Changes:   []Change{{Why: "none needed; to use the capacity, send more load (or raise the client's concurrency), or run fewer replicas"}}}
}

func preemptionStorm(s *signals, p promql) *Finding {
	if !(s.preemptRate > preemptStorm) {
		return nil
	}
	sev := Warning
	if s.recomputeShare >= 0.3 {
		sev = Critical
	}
	changes, apply := s.kvChanges(math.Max(1.5, s.kvFactor()))
	if s.run.mean >= 2 {
		changes = append(changes[:len(changes)-1], Change{Flag: "--max-num-seqs", Value: fmt.Sprint(int(s.run.mean * 0.75)),
			Why: "alternatively, admit fewer sequences so that those admitted can finish"}, changes[len(changes)-1])
	}
	return &Finding{Severity: sev, Title: "preemption storm: the engine evicts running requests and recomputes them",
		Evidence: []Evidence{ev("preemptions per second", s.preemptRate, "/s", p.rate(metricspec.NumPreemptions)),
			ev("estimated share of computed tokens spent recomputing preempted requests", s.recomputeShare, "ratio",
				"("+p.inc(metricspec.NumPreemptions)+" * ("+p.inc(metricspec.PromptTokens)+" + "+p.inc(metricspec.GenerationTokens)+" / 2) / "+p.inc(metricspec.RequestSuccess)+") / ("+
					p.inc(metricspec.PromptTokens)+" - "+p.inc(metricspec.PromptTokensCached)+" + "+p.inc(metricspec.GenerationTokens)+")"),
			s.evKV(p), s.evRunning(p)},
		Inference: fmt.Sprintf("%.2f preemptions per second: decoding sequences outgrow the KV cache, so the scheduler evicts some and recomputes their whole context later (about %.0f%% of the computed tokens).",
			s.preemptRate, 100*zeroNaN(s.recomputeShare)),
		Changes: changes, apply: apply}
}

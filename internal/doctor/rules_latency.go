package doctor

import (
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The latency rules say where a request's time goes: prefill, decode,
// the queue, or a client that gave up.

// prefillRising: TTFT rose over the window while generation held, on a
// prompt-heavy load that is not queueing.
func (s *Signals) prefillRising() bool {
	t0, t1, g0, g1 := s.v(SigTTFTFirstThird), s.v(SigTTFTLastThird), s.v(SigGenFirstThird), s.v(SigGenLastThird)
	return s.promptHeavy() && t0 > 0 && t1 >= s.th.TrendRise*t0 && g1 >= s.th.HoldShare*g0 && !(s.v(SigQueueShare) >= s.th.QueueShare)
}

// promptHeavy: computed prompt tokens at least twice the generated ones,
// and prefill a fair share of inference time. Chunked prefill interleaves
// prompts with other requests' decodes, so prefill work also shows up as
// decode time.
func (s *Signals) promptHeavy() bool {
	return s.v(SigPromptPerGen) >= s.th.PromptHeavy && s.v(SigPrefillShare) >= s.th.PrefillFair
}

func prefillBoundWhen(s *Signals) bool {
	if !(s.v(SigPrefills) >= s.th.MinRequests) {
		return false
	}
	return s.v(SigPrefillShare) >= s.th.PrefillDominates || s.prefillRising() || (s.promptHeavy() && s.v(SigPromptPerGen) >= s.th.PromptDominated)
}

func prefillBound(s *Signals, _ *diagnosis) *Finding {
	var changes []Change
	var applies []func(*ReplicaConfig)
	untested := ""
	if c := s.cfg.prefixCaching; c != nil && !*c {
		changes = append(changes, Change{Flag: "--enable-prefix-caching", Why: "prompts that share a prefix then skip its prefill"})
		untested = untestedPrefix
	}
	if s.v(SigFill) >= s.th.PrefillRaiseFill && s.cfg.maxBatchedTokens > 0 {
		n := s.raised(s.cfg.maxBatchedTokens, s.th.BudgetRaise)
		changes = append(changes, Change{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(n), Why: "steps are full of prefill chunks: larger chunks cut TTFT (at some inter-token latency)"})
		applies = append(applies, func(rc *ReplicaConfig) { rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, n) })
	}
	changes = append(changes, Change{Why: "otherwise shorten prompts, or add replicas (or disaggregate prefill) to cut time to first token"})
	inf := fmt.Sprintf("Prefill took %s of the time requests spent being computed, and %.0f prompt tokens were computed per generated one: long prompts, not decoding, set the latency.",
		pct(s.v(SigPrefillShare)), s.v(SigPromptPerGen))
	if s.prefillRising() {
		inf = fmt.Sprintf("Time to first token rose %.1f× over the window while generation throughput held (%.0f → %.0f tokens/s): prefills queue behind each other.",
			s.v(SigTTFTLastThird)/s.v(SigTTFTFirstThird), s.v(SigGenFirstThird), s.v(SigGenLastThird))
	}
	evs := s.evs(SigPrefillShare, SigTTFTp50, SigTTFTp90, SigTTFTFirstThird, SigTTFTLastThird, SigPromptPerGen, SigPromptMean, SigGenRate)
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

// itlGrowsWithBatch: the fit of inter-token latency on the batch width shows
// growth. Prefill chunks mixed into decode steps also slow every token,
// and more so with more requests in flight: only a load that is not
// prompt-heavy can blame the batch width.
func (s *Signals) itlGrowsWithBatch() bool {
	if s.v(SigPrefillShare) >= s.th.PrefillDominates || !(s.v(SigPromptPerGen) < s.th.PromptHeavy) {
		return false
	}
	return s.v(SigITLBatchCorr) >= s.th.MinCorrelation && s.itlGrowth() >= s.th.ITLGrowth && s.v(SigBatchWidest)-s.v(SigBatchNarrowest) >= s.th.MinWidthSpread
}

// itlGrowth is the fitted ITL at the widest batch over the narrowest's.
func (s *Signals) itlGrowth() float64 { return ratio(s.v(SigITLAtWidest), s.v(SigITLAtNarrowest)) }

func decodeBound(s *Signals, _ *diagnosis) *Finding {
	a, b := s.v(SigITLFitIntercept), s.v(SigITLFitSlope)
	target := s.th.ITLTarget * s.v(SigITLAtNarrowest)
	seqs := int(math.Max(1, math.Floor((target-a)/b)))
	changes := []Change{{Flag: "--max-num-seqs", Value: fmt.Sprint(seqs),
		Why: fmt.Sprintf("keeps the fitted inter-token latency near %.1f ms (ITL ≈ %.2f ms + %.3f ms per running request); costs throughput", 1000*target, 1000*a, 1000*b)},
		{Why: "or add replicas, to keep the throughput at the narrower batch"}}
	return &Finding{Title: "decode bound: inter-token latency grows with the batch width",
		Evidence: s.evs(SigITLBatchCorr, SigITLAtNarrowest, SigITLAtWidest, SigBatchNarrowest, SigBatchWidest, SigITLp50, SigITLp90, SigRunning),
		Inference: fmt.Sprintf("Across %.0f intervals, inter-token latency rose %.1f× as the batch widened from %.0f to %.0f requests: each decode step reads every running sequence's KV cache, so wider batches make every token slower.",
			s.v(SigITLFitIntervals), s.itlGrowth(), s.v(SigBatchNarrowest), s.v(SigBatchWidest)),
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
		Evidence:  s.evs(SigQueueShare, SigQueueP50, SigE2Ep99, SigWaiting),
		Inference: fmt.Sprintf("%s of end-to-end request time was spent in the queue: the engine is saturated, and faster steps would help less than more capacity.", pct(s.v(SigQueueShare))),
		Changes:   changes}
}

// missing says which signals a capacity diagnosis lacked.
func (s *Signals) missing() string {
	var out []string
	for _, n := range []SignalName{SigBusy, SigHostShare, SigBlocks, SigMaxSeqs} {
		if math.IsNaN(s.v(n)) {
			out = append(out, string(n))
		}
	}
	if len(out) == 0 {
		return "every signal was there, but none crossed its threshold"
	}
	return "unknown: " + strings.Join(out, ", ")
}

func clientTimeoutsWhen(s *Signals) bool {
	byServer := s.v(SigAborts) >= s.th.MinAborts && s.v(SigAbortShare) > s.th.AbortShare
	return byServer || s.client != nil && s.client.Timeouts > 0
}

func clientTimeouts(s *Signals, _ *diagnosis) *Finding {
	c := s.client
	evs := s.evs(SigAbortShare, SigAborts, SigE2Ep99)
	if c != nil {
		evs = append(evs, ev("client: failed requests", float64(c.Failed), "", ""), ev("client: failures naming a timeout", float64(c.Timeouts), "", ""))
	}
	changes := []Change{{Why: "fix the latency first if another finding explains it"}}
	if p99 := s.v(SigE2Ep99); p99 > 0 {
		changes = append([]Change{{Flag: "client timeout", Value: fmt.Sprintf("≥ %.0fs", math.Ceil(s.th.ClientTimeoutP99*p99)),
			Why: fmt.Sprintf("%g× the p99 end-to-end latency; check proxies' idle timeouts for streams too", s.th.ClientTimeoutP99)}}, changes...)
	}
	return &Finding{Title: "client timeouts: clients abort requests before they finish",
		Evidence: evs,
		Inference: fmt.Sprintf("%s of finished requests ended as aborts: clients disconnect before the answer is complete, most often a client timeout firing; their work so far is lost.",
			pct(zeroNaN(s.v(SigAbortShare)))),
		Changes: changes}
}

// prefixAdvice is which prefix-caching finding holds: 1 caching is off on
// a prompt-heavy load, 2 caching is on but its hits are evicted, 0 none.
func (s *Signals) prefixAdvice() int {
	pc := s.cfg.prefixCaching
	if pc == nil || !(s.v(SigFinished) >= s.th.MinRequests) {
		return 0
	}
	if !*pc && s.v(SigPromptRate)/s.v(SigGenRate) >= s.th.PromptHeavy {
		return 1
	}
	// With preemptions, hits are partly preempted requests finding their own
	// blocks again, so they show no sharing: the preemption finding covers it.
	hit := s.v(SigHitRate)
	if *pc && hit >= s.th.HitShared && hit < s.th.HitIneffective && s.v(SigKVHighShare) >= s.th.KVHighShare && s.v(SigPreemptRate) == 0 {
		return 2
	}
	return 0
}

func prefixCaching(s *Signals, _ *diagnosis) *Finding {
	if s.prefixAdvice() == 1 {
		ratio := s.v(SigPromptRate) / s.v(SigGenRate)
		return &Finding{Title: "prefix caching is off on a prompt-heavy workload",
			Evidence: append([]Evidence{ev("enable_prefix_caching", 0, "", s.p.info(metricspec.CacheConfigInfo)),
				ev("prompt tokens per generated token", ratio, "", s.p.ratio(s.p.rate(metricspec.PromptTokens), s.p.rate(metricspec.GenerationTokens)))}, s.ev(SigPrefillShare)),
			Inference: fmt.Sprintf("Prompts carry %.1f tokens for every generated one and every prefix is recomputed: a shared system prompt or conversation history would be computed once with prefix caching.", ratio),
			Changes:   []Change{{Flag: "--enable-prefix-caching", Why: "vLLM's default; costs little when prompts share nothing"}},
			untested:  untestedPrefix}
	}
	changes, apply := s.kvChanges(s.th.KVGrowEvicting)
	return &Finding{Title: "prefix caching is ineffective: shared prefixes are evicted before reuse",
		Evidence: s.evs(SigHitRate, SigKV, SigKVHighShare),
		Inference: fmt.Sprintf("Prompts do share prefixes (%s of looked-up tokens hit), but the KV cache is full, so cached blocks are evicted for running requests before they can be reused.",
			pct(s.v(SigHitRate))),
		Changes: changes, apply: apply}
}

// untestedPrefix is why enabling prefix caching is not replayed.
const untestedPrefix = "--enable-prefix-caching is not replayed: the replay's prompts share nothing, and with caching off the target's metrics cannot show how much its prompts share"

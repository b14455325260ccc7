package doctor

import (
	"fmt"
	"math"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The capacity rules answer "why do requests wait?": KV blocks (full, or
// too few for the next prompt), compute, both, the host, the
// --max-num-seqs cap; or nothing waits and the load is the limit. The
// busy ratio alone cannot tell them apart (like a GPU's "engine active",
// it is near 1 whenever anything runs), so compute headroom is the busy
// ratio together with how full the steps are, or their roofline.

func kvCapacityBound(s *Signals, _ *diagnosis) *Finding {
	f := s.kvFactor()
	changes, apply := s.kvChanges(f)
	var evs []Evidence
	var title, inf string
	compute := s.computeRoom()
	if s.kvKind() == "capacity" {
		title = "KV-capacity bound: requests wait for KV blocks while compute has room"
		evs = s.evs(SigKV, SigKVHighShare, SigKVPeak, SigPreemptRate, SigWaitingShare, SigWaiting, SigRunning, SigMaxSeqs, SigBusy, SigFill)
		inf = fmt.Sprintf("The KV cache ran full (at the %g watermark, or out of blocks and preempting) while requests waited, and %s: "+
			"the engine could compute more sequences at once but has no blocks to hold them.", s.th.KVWatermark, compute)
		changes = append(changes, s.kvRemedies()...)
	} else {
		title = "KV-capacity bound at admission: the next request's prompt does not fit in the free KV blocks"
		evs = s.evs(SigAdmissionShare, SigKV, SigKVPeak, SigPromptMean, SigBlocks, SigBlockSize, SigPreemptRate, SigWaitingShare, SigWaiting, SigRunning, SigMaxSeqs, SigBusy, SigFill)
		free := (1 - s.v(SigKV)) * s.v(SigBlocks) * s.v(SigBlockSize)
		inf = fmt.Sprintf("In %s of the window a request waited while the free KV blocks (about %.0f tokens at the mean usage of %.2f) could not hold the next request's prompt (about %.0f tokens not in the prefix cache): "+
			"each request takes a large share of the cache, so usage sits below the %g watermark, yet only %.1f run at once, and %s. "+
			"A prompt that does not fit cannot get through its prefill without evicting another: the scheduler holds it in the queue, or admits a chunk of it and preempts it when the next chunk does not fit.",
			pct(s.v(SigAdmissionShare)), free, s.v(SigKV), s.v(SigAdmissionNeed), s.th.KVWatermark, s.v(SigRunning), compute)
		changes = append(changes, s.admissionRemedies()...)
	}
	if !math.IsNaN(s.v(SigWaitingCap)) {
		evs = append(evs, s.ev(SigWaitingCap))
	}
	if c := s.cfg.kvMaxConcurrency; c > 0 {
		evs = append(evs, ev("kv_cache_max_concurrency: full-length requests the KV cache holds", c, "", s.p.info(metricspec.CacheConfigInfo)))
	}
	if s.pinned() {
		inf += fmt.Sprintf(" Running also reached max_num_seqs (%.0f), but raising it cannot help while the blocks are gone.", s.v(SigMaxSeqs))
	}
	if s.computeUnknown() {
		inf += " Whether compute binds too cannot be told from these series (see the first answer above): if it does, the fix is replicas or a larger GPU, not KV memory alone."
	}
	evs = append(evs, s.dcgmEvidence()...)
	return &Finding{Title: title, Evidence: evs, Inference: inf + s.conflict(), Changes: changes, apply: apply}
}

// computeRoom says how much compute the KV-bound engine left unused.
func (s *Signals) computeRoom() string {
	out := fmt.Sprintf("the steps used only %s of the token budget", pct(s.v(SigFill)))
	switch {
	case s.src(SigBusy) == srcEstimate:
		out += fmt.Sprintf(" (vLLM's steps × their latency put the engine loop busy %s of the time; that counts host time too, so the GPU's share is lower)", pct(s.v(SigBusy)))
	case !math.IsNaN(s.v(SigBusy)):
		out += fmt.Sprintf(" and the GPU was busy %s of the time (%s)", pct(s.v(SigBusy)), s.src(SigBusy))
	}
	return out
}

// kvFactor is how much larger the KV cache should be for the requests
// that waited to run beside those that ran, within the thresholds'
// [kv_grow_min, kv_grow_max].
func (s *Signals) kvFactor() float64 {
	run := zeroNaN(s.v(SigRunning))
	f := (run + zeroNaN(s.v(SigWaiting))) / math.Max(run, 1)
	return math.Min(s.th.KVGrowMax, math.Max(s.th.KVGrowMin, f))
}

// kvChanges recommends a KV cache f times the current one.
func (s *Signals) kvChanges(f float64) ([]Change, func(*ReplicaConfig)) {
	var out []Change
	c := s.cfg
	blocks := int(math.Ceil(float64(c.numBlocks) * f))
	switch {
	case c.kvBytes > 0:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: formatBytes(float64(c.kvBytes) * f),
			Why: fmt.Sprintf("%.2f× the KV cache (%d → %d blocks)", f, c.numBlocks, blocks)})
	case c.numBlocks > 0:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: fmt.Sprintf("%.2f× today's KV bytes", f),
			Why: fmt.Sprintf("%d → %d blocks of %d tokens", c.numBlocks, blocks, c.blockSize)})
		if c.gpuMemUtil > 0 && c.gpuMemUtil < s.th.GPUMemoryUtil {
			out = append(out, Change{Flag: "--gpu-memory-utilization", Value: fmt.Sprint(s.th.GPUMemoryUtil),
				Why: fmt.Sprintf("from %g, if the weights and activations leave room", c.gpuMemUtil)})
		}
	default:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: fmt.Sprintf("%.2f× today's", f), Why: "more room for KV blocks"})
	}
	if c.prefixCaching != nil && !*c.prefixCaching {
		out = append(out, Change{Flag: "--enable-prefix-caching", Why: "shared prompt prefixes then share blocks"})
	}
	out = append(out, Change{Why: fmt.Sprintf("or, when the GPU has no more memory, %.2f× the replicas", f)})
	if blocks <= 0 {
		return out, nil
	}
	return out, func(rc *ReplicaConfig) { rc.NumBlocks = max(rc.NumBlocks, blocks) }
}

func formatBytes(b float64) string {
	const gib, mib = 1 << 30, 1 << 20
	if b >= gib {
		return fmt.Sprintf("%.0fM", math.Ceil(b/mib)) // whole MiB, as serve's count parser reads "M"
	}
	return fmt.Sprintf("%.0f", math.Ceil(b))
}

// kvRemedies are the usual KV remedies besides more memory, each with
// whether it helps here and why.
func (s *Signals) kvRemedies() []Change {
	var out []Change
	c := s.cfg
	if c.prefixCaching == nil || *c.prefixCaching {
		why := "prefix caching is on"
		if hit := s.v(SigHitRate); !math.IsNaN(hit) {
			why = fmt.Sprintf("prefix caching is on and serves %s of prompt tokens: ", pct(hit))
			if hit < s.th.HitShared {
				why += "the prompts share no prefixes, so caching cannot free blocks here"
			} else {
				why += "shared prefixes already share their blocks"
			}
		}
		out = append(out, Change{Why: why})
	}
	if bs := c.blockSize; bs > 16 {
		out = append(out, Change{Flag: "--block-size", Value: "16",
			Why: fmt.Sprintf("blocks of %d tokens waste up to %d tokens at each sequence's tail; 16 wastes at most 15", bs, bs-1)})
	} else if bs > 0 {
		ctx := zeroNaN(s.v(SigPromptMean)) + zeroNaN(s.v(SigGenMean))/2
		if ctx > 0 {
			out = append(out, Change{Why: fmt.Sprintf("a smaller --block-size would not help: blocks of %d tokens waste about %.1f%% of a %.0f-token context", bs, 100*float64(bs)/2/ctx, ctx)})
		}
	}
	run := s.v(SigRunning)
	switch n := s.v(SigMaxSeqs); {
	case n > 0 && run < s.th.PinnedNear*n:
		out = append(out, Change{Why: fmt.Sprintf("raising --max-num-seqs (%.0f, %s) would not help: %.0f run on average, held there by the KV cache, not the cap; lowering it trades throughput for fewer preemptions", n, s.src(SigMaxSeqs), run)})
	case math.IsNaN(n):
		out = append(out, Change{Why: fmt.Sprintf("raising --max-num-seqs would not help: %.0f run on average, held there by the KV cache; lowering it below that trades throughput for fewer preemptions", run)})
	}
	return out
}

// admissionRemedies are what fits an engine whose next prompt does not fit
// the free blocks, and what does not.
func (s *Signals) admissionRemedies() []Change {
	prompt, budget := s.v(SigPromptMean), s.v(SigBudget)
	out := []Change{{Why: fmt.Sprintf("chunked prefill does not get round it: a prompt's blocks are allocated chunk by chunk, and the first chunk (min(prompt %.0f, budget %.0f) tokens) already needs more than is free; "+
		"a smaller --max-num-batched-tokens would admit prompts in smaller chunks, and they would then preempt each other as they grow: the same KV, spent on recompute", prompt, budget)}}
	if ml := s.cfg.maxModelLen; ml > 0 {
		req := zeroNaN(prompt) + zeroNaN(s.v(SigGenMean))
		out = append(out, Change{Why: fmt.Sprintf("a smaller --max-model-len (now %d) only refuses the longest prompts (a 400 instead of holding the cache for them): a product decision, worth it only if few requests are far above the mean of %.0f tokens", ml, req)})
	}
	if c := s.cfg; c.prefixCaching != nil && !*c.prefixCaching {
		out = append(out, Change{Flag: "--enable-prefix-caching", Why: "prompts sharing a prefix (a system prompt, retrieved documents) would share its blocks"})
	}
	return out
}

func computeBound(s *Signals, _ *diagnosis) *Finding {
	done := s.v(SigFinishRate)
	replicas := s.replicasFor()
	changes := []Change{{Why: fmt.Sprintf("scale out to %d replicas: requests arrive at %.2f/s and one replica finishes %.2f/s", replicas, s.v(SigArrivalRate), done)}}
	apply := func(rc *ReplicaConfig) { rc.Replicas = max(rc.Replicas, replicas) }
	if s.v(SigFill) >= s.th.BudgetRaiseFill && s.cfg.maxBatchedTokens > 0 {
		n := s.raised(s.cfg.maxBatchedTokens, s.th.BudgetRaise)
		changes = append(changes, Change{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(n),
			Why: "steps are full: larger steps amortise the weight reads (better TTFT, worse inter-token latency)"})
		prev := apply
		apply = func(rc *ReplicaConfig) { prev(rc); rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, n) }
	}
	if c, a, ok := s.hostGapChange(); ok {
		changes = append(changes, c)
		prev := apply
		apply = func(rc *ReplicaConfig) { prev(rc); a(rc) }
	}
	if c, ok := s.budgetUnknown(); ok {
		changes = append(changes, c)
	}
	evs := s.evs(SigBusy, SigFill)
	if !math.IsNaN(s.v(SigPeakFLOPs)) {
		evs = append(evs, s.evs(SigMFU, SigMBU, SigRoofline)...)
	}
	if !(s.v(SigBusy) >= s.th.BusyHigh) {
		evs = append(evs, s.evs(SigEngineBusy, SigQueueGrowth, SigHostShare)...)
	}
	evs = append(evs, s.dcgmEvidence()...)
	evs = append(evs, s.evs(SigWaitingShare, SigWaiting, SigKV, SigRunning, SigMaxSeqs, SigArrivalRate, SigFinishRate)...)
	return &Finding{Title: "compute bound: the GPU is busy all the time on full steps and requests still wait",
		Evidence: evs,
		Inference: s.saturationClause("steps that use its arithmetic", "steps that use the GPU's arithmetic") + ", with KV blocks to spare, yet requests waited: " +
			"the work offered exceeds what one replica computes." + s.conflict(),
		Changes: changes, apply: apply}
}

// replicasFor is how many replicas the arrival rate needs at one
// replica's completion rate, at least scale_out_min.
func (s *Signals) replicasFor() int {
	arr, done := s.v(SigArrivalRate), s.v(SigFinishRate)
	if arr > 0 && done > 0 {
		return int(math.Max(s.th.ScaleOutMin, math.Ceil(arr/done)))
	}
	return int(s.th.ScaleOutMin)
}

// raised is n times factor, rounded up: a flag's raise.
func (s *Signals) raised(n int, factor float64) int {
	return int(math.Ceil(float64(n) * factor))
}

func computeAndKVBound(s *Signals, _ *diagnosis) *Finding {
	replicas := s.replicasFor()
	f := s.kvFactor()
	kv := fmt.Sprintf("the KV cache at the watermark %s of the window (%.2f preemptions/s)", pct(s.v(SigKVHighShare)), zeroNaN(s.v(SigPreemptRate)))
	if s.kvKind() == "admission" {
		kv = fmt.Sprintf("the free KV blocks too few for the next prompt in %s of the window", pct(s.v(SigAdmissionShare)))
	}
	changes := []Change{
		{Why: fmt.Sprintf("scale out to %d replicas (arrivals %.2f/s, one replica finishes %.2f/s): each brings both compute and KV memory", replicas, s.v(SigArrivalRate), s.v(SigFinishRate))},
		{Why: "or move to a larger GPU (more HBM for KV and more FLOP/s); changing a flag on this one trades one limit for the other"},
		{Why: fmt.Sprintf("not more KV memory alone: %.2f× the blocks would let %.2f× the sequences run, but the steps are already full, so compute binds next", f, f)},
		{Why: fmt.Sprintf("not a faster GPU alone without more memory: it would run the same %.0f sequences faster while the KV cache still holds the batch there", s.v(SigRunning))},
	}
	evs := s.evs(SigBusy, SigFill, SigKV, SigKVHighShare, SigAdmissionShare, SigPreemptRate, SigWaitingShare, SigWaiting, SigRunning, SigArrivalRate, SigFinishRate)
	evs = append(evs, s.dcgmEvidence()...)
	return &Finding{Title: "compute and KV both saturated: the GPU is busy on full steps and the KV cache is out of blocks",
		Evidence: evs,
		Inference: fmt.Sprintf("The GPU was busy %s of the time (%s) on steps %s full, with %s, while requests waited: both limits bind at once. "+
			"Relieving one leaves the other binding: with more KV the steps cannot take the extra sequences; with more compute the KV cache still caps the batch.",
			pct(s.v(SigBusy)), s.src(SigBusy), pct(s.v(SigFill)), kv) + s.conflict(),
		Changes: changes, apply: func(rc *ReplicaConfig) { rc.Replicas = max(rc.Replicas, replicas) }}
}

func hostBound(s *Signals, _ *diagnosis) *Finding {
	host, eng := s.v(SigHostShare), s.v(SigEngineBusy)
	var changes []Change
	var applies []func(*ReplicaConfig)
	if !s.cfg.asyncScheduling {
		changes = append(changes, Change{Flag: "--async-scheduling",
			Why: "vLLM schedules the next step while the GPU runs this one: host time up to the GPU's own step is hidden"})
		applies = append(applies, func(rc *ReplicaConfig) { rc.AsyncScheduling = true })
	}
	if n := s.v(SigMaxSeqs); n > 0 && s.pinned() {
		want := s.raised(int(n), s.th.SeqsRaise)
		changes = append(changes, Change{Flag: "--max-num-seqs", Value: fmt.Sprint(want),
			Why: fmt.Sprintf("running sits at %.0f: larger batches amortise the host's per-step work over more tokens (if the KV cache holds them)", n)})
		applies = append(applies, func(rc *ReplicaConfig) { rc.MaxNumSeqs = max(rc.MaxNumSeqs, want) })
	} else {
		changes = append(changes, Change{Why: "larger batches amortise the host's per-step work: more concurrent requests per replica (fewer replicas for the same load)"})
	}
	changes = append(changes, Change{Why: "give the engine's process more CPU: fewer replicas per host, a faster CPU, no CPU limit below its need; a Python-heavy frontend (detokenisation, logits processors) costs per token"})
	evs := s.evs(SigHostShare, SigEngineBusy, SigBusy, SigBusyEstimate, SigRunning, SigMaxSeqs, SigPinnedShare, SigWaitingShare, SigFill, SigITLp50)
	evs = append(evs, s.dcgmEvidence()...)
	inf := fmt.Sprintf("The engine stepped %s of the time, but within its steps the GPU waited for the host %s of the time (%s): scheduling, output processing and the frontend, "+
		"not the GPU, set the step's length, so the GPU idles between kernels while requests run.", pct(eng), pct(host), s.src(SigHostShare))
	if s.pinned() {
		inf += fmt.Sprintf(" Running sat at max_num_seqs (%.0f) too: a larger batch would carry more tokens per host-bound step.", s.v(SigMaxSeqs))
	}
	var apply func(*ReplicaConfig)
	if len(applies) > 0 {
		apply = func(rc *ReplicaConfig) {
			for _, a := range applies {
				a(rc)
			}
		}
	}
	return &Finding{Title: "host bound: the GPU waits for the host between steps", Evidence: evs, Inference: inf, Changes: changes, apply: apply}
}

// capSuggestion is the --max-num-seqs that concurrency-cap recommends, or
// 0 when the cap is not what holds requests back: running pinned at it
// while requests wait, with the KV cache and the steps to spare.
func (s *Signals) capSuggestion() int {
	n := s.v(SigMaxSeqs)
	if !s.pinned() || !s.queued() || !(n > 0) || s.v(SigKVPeak) >= s.th.KVSpare || s.fullSteps() || s.computeSaturated() || s.computeUnknown() {
		return 0
	}
	kvLimit := n * s.th.KVSpare / math.Max(s.v(SigKVPeak), 0.01)
	fillLimit := n * s.th.FillHigh / math.Max(s.v(SigFill), 0.001)
	inFlight := (s.v(SigRunning) + s.v(SigWaiting)) / float64(s.cfg.engines) // a data-parallel rank's share: the cap is each rank's
	want := math.Max(float64(s.raised(int(n), s.th.SeqsRaise)), math.Ceil(s.th.CapHeadroom*inFlight))
	if suggest := int(math.Floor(math.Min(want, math.Min(kvLimit, fillLimit)))); suggest > int(n) {
		return suggest
	}
	return 0
}

func concurrencyCap(s *Signals, _ *diagnosis) *Finding {
	suggest := s.capSuggestion()
	return &Finding{Title: "concurrency cap: running is pinned at --max-num-seqs with KV and compute to spare",
		Evidence: s.evs(SigRunning, SigMaxSeqs, SigPinnedShare, SigWaitingShare, SigWaiting, SigKVPeak, SigFill, SigBusy),
		Inference: fmt.Sprintf("Requests waited while %.0f ran, with the KV cache at most %s full and steps using %s of the token budget: "+
			"the scheduler's sequence cap, not the hardware, limits the batch.", s.v(SigMaxSeqs), pct(s.v(SigKVPeak)), pct(s.v(SigFill))),
		Changes: []Change{{Flag: "--max-num-seqs", Value: fmt.Sprint(suggest),
			Why: fmt.Sprintf("from %.0f: the KV cache would stay under %s (linear in sequences) and steps under %s of the token budget", s.v(SigMaxSeqs), pct(s.th.KVSpare), pct(s.th.FillHigh))}},
		apply: func(rc *ReplicaConfig) { rc.MaxNumSeqs = max(rc.MaxNumSeqs, suggest) }}
}

func underLoaded(s *Signals, _ *diagnosis) *Finding {
	room := fmt.Sprintf(" and the GPU's steps had room (busy %s of the time, steps %s full)", pct(s.v(SigBusy)), pct(s.v(SigFill)))
	if math.IsNaN(s.v(SigBusy)) {
		room = "" // nothing says how busy it was
	}
	inf := fmt.Sprintf("Nothing waited (a request in %s of the window)%s: every request was served as it came, so throughput is set by the offered load or by the client.",
		pct(s.v(SigWaitingShare)), room)
	if c := s.client; c != nil && c.Failed == 0 && c.Completed > 0 {
		inf += fmt.Sprintf(" The client completed %d requests at %.2f/s without failures: it, not the server, set the pace.", c.Completed, c.RequestThroughput)
	}
	return &Finding{Title: "under-loaded or client-bound: nothing waits and the GPU has room",
		Evidence:  append(s.evs(SigBusy, SigWaitingShare, SigRunning, SigGenRate), s.dcgmEvidence()...),
		Inference: inf,
		Changes:   []Change{{Why: "none needed; to use the capacity, send more load (or raise the client's concurrency), or run fewer replicas"}}}
}

func preemptionStorm(s *Signals, _ *diagnosis) *Finding {
	sev := Warning
	if s.v(SigRecompute) >= s.th.RecomputeCritical {
		sev = Critical
	}
	changes, apply := s.kvChanges(math.Max(s.th.KVGrowEvicting, s.kvFactor()))
	if run := s.v(SigRunning); run >= 2 && int(run*s.th.StormSeqsShare) >= 1 {
		changes = append(changes[:len(changes)-1], Change{Flag: "--max-num-seqs", Value: fmt.Sprint(int(run * s.th.StormSeqsShare)),
			Why: "alternatively, admit fewer sequences so that those admitted can finish"}, changes[len(changes)-1])
	}
	return &Finding{Severity: sev, Title: "preemption storm: the engine evicts running requests and recomputes them",
		Evidence: s.evs(SigPreemptRate, SigRecompute, SigKV, SigRunning),
		Inference: fmt.Sprintf("%.2f preemptions per second: decoding sequences outgrow the KV cache, so the scheduler evicts some and recomputes their whole context later (about %s of the computed tokens).",
			s.v(SigPreemptRate), pct(zeroNaN(s.v(SigRecompute)))),
		Changes: changes, apply: apply}
}

// dcgmEvidence is DCGM's other activities, when it is there.
func (s *Signals) dcgmEvidence() []Evidence {
	if math.IsNaN(s.v(SigDCGMSM)) {
		return nil
	}
	return s.evs(SigDCGMSM, SigDCGMTensor, SigDCGMDRAM)
}

// conflict says where two readings of utilisation disagree: the one
// measured (glassbox's or DCGM's) and vLLM's estimate (steps per second ×
// step time), unless the host's share of each step explains it (the
// estimate counts host time; the host-bound finding says so).
func (s *Signals) conflict() string {
	src := s.src(SigBusy)
	if (src != srcGlassbox && src != srcDCGM) || s.hostBound() {
		return ""
	}
	if est := s.v(SigStepsTimesITL); !math.IsNaN(est) && math.Abs(est-s.v(SigBusy)) > s.th.ConflictGap {
		return fmt.Sprintf(" The readings conflict: %s says the GPU was busy %s of the time, vLLM's steps × their latency %s; trust the measurement, and suspect the step latency (a frontend that falls behind stretches it).",
			src, pct(s.v(SigBusy)), pct(est))
	}
	return ""
}

// hostDuration is the simulator's per-step host time, for a replay.
func (c targetConfig) hostDuration() time.Duration {
	return time.Duration(c.hostOverhead * float64(time.Second))
}

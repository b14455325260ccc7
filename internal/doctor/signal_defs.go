package doctor

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// one is a signal with a single source.
func one(name SignalName, unit string, src source, what string, value func(*view) float64, q func(promql, *Signals) string) signalDef {
	return signalDef{name: name, unit: unit, alts: []signalAlt{{src: src, what: what, value: value, promql: q}}}
}

// signalDefs is the registry, in dependency order.
func signalDefs() []signalDef {
	m := metricspec.NumRequestsRunning
	w := metricspec.NumRequestsWaiting
	kv := metricspec.KVCacheUsagePerc
	hsum := func(f string) string { return f + "_sum" }
	hcount := func(f string) string { return f + "_count" }
	return append([]signalDef{
		// The queue and the batch.
		one(SigRunning, "", srcVLLM, "mean requests running", func(v *view) float64 { return v.mean(m) },
			func(p promql, _ *Signals) string { return p.avg(m, "sum") }),
		one(SigRunningPeak, "", srcVLLM, "peak requests running", func(v *view) float64 { return v.peak(m) },
			func(p promql, _ *Signals) string { return p.maxOver(m, "sum") }),
		one(SigWaiting, "", srcVLLM, "mean requests waiting", func(v *view) float64 { return v.mean(w) },
			func(p promql, _ *Signals) string { return p.avg(w, "sum") }),
		one(SigWaitingShare, "ratio", srcVLLM, "share of the window with a request waiting",
			func(v *view) float64 { return v.share(w, func(x float64) bool { return x >= 1 }) },
			func(p promql, _ *Signals) string { return p.share(w, "sum", ">= bool 1") }),
		one(SigWaitingCap, "", srcVLLM, "mean requests waiting for capacity (vLLM's reason label)", func(v *view) float64 { return v.mean(keyWaitingCapacity) },
			func(p promql, _ *Signals) string {
				return fmt.Sprintf("avg_over_time(sum(%s)[%s:%s])", p.s(metricspec.NumRequestsWaitingByReason, `reason="capacity"`), p.window, p.step)
			}),
		one(SigKV, "ratio", srcVLLM, "mean KV-cache usage", func(v *view) float64 { return v.mean(kv) },
			func(p promql, _ *Signals) string { return p.avg(kv, "max") }),
		one(SigKVPeak, "ratio", srcVLLM, "peak KV-cache usage", func(v *view) float64 { return v.peak(kv) },
			func(p promql, _ *Signals) string { return p.maxOver(kv, "max") }),
		one(SigKVHighShare, "ratio", srcVLLM, "share of the window with KV usage at the watermark",
			func(v *view) float64 { return v.share(kv, func(x float64) bool { return x >= v.th().KVWatermark }) },
			func(p promql, s *Signals) string {
				return p.share(kv, "max", fmt.Sprintf(">= bool %g", s.th.KVWatermark))
			}),

		// Throughput and the requests' shape.
		one(SigGenRate, "tokens/s", srcVLLM, "generation throughput", func(v *view) float64 { return v.rate(metricspec.GenerationTokens) },
			func(p promql, _ *Signals) string { return p.rate(metricspec.GenerationTokens) }),
		one(SigPromptRate, "tokens/s", srcVLLM, "prompt throughput", func(v *view) float64 { return v.rate(metricspec.PromptTokens) },
			func(p promql, _ *Signals) string { return p.rate(metricspec.PromptTokens) }),
		one(SigPreemptRate, "/s", srcVLLM, "preemptions per second", func(v *view) float64 { return v.rate(metricspec.NumPreemptions) },
			func(p promql, _ *Signals) string { return p.rate(metricspec.NumPreemptions) }),
		one(SigPreemptions, "", srcVLLM, "preemptions", func(v *view) float64 { return v.inc(metricspec.NumPreemptions) },
			func(p promql, _ *Signals) string { return p.inc(metricspec.NumPreemptions) }),
		one(SigGenerated, "tokens", srcVLLM, "generated tokens", func(v *view) float64 { return v.inc(metricspec.GenerationTokens) },
			func(p promql, _ *Signals) string { return p.inc(metricspec.GenerationTokens) }),
		one(SigSteps, "", srcGlassbox, "engine steps", func(v *view) float64 { return v.inc(metricspec.EngineSteps) },
			func(p promql, _ *Signals) string { return p.inc(metricspec.EngineSteps) }),
		// A restart shows as counters falling back: each reading where
		// finished requests (or, before any finish, generated tokens) drop.
		one(SigRestarts, "", srcVLLM, "restarts seen (counters falling back to zero)", restarts,
			func(p promql, _ *Signals) string {
				return "resets(" + p.s(metricspec.RequestSuccess) + "[" + p.window + "])"
			}),
		one(SigFinished, "", srcVLLM, "finished requests", func(v *view) float64 { return v.inc(metricspec.RequestSuccess) },
			func(p promql, _ *Signals) string { return p.inc(metricspec.RequestSuccess) }),
		one(SigFinishRate, "requests/s", srcVLLM, "request completion rate", func(v *view) float64 { return v.rate(metricspec.RequestSuccess) },
			func(p promql, _ *Signals) string { return p.rate(metricspec.RequestSuccess) }),
		one(SigArrivalRate, "requests/s", srcVLLM, "request arrival rate (finished + change in flight)", arrivalRate,
			func(p promql, s *Signals) string {
				return fmt.Sprintf("(%s + delta((sum(%s) + sum(%s))[%s:%s])) / %g", p.inc(metricspec.RequestSuccess), p.s(m), p.s(w), p.window, p.step, math.Round(s.seconds))
			}),
		// The queue's growth: the least-squares slope of the waiting gauge
		// over the readings, as PromQL's deriv fits it. A queue that keeps
		// growing says more arrives than the engine serves, whatever its
		// utilisation counters read.
		one(SigQueueGrowth, "requests/s", srcVLLM, "growth of the waiting queue (least-squares slope of requests waiting)", func(v *view) float64 { return slope(v.w.Gauge(w)) },
			func(p promql, _ *Signals) string {
				return fmt.Sprintf("deriv(sum(%s)[%s:%s])", p.s(w), p.window, p.step)
			}),
		one(SigAborts, "", srcVLLM, "aborted requests", func(v *view) float64 { return v.inc(keyAborts) },
			func(p promql, _ *Signals) string { return p.inc(metricspec.RequestSuccess, `finished_reason="abort"`) }),
		one(SigAbortShare, "ratio", srcVLLM, "share of finished requests aborted", func(v *view) float64 { return ratio(v.inc(keyAborts), v.inc(metricspec.RequestSuccess)) },
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(metricspec.RequestSuccess, `finished_reason="abort"`), p.inc(metricspec.RequestSuccess))
			}),
		one(SigQueueShare, "ratio", srcVLLM, "share of end-to-end time spent queued",
			func(v *view) float64 {
				return ratio(v.inc(hsum(metricspec.RequestQueueTime)), v.inc(hsum(metricspec.E2ERequestLatency)))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(hsum(metricspec.RequestQueueTime)), p.inc(hsum(metricspec.E2ERequestLatency)))
			}),
		one(SigPrefillShare, "ratio", srcVLLM, "share of inference time in prefill",
			func(v *view) float64 {
				pre := v.inc(hsum(metricspec.RequestPrefillTime))
				return ratio(pre, pre+v.inc(hsum(metricspec.RequestDecodeTime)))
			},
			func(p promql, _ *Signals) string {
				pre := p.inc(hsum(metricspec.RequestPrefillTime))
				return p.ratio(pre, "("+pre+" + "+p.inc(hsum(metricspec.RequestDecodeTime))+")")
			}),
		one(SigPrefills, "", srcVLLM, "requests through prefill", func(v *view) float64 { return v.inc(hcount(metricspec.RequestPrefillTime)) },
			func(p promql, _ *Signals) string { return p.inc(hcount(metricspec.RequestPrefillTime)) }),
		one(SigHitRate, "ratio", srcVLLM, "prefix-cache hit rate",
			func(v *view) float64 {
				return ratio(v.inc(metricspec.PrefixCacheHits), v.inc(metricspec.PrefixCacheQueries))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(metricspec.PrefixCacheHits), p.inc(metricspec.PrefixCacheQueries))
			}),
		// Prompt tokens not computed: served by the prefix cache, or loaded
		// back from an offload tier's host memory (vLLM counts both in
		// prompt_tokens_cached, the prefix cache's hits alone in
		// prefix_cache_hits).
		one(SigCachedShare, "ratio", srcVLLM, "share of prompt tokens cached (the prefix cache's, or loaded from the offload tier)",
			func(v *view) float64 {
				return ratio(v.inc(metricspec.PromptTokensCached), v.inc(metricspec.PromptTokens))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(metricspec.PromptTokensCached), p.inc(metricspec.PromptTokens))
			}),
		// Prompt tokens are counted once, at a request's first token, as is
		// TTFT; generated tokens per finished request come from the
		// histogram observed at finish: requests at the edges do not skew
		// either.
		one(SigPromptMean, "tokens", srcVLLM, "prompt tokens per request",
			func(v *view) float64 {
				return ratio(v.inc(metricspec.PromptTokens), v.inc(hcount(metricspec.TimeToFirstToken)))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(metricspec.PromptTokens), p.inc(hcount(metricspec.TimeToFirstToken)))
			}),
		one(SigGenMean, "tokens", srcVLLM, "generated tokens per finished request",
			func(v *view) float64 {
				return ratio(v.inc(hsum(metricspec.RequestGenerationTokens)), v.inc(hcount(metricspec.RequestGenerationTokens)))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(hsum(metricspec.RequestGenerationTokens)), p.inc(hcount(metricspec.RequestGenerationTokens)))
			}),
		one(SigPromptPerGen, "", srcVLLM, "computed prompt tokens per generated token",
			func(v *view) float64 {
				return ratio(v.inc(metricspec.PromptTokens)-zeroNaN(v.inc(metricspec.PromptTokensCached)), v.inc(metricspec.GenerationTokens))
			},
			func(p promql, _ *Signals) string {
				return "(" + p.inc(metricspec.PromptTokens) + " - " + p.inc(metricspec.PromptTokensCached) + ") / " + p.inc(metricspec.GenerationTokens)
			}),
		// A preempted request recomputes what it had: on average its prompt
		// and half its output.
		one(SigRecompute, "ratio", srcVLLM, "estimated share of computed tokens spent recomputing preempted requests",
			func(v *view) float64 {
				waste := v.inc(metricspec.NumPreemptions) * (zeroNaN(v.sig(SigPromptMean)) + zeroNaN(v.sig(SigGenMean))/2)
				computed := v.inc(metricspec.PromptTokens) - zeroNaN(v.inc(metricspec.PromptTokensCached)) + v.inc(metricspec.GenerationTokens)
				return ratio(waste, computed+waste)
			},
			func(p promql, _ *Signals) string {
				return "(" + p.inc(metricspec.NumPreemptions) + " * (" + p.inc(metricspec.PromptTokens) + " + " + p.inc(metricspec.GenerationTokens) + " / 2) / " + p.inc(metricspec.RequestSuccess) + ") / (" +
					p.inc(metricspec.PromptTokens) + " - " + p.inc(metricspec.PromptTokensCached) + " + " + p.inc(metricspec.GenerationTokens) + ")"
			}),

		// The KV cache's size, and whether the next prompt fits in it.
		{name: SigBlocks, unit: "blocks", constant: true, alts: []signalAlt{{src: srcVLLM, what: "KV-cache blocks (num_gpu_blocks)",
			value:  func(v *view) float64 { return positive(float64(v.cfg().numBlocks)) },
			promql: func(p promql, _ *Signals) string { return p.info(metricspec.CacheConfigInfo) }}}},
		{name: SigBlockSize, unit: "tokens", constant: true, alts: []signalAlt{{src: srcVLLM, what: "tokens per KV block (block_size)",
			value:  func(v *view) float64 { return positive(float64(v.cfg().blockSize)) },
			promql: func(p promql, _ *Signals) string { return p.info(metricspec.CacheConfigInfo) }}}},
		// The KV tokens a typical waiting request needs: its prompt, less
		// what the prefix cache served. It is the window's (even over an
		// interval: one interval shows too few first tokens).
		{name: SigAdmissionNeed, unit: "tokens", constant: true, alts: []signalAlt{{src: srcVLLM, what: "KV tokens the next prompt needs (prompt tokens less the prefix cache's, per request)",
			value: func(v *view) float64 {
				return ratio(v.inc(metricspec.PromptTokens)-zeroNaN(v.inc(metricspec.PromptTokensCached)), v.inc(hcount(metricspec.TimeToFirstToken)))
			},
			promql: func(p promql, _ *Signals) string {
				return "(" + p.inc(metricspec.PromptTokens) + " - " + p.inc(metricspec.PromptTokensCached) + ") / " + p.inc(hcount(metricspec.TimeToFirstToken))
			}}}},
		// A waiting request's prompt needs its blocks: when the free ones
		// cannot hold it, it cannot get through its prefill without
		// evicting another, whether the scheduler admits it in chunks (and
		// then preempts) or holds it in the queue: the KV cache is the
		// limit, below its watermark too.
		one(SigAdmissionShare, "ratio", srcVLLM, "share of the window in which a request waited and the free KV blocks could not hold the next prompt",
			func(v *view) float64 {
				capacity := v.sig(SigBlocks) * v.sig(SigBlockSize)
				need := v.sig(SigAdmissionNeed)
				if !(capacity > 0) || !(need > 0) {
					return math.NaN()
				}
				return v.shareAt(w, func(sn Snapshot) bool {
					u, ok := sn.Values[kv]
					return ok && sn.Values[w] >= 1 && (1-u)*capacity < need
				})
			},
			func(p promql, s *Signals) string {
				return fmt.Sprintf("avg_over_time(((sum(%s) >= bool 1) * ((1 - max(%s)) * %g < bool %.0f))[%s:%s])", p.s(w), p.s(kv),
					s.v(SigBlocks)*s.v(SigBlockSize), s.v(SigAdmissionNeed), p.window, p.step)
			}),

		// Steps against the token budget.
		{name: SigStepTokens, unit: "tokens", alts: []signalAlt{
			{src: srcVLLM, what: "computed tokens per step",
				value: func(v *view) float64 {
					return ratio(v.inc(hsum(metricspec.IterationTokens)), v.inc(hcount(metricspec.IterationTokens)))
				},
				promql: func(p promql, _ *Signals) string {
					return p.ratio(p.inc(hsum(metricspec.IterationTokens)), p.inc(hcount(metricspec.IterationTokens)))
				}},
			{src: srcGlassbox, what: "computed tokens per step",
				value: func(v *view) float64 {
					return ratio(v.inc(metricspec.PromptTokens)-zeroNaN(v.inc(metricspec.PromptTokensCached))+v.inc(metricspec.GenerationTokens), v.inc(metricspec.EngineSteps))
				}},
		}},
		{name: SigBudget, unit: "tokens", constant: true, alts: []signalAlt{
			{src: srcGlassbox, what: "max_num_batched_tokens", value: func(v *view) float64 { return positive(float64(v.cfg().maxBatchedTokens)) },
				promql: func(p promql, _ *Signals) string { return p.info(metricspec.SchedulerConfigInfo) }},
			{src: srcFlag, what: "max_num_batched_tokens (--max-num-batched-tokens)", value: func(v *view) float64 { return positive(float64(v.s.hints.MaxNumBatchedTokens)) }},
			// vLLM exports no budget. Budgets are round numbers (2048 the
			// smallest usual, 8192 vLLM's default on big GPUs), and a step
			// holds no more than its budget on average: the smallest round
			// budget the mean step fits in; or a smaller one that no step
			// passed while the prompts were longer (chunkedBudget).
			{src: srcInferred, what: "max_num_batched_tokens (inferred: the smallest round budget the mean step fits, or one below 2048 that the steps sit at while longer prompts wait)", value: func(v *view) float64 {
				if b := chunkedBudget(v); b > 0 {
					return b
				}
				b := 2048.0
				for _, b = range []float64{2048, 4096, 8192, 16384} {
					if !(v.sig(SigStepTokens) > 1.02*b) {
						break
					}
				}
				return b
			}},
		}},
		one(SigFill, "ratio", srcVLLM, "computed tokens per step, of max_num_batched_tokens",
			func(v *view) float64 { return v.sig(SigStepTokens) / v.sig(SigBudget) },
			func(p promql, s *Signals) string {
				return fmt.Sprintf("%s / %g", p.ratio(p.inc(hsum(metricspec.IterationTokens)), p.inc(hcount(metricspec.IterationTokens))), s.v(SigBudget))
			}),

		// The sequence cap, and whether running sat at it.
		{name: SigMaxSeqs, unit: "", constant: true, alts: []signalAlt{
			{src: srcGlassbox, what: "max_num_seqs", value: func(v *view) float64 { return positive(float64(v.cfg().maxNumSeqs)) },
				promql: func(p promql, _ *Signals) string { return p.info(metricspec.SchedulerConfigInfo) }},
			{src: srcFlag, what: "max_num_seqs (--max-num-seqs)", value: func(v *view) float64 { return positive(float64(v.s.hints.MaxNumSeqs)) }},
			{src: srcPlateau, what: "max_num_seqs (inferred from the running gauge's plateau; give --max-num-seqs)", value: plateau},
		}},
		one(SigPinnedShare, "ratio", srcVLLM, "share of the window with running at max_num_seqs",
			func(v *view) float64 {
				n := v.sig(SigMaxSeqs)
				if !(n > 0) {
					return math.NaN()
				}
				all := n * float64(v.cfg().engines) // each rank its own cap
				return v.share(m, func(x float64) bool { return x >= v.th().PinnedNear*all-1 })
			},
			func(p promql, s *Signals) string {
				return p.share(m, "sum", fmt.Sprintf(">= bool %g", s.th.PinnedNear*s.v(SigMaxSeqs)*float64(s.cfg.engines)-1))
			}),

		// The GPU: its peaks, how much of them the steps use, and whether
		// it is busy.
		peakFLOPsDef(),
		peakDef(SigPeakBandwidth, "bytes/s", "peak memory bandwidth", func(_, b float64) float64 { return b }),
		one(SigMFU, "ratio", srcVLLM, "MFU: vLLM's estimated FLOP/s over the GPU's peak",
			func(v *view) float64 { return v.perEngine(metricspec.EstimatedFLOPsPerGPU) / v.sig(SigPeakFLOPs) },
			func(p promql, s *Signals) string {
				return fmt.Sprintf("%s / %g", p.rate(metricspec.EstimatedFLOPsPerGPU), s.v(SigPeakFLOPs)*float64(s.cfg.engines))
			}),
		one(SigMBU, "ratio", srcVLLM, "memory-bandwidth utilisation: vLLM's estimated read bytes/s over the GPU's bandwidth",
			func(v *view) float64 {
				return v.perEngine(metricspec.EstimatedReadBytesPerGPU) / v.sig(SigPeakBandwidth)
			},
			func(p promql, s *Signals) string {
				return fmt.Sprintf("%s / %g", p.rate(metricspec.EstimatedReadBytesPerGPU), s.v(SigPeakBandwidth)*float64(s.cfg.engines))
			}),
		// Above 1 the steps' arithmetic takes the GPU longer than their
		// memory traffic: more tokens per step cost time in proportion.
		one(SigRoofline, "", srcVLLM, "time the steps' arithmetic takes over their memory traffic's, at the GPU's peaks (MFU / MBU)",
			func(v *view) float64 { return ratio(v.sig(SigMFU), v.sig(SigMBU)) }, nil),
		// Each dcgm-exporter reading averages its last interval, so the
		// first of a window can reach back before it: the mean of the rest.
		one(SigDCGMActive, "ratio", srcDCGM, "GPU graphics-engine activity (DCGM, mean over the GPUs and the window)",
			func(v *view) float64 { return v.meanAfterFirst(metricspec.DCGMGREngineActive) },
			func(p promql, _ *Signals) string { return p.avgNoJob(metricspec.DCGMGREngineActive) }),
		one(SigDCGMSM, "ratio", srcDCGM, "SM activity (DCGM)", func(v *view) float64 { return v.mean(metricspec.DCGMSMActive) },
			func(p promql, _ *Signals) string { return p.avgNoJob(metricspec.DCGMSMActive) }),
		one(SigDCGMTensor, "ratio", srcDCGM, "tensor-pipe activity (DCGM)", func(v *view) float64 { return v.mean(metricspec.DCGMTensorActive) },
			func(p promql, _ *Signals) string { return p.avgNoJob(metricspec.DCGMTensorActive) }),
		one(SigDCGMDRAM, "ratio", srcDCGM, "DRAM activity (DCGM)", func(v *view) float64 { return v.mean(metricspec.DCGMDRAMActive) },
			func(p promql, _ *Signals) string { return p.avgNoJob(metricspec.DCGMDRAMActive) }),
		// vLLM's own view of the engine loop: steps per second × a decode
		// step's length as requests see it (the mean inter-token latency),
		// or, where that undercounts (vLLM records only steps that produced
		// a token, so prefill-only chunks go unseen), the share of readings
		// with a request running: the loop never idles while it has work.
		// Either counts the host's share of each step too.
		one(SigStepsTimesITL, "ratio", srcEstimate, "engine steps per second × mean inter-token latency, at most 1 (vLLM's series)",
			func(v *view) float64 {
				steps := v.perEngine(hcount(metricspec.IterationTokens))
				itl := ratio(v.inc(hsum(metricspec.InterTokenLatency)), v.inc(hcount(metricspec.InterTokenLatency)))
				if !(steps > 0 && itl > 0) {
					return math.NaN()
				}
				return math.Min(1, steps*itl)
			},
			func(p promql, s *Signals) string {
				return "clamp_max(" + p.perEngine(hcount(metricspec.IterationTokens), s) + " * " + p.ratio(p.inc(hsum(metricspec.InterTokenLatency)), p.inc(hcount(metricspec.InterTokenLatency))) + ", 1)"
			}),
		one(SigBusyEstimate, "ratio", srcEstimate, "engine steps per second × mean inter-token latency, or the share of the window with a request running (vLLM's series)",
			func(v *view) float64 {
				est := v.sig(SigStepsTimesITL)
				if math.IsNaN(est) {
					return math.NaN()
				}
				return math.Max(est, zeroNaN(v.share(m, func(x float64) bool { return x >= 1 })))
			},
			func(p promql, s *Signals) string {
				return s.get(SigStepsTimesITL).PromQL + " or " + p.share(m, "sum", ">= bool 1")
			}),
		{name: SigBusy, unit: "ratio", alts: []signalAlt{
			{src: srcGlassbox, what: "GPU utilisation: executor busy seconds per second", value: func(v *view) float64 { return v.perEngine(metricspec.ExecutorBusySeconds) },
				promql: func(p promql, s *Signals) string { return p.perEngine(metricspec.ExecutorBusySeconds, s) }},
			// A GPU that always has work reads GR_ENGINE_ACTIVE below 1 (the
			// gaps between its kernels): the share of the time it had work
			// is the reading over that.
			{src: srcDCGM, what: "GPU utilisation: DCGM's graphics-engine activity (DCGM_FI_PROF_GR_ENGINE_ACTIVE) over what a GPU reads while it always has work (about 0.9, for the gaps between its kernels; nvidia-smi's GPU-Util reads 100 under any load)",
				value: func(v *view) float64 { return math.Min(1, v.sig(SigDCGMActive)/v.th().EngineActiveBusy) },
				promql: func(p promql, s *Signals) string {
					return fmt.Sprintf("clamp_max(%s / %g, 1)", p.avgNoJob(metricspec.DCGMGREngineActive), s.th.EngineActiveBusy)
				}},
			{src: srcEstimate, what: "GPU utilisation, estimated: engine steps per second × mean inter-token latency (an upper bound: it counts host time)",
				value:  func(v *view) float64 { return v.sig(SigBusyEstimate) },
				promql: func(p promql, s *Signals) string { return s.get(SigBusyEstimate).PromQL }},
		}},
		{name: SigEngineBusy, unit: "ratio", alts: []signalAlt{
			{src: srcGlassbox, what: "share of the time the engine spent in steps", value: func(v *view) float64 { return v.perEngine(hsum(metricspec.EngineStepDuration)) },
				promql: func(p promql, s *Signals) string { return p.perEngine(hsum(metricspec.EngineStepDuration), s) }},
			{src: srcEstimate, what: "share of the time the engine spent in steps, estimated: steps per second × mean inter-token latency",
				value:  func(v *view) float64 { return v.sig(SigBusyEstimate) },
				promql: func(p promql, s *Signals) string { return s.get(SigBusyEstimate).PromQL }},
		}},
		// The share of each step the GPU waits for the host (scheduling,
		// detokenisation, a Python frontend): the third question's number.
		{name: SigHostShare, unit: "ratio", alts: []signalAlt{
			{src: srcGlassbox, what: "share of engine step time the GPU waited for the host (host seconds over step seconds)",
				value: func(v *view) float64 {
					host := v.inc(metricspec.EngineHostSeconds)
					return ratio(host, host+v.inc(metricspec.ExecutorBusySeconds))
				},
				promql: func(p promql, _ *Signals) string {
					return p.ratio(p.inc(metricspec.EngineHostSeconds), "("+p.inc(metricspec.EngineHostSeconds)+" + "+p.inc(metricspec.ExecutorBusySeconds)+")")
				}},
			{src: srcDCGM, what: "share of engine step time the GPU was idle: 1 − DCGM's engine activity (over what the GPU reads while it always has work) over vLLM's steps × their latency",
				value: func(v *view) float64 {
					e := v.sig(SigBusyEstimate)
					if !(e > 0) {
						return math.NaN()
					}
					return math.Max(0, 1-math.Min(1, v.sig(SigDCGMActive)/v.th().EngineActiveBusy)/e)
				},
				promql: func(p promql, s *Signals) string {
					return fmt.Sprintf("1 - clamp_max(%s / %g, 1) / (%s)", p.avgNoJob(metricspec.DCGMGREngineActive), s.th.EngineActiveBusy, s.get(SigBusyEstimate).PromQL)
				}},
		}},

		// Latencies.
		quantileDef(SigTTFTp50, "TTFT p50", 0.5, metricspec.TimeToFirstToken),
		quantileDef(SigTTFTp90, "TTFT p90", 0.9, metricspec.TimeToFirstToken),
		quantileDef(SigTTFTp99, "TTFT p99", 0.99, metricspec.TimeToFirstToken),
		quantileDef(SigITLp50, "ITL p50", 0.5, metricspec.InterTokenLatency),
		quantileDef(SigITLp90, "ITL p90", 0.9, metricspec.InterTokenLatency),
		quantileDef(SigITLp99, "ITL p99", 0.99, metricspec.InterTokenLatency),
		quantileDef(SigE2Ep50, "end-to-end latency p50", 0.5, metricspec.E2ERequestLatency),
		quantileDef(SigE2Ep99, "end-to-end latency p99", 0.99, metricspec.E2ERequestLatency),
		quantileDef(SigQueueP50, "queue time p50", 0.5, metricspec.RequestQueueTime),
	}, append(specSignalDefs(), trendSignalDefs()...)...)
}

// peakDef is one of the GPU's peaks, from glassbox's gauges or the
// profile of the GPU --gpu or DCGM's modelName names.
func peakDef(name SignalName, unit, what string, pick func(flops, bandwidth float64) float64) signalDef {
	from := func(want source) func(v *view) float64 {
		return func(v *view) float64 {
			f, b, src, _ := peaks(v.w, v.s.hints, v.cfg().hardware)
			if src != want {
				return math.NaN()
			}
			return pick(f, b)
		}
	}
	return signalDef{name: name, unit: unit, constant: true, alts: []signalAlt{
		{src: srcGlassbox, what: "the GPU's " + what + " (glassbox_executor_info's gauges)", value: from(srcGlassbox)},
		{src: srcGPU, what: "the GPU's " + what + " (its datasheet)", value: from(srcGPU)},
	}}
}

// peakFLOPsDef is the GPU's peak FLOP/s: its FP8 peak for FP8 weights,
// whose GEMMs run at it; else the dense BF16 peak.
func peakFLOPsDef() signalDef {
	d := peakDef(SigPeakFLOPs, "FLOP/s", "peak FLOP/s", func(f, _ float64) float64 { return f })
	fp8 := signalAlt{src: srcGPU, what: "the GPU's FP8 peak FLOP/s (its datasheet: the weights are FP8, and their GEMMs run at it)",
		value: func(v *view) float64 { return fp8Peak(v.w, v.s.hints, v.cfg()) }}
	d.alts = append([]signalAlt{fp8}, d.alts...)
	return d
}

func quantileDef(name SignalName, what string, q float64, family string) signalDef {
	return one(name, "s", srcVLLM, what, func(v *view) float64 { return v.quantile(q, family) },
		func(p promql, _ *Signals) string { return p.quantile(q, family) })
}

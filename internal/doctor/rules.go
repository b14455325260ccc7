package doctor

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// rule is one row of the rule table (docs/doctor.md): its check, and the
// signals whose sources it rests on (utilisation, the token budget, the
// sequence cap, the GPU's peaks).
type rule struct {
	name                     string
	busy, budget, seqs, peak bool
	check                    func(s *signals, p promql) *Finding
}

// rules is the rule table, in report order before sorting by severity.
func rules() []rule {
	return []rule{
		{name: "metrics-stale", check: metricsStale},
		{name: "kv-capacity-bound", busy: true, budget: true, seqs: true, check: kvCapacityBound},
		{name: "compute-bound", busy: true, budget: true, seqs: true, peak: true, check: computeBound},
		{name: "concurrency-cap", budget: true, seqs: true, check: concurrencyCap},
		{name: "under-loaded", busy: true, check: underLoaded},
		{name: "preemption-storm", check: preemptionStorm},
		{name: "prefill-bound", check: prefillBound},
		{name: "decode-bound", check: decodeBound},
		{name: "queueing-dominates", check: queueingDominates},
		{name: "client-timeouts", check: clientTimeouts},
		{name: "prefix-caching", check: prefixCaching},
	}
}

// Diagnose runs every rule over the window; client is a bench result's
// view, or nil.
func Diagnose(w *Window, client *ClientView) *Report {
	s := derive(w)
	s.client = client
	p := newPromQL(w, medianStep(w))
	rep := &Report{Source: w.Source, Target: w.Target, Selector: w.Selector, Readings: len(w.Snapshots),
		Missed: w.Missed, Engine: "glassbox", Client: client, Findings: []Finding{}}
	if n := len(w.Snapshots); n > 0 {
		rep.Start, rep.End = w.Snapshots[0].T, w.Snapshots[n-1].T
	}
	if !s.glassbox {
		rep.Engine = "vllm"
	}
	if len(w.Snapshots) == 1 {
		rep.Findings = append(rep.Findings, singleReading(s, p))
		return rep
	}
	for _, r := range rules() {
		if f := r.check(s, p); f != nil {
			f.Name = r.name
			f.Sources, f.Confidence = s.provenance(r.busy, r.budget, r.seqs, r.peak)
			rep.Findings = append(rep.Findings, *f)
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Severity > rep.Findings[j].Severity })
	return rep
}

// medianStep is the typical time between readings.
func medianStep(w *Window) time.Duration {
	var d []time.Duration
	for i := 1; i < len(w.Snapshots); i++ {
		d = append(d, w.Snapshots[i].T.Sub(w.Snapshots[i-1].T))
	}
	if len(d) == 0 {
		return time.Second
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// Shared evidence.

func (s *signals) evBusy(p promql) Evidence {
	switch s.busySrc {
	case srcDCGM:
		return ev("GPU graphics-engine activity (DCGM, mean over the GPUs)", s.busy, "ratio", p.avgNoJob(metricspec.DCGMGREngineActive))
	case srcEstimate:
		return ev("estimated utilisation: engine steps per second × mean inter-token latency (vLLM alone)", s.busy, "ratio",
			p.rate(metricspec.IterationTokens+"_count")+" * "+p.ratio(p.inc(metricspec.InterTokenLatency+"_sum"), p.inc(metricspec.InterTokenLatency+"_count")))
	}
	return ev("executor utilisation (busy seconds per second)", s.busy, "ratio", p.rate(metricspec.ExecutorBusySeconds))
}

func (s *signals) evFill(p promql) Evidence {
	return ev(fmt.Sprintf("computed tokens per step, of max_num_batched_tokens %d (%s)", s.cfg.maxBatchedTokens, s.budgetSrc), s.stepFill, "ratio",
		fmt.Sprintf("%s / %d", p.ratio(p.inc(metricspec.IterationTokens+"_sum"), p.inc(metricspec.IterationTokens+"_count")), s.cfg.maxBatchedTokens))
}

// evDCGM is DCGM's other activities, when it is there.
func (s *signals) evDCGM(p promql) []Evidence {
	if math.IsNaN(s.dcgmSM) {
		return nil
	}
	return []Evidence{ev("SM activity (DCGM)", s.dcgmSM, "ratio", p.avgNoJob(metricspec.DCGMSMActive)),
		ev("tensor-pipe activity (DCGM)", s.dcgmTensor, "ratio", p.avgNoJob(metricspec.DCGMTensorActive)),
		ev("DRAM activity (DCGM)", s.dcgmDRAM, "ratio", p.avgNoJob(metricspec.DCGMDRAMActive))}
}

// evPeaks is MFU and memory-bandwidth utilisation from vLLM's estimate
// counters, when the GPU's peaks are known.
func (s *signals) evPeaks(p promql) []Evidence {
	if s.peakSrc == srcNone {
		return nil
	}
	return []Evidence{ev(fmt.Sprintf("MFU: vLLM's estimated FLOP/s over the %s's peak", s.gpu), s.mfu, "ratio", p.rate(metricspec.EstimatedFLOPsPerGPU)),
		ev(fmt.Sprintf("memory-bandwidth utilisation: vLLM's estimated read bytes/s over the %s's bandwidth", s.gpu), s.mbu, "ratio", p.rate(metricspec.EstimatedReadBytesPerGPU))}
}

func (s *signals) evKV(p promql) Evidence {
	return ev("mean KV-cache usage", s.kvs.mean, "ratio", p.avg(metricspec.KVCacheUsagePerc, "max"))
}

func (s *signals) evKVHigh(p promql) Evidence {
	return ev("share of the window with KV usage ≥ 0.9", s.kvHighShare, "ratio", p.share(metricspec.KVCacheUsagePerc, "max", ">= bool 0.9"))
}

func (s *signals) evWaiting(p promql) Evidence {
	return ev("share of the window with a request waiting", s.waitingShare, "ratio", p.share(metricspec.NumRequestsWaiting, "sum", ">= bool 1"))
}

func (s *signals) evWaitingMean(p promql) Evidence {
	return ev("mean requests waiting", s.wait.mean, "", p.avg(metricspec.NumRequestsWaiting, "sum"))
}

func (s *signals) evRunning(p promql) Evidence {
	return ev("mean requests running", s.run.mean, "", p.avg(metricspec.NumRequestsRunning, "sum"))
}

func (s *signals) evMaxSeqs(p promql) Evidence {
	if s.seqsSrc == srcNone {
		return ev("max_num_seqs (unknown: give --max-num-seqs)", math.NaN(), "", "")
	}
	return ev(fmt.Sprintf("max_num_seqs (%s)", s.seqsSrc), float64(s.cfg.maxNumSeqs), "", p.info(metricspec.SchedulerConfigInfo))
}

func (s *signals) evGen(p promql) Evidence {
	return ev("generation throughput", s.genRate, "tokens/s", p.rate(metricspec.GenerationTokens))
}

// computeSaturated: the executor is busy all the time on full steps, so
// more work per second cannot fit.
func (s *signals) computeSaturated() bool {
	return s.busy >= busyHigh && s.stepFill >= fillHigh
}

// pinned: running sat at max_num_seqs for most of the window. A reading
// within 10 % (or one) of the cap counts: a scrape can land between a
// request finishing and the next one being scheduled.
func (s *signals) pinned() bool {
	return s.cfg.maxNumSeqs > 0 && s.pinnedShare() >= pinnedShare
}

func (s *signals) pinnedShare() float64 {
	n := float64(s.cfg.maxNumSeqs)
	return fraction(s.running, func(v float64) bool { return v >= 0.9*n-1 })
}

func (s *signals) queued() bool { return s.waitingShare >= waitingPersistent }

func (s *signals) kvHigh() bool { return s.kvHighShare >= 0.5 }

// kvLimited: the KV cache limited the batch, either sitting at the
// watermark or running out often enough to preempt (usage then drops
// below the line as blocks are freed, so the mean understates it).
func (s *signals) kvLimited() bool {
	return s.kvHigh() || s.preemptRate > 0 && s.kvs.max >= kvWatermark
}

// kvFactor is how much larger the KV cache should be for the requests
// that waited to run beside those that ran, within [1.25, 4].
func (s *signals) kvFactor() float64 {
	f := (s.run.mean + s.wait.mean) / math.Max(s.run.mean, 1)
	return math.Min(4, math.Max(1.25, f))
}

// kvChanges recommends a KV cache f times the current one.
func (s *signals) kvChanges(f float64) ([]Change, func(*ReplicaConfig)) {
	var out []Change
	blocks := int(math.Ceil(float64(s.cfg.numBlocks) * f))
	switch {
	case s.cfg.kvBytes > 0:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: formatBytes(float64(s.cfg.kvBytes) * f),
			Why: fmt.Sprintf("%.2f× the KV cache (%d → %d blocks)", f, s.cfg.numBlocks, blocks)})
	case s.cfg.numBlocks > 0:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: fmt.Sprintf("%.2f× today's KV bytes", f),
			Why: fmt.Sprintf("%d → %d blocks of %d tokens", s.cfg.numBlocks, blocks, s.cfg.blockSize)})
		if s.cfg.gpuMemUtil > 0 && s.cfg.gpuMemUtil < 0.95 {
			out = append(out, Change{Flag: "--gpu-memory-utilization", Value: "0.95",
				Why: fmt.Sprintf("from %g, if the weights and activations leave room", s.cfg.gpuMemUtil)})
		}
	default:
		out = append(out, Change{Flag: "--kv-cache-memory-bytes", Value: fmt.Sprintf("%.2f× today's", f), Why: "more room for KV blocks"})
	}
	if s.cfg.prefixCaching != nil && !*s.cfg.prefixCaching {
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

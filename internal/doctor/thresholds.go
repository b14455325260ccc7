package doctor

import (
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Thresholds are every number the rules and the three answers compare a
// signal with, in one value: docs/doctor.md's threshold table lists each
// (a test keeps the two equal), and the four the alert rules share are
// metricspec's, so an alert and the finding that explains it fire on the
// same numbers. The corpus (internal/corpus) is how a change to one is
// judged.
type Thresholds struct {
	KVWatermark    float64 `doc:"KV-cache usage of vLLM's preemption line (the KV alert's)"`
	KVHighShare    float64 `doc:"share of readings at the watermark that makes the KV cache full"`
	KVSpare        float64 `doc:"peak KV usage below which the cache has room"`
	AdmissionShare float64 `doc:"share of readings in which a request waits and the free blocks cannot hold the next prompt"`

	BusyHigh          float64 `doc:"GPU utilisation of a GPU busy all the time"`
	EngineActiveBusy  float64 `doc:"DCGM's GR_ENGINE_ACTIVE per unit of the time a GPU has work: a measured H200 reads 0.88–0.96 with steps back to back and 0.78–0.86 with host gaps of a few percent (busy 0.93–0.98); the doctor divides the reading by this, so that such a GPU reads saturated"`
	BusyLow           float64 `doc:"GPU utilisation of a GPU idle half the time"`
	FillHigh          float64 `doc:"step fill (tokens per step over max_num_batched_tokens) of full steps"`
	FillInferred      float64 `doc:"step fill of full steps when max_num_batched_tokens is only inferred (the smallest round budget the mean step fits, so half full means nothing)"`
	RooflineCompute   float64 `doc:"MFU over MBU at which a step's arithmetic rivals its memory traffic on this GPU: the batch's own work, not the weights' read, sets the step"`
	WideStep          float64 `doc:"tokens per step from which a busy GPU may be compute-bound on decode alone (without its peaks the doctor cannot tell)"`
	EngineBusy        float64 `doc:"share of the time the engine spends in steps when they run back to back"`
	HostShare         float64 `doc:"share of each step the GPU waits for the host that makes the host the limit"`
	ConflictGap       float64 `doc:"difference between two readings of utilisation that the report calls a conflict"`
	WaitingPersistent float64 `doc:"share of readings with a request waiting that makes a queue"`
	NoWaiting         float64 `doc:"share of readings with a request waiting below which nothing queues"`
	PinnedShare       float64 `doc:"share of readings with running at max_num_seqs that pins it"`
	PinnedNear        float64 `doc:"fraction of max_num_seqs (less one) a reading counts as at the cap"`

	PreemptionRate    float64 `doc:"preemptions per second of a storm (the preemption alert's)"`
	RecomputeCritical float64 `doc:"share of computed tokens recomputed after preemption that makes a storm critical"`
	QueueShare        float64 `doc:"share of end-to-end time spent queued that dominates latency (the queue alert's)"`
	AbortShare        float64 `doc:"share of finished requests aborted (the abort alert's)"`
	MinAborts         float64 `doc:"aborts below which a share is an anecdote"`

	PrefillDominates float64 `doc:"share of inference time in prefill that makes prefill the latency"`
	PrefillFair      float64 `doc:"share of inference time in prefill a prompt-heavy load needs for prefill to count"`
	PromptHeavy      float64 `doc:"computed prompt tokens per generated one of a prompt-heavy load"`
	PromptDominated  float64 `doc:"computed prompt tokens per generated one that make prefill the work"`
	TrendRise        float64 `doc:"mean TTFT of the window's last third over its first that is a rise"`
	HoldShare        float64 `doc:"generation throughput of the last third over the first that holds"`
	ITLGrowth        float64 `doc:"fitted ITL at the widest batch over the narrowest that is growth"`
	MinCorrelation   float64 `doc:"correlation of interval ITL with batch width that links them"`
	MinWidthSpread   float64 `doc:"requests between the narrowest and widest mean batch for a fit"`

	HitIneffective float64 `doc:"prefix-cache hit rate below which caching helps little"`
	HitShared      float64 `doc:"prefix-cache hit rate that shows prompts share prefixes"`
	StaleShare     float64 `doc:"share of missed readings that makes the target down, not flaky"`
	ImbalanceRatio float64 `doc:"mean queue of one replica over the others' that is an imbalance"`

	SpecMinDrafts      float64 `doc:"verify passes below which a draft acceptance rate is an anecdote"`
	SpecAcceptanceLow  float64 `doc:"draft acceptance rate (accepted over draft tokens) below which a verify pass's drafts buy little (the acceptance alert's)"`
	SpecPositionKeep   float64 `doc:"acceptance at a draft position (accepted there per verify pass) below which drafting it costs more than it saves"`
	SpecScoredPerToken float64 `doc:"positions a verify pass scores per token it keeps above which, on a GPU busy with wide verify steps, speculation costs throughput (in the simulator's cost model, 1.5 still pays and 1.7 costs)"`
}

// DefaultThresholds are the doctor's.
func DefaultThresholds() Thresholds {
	return Thresholds{
		KVWatermark:    metricspec.KVWatermark,
		KVHighShare:    0.5,
		KVSpare:        0.8,
		AdmissionShare: 0.5,

		BusyHigh:          0.9,
		EngineActiveBusy:  0.86,
		BusyLow:           0.5,
		FillHigh:          0.5,
		FillInferred:      0.9,
		RooflineCompute:   0.8,
		WideStep:          512,
		EngineBusy:        0.8,
		HostShare:         0.5,
		ConflictGap:       0.4,
		WaitingPersistent: 0.5,
		NoWaiting:         0.1,
		PinnedShare:       0.7,
		PinnedNear:        0.9,

		PreemptionRate:    metricspec.PreemptionRateHigh,
		RecomputeCritical: 0.3,
		QueueShare:        metricspec.QueueShareHigh,
		AbortShare:        metricspec.AbortShareHigh,
		MinAborts:         3,

		PrefillDominates: 0.5,
		PrefillFair:      0.25,
		PromptHeavy:      2,
		PromptDominated:  10,
		TrendRise:        1.5,
		HoldShare:        0.8,
		ITLGrowth:        1.5,
		MinCorrelation:   0.6,
		MinWidthSpread:   2,

		HitIneffective: 0.3,
		HitShared:      0.05,
		StaleShare:     0.25,
		ImbalanceRatio: 3,

		SpecMinDrafts:      100,
		SpecAcceptanceLow:  metricspec.SpecAcceptanceLow,
		SpecPositionKeep:   0.3,
		SpecScoredPerToken: 1.6,
	}
}

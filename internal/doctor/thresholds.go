package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Thresholds are every number the rules, the three answers and a replay's
// verdict compare a signal with, the factors the advice sizes its changes
// by, and the dashboards' colour bands, in one value, by the names a user
// sets them under (--threshold name=value, or a YAML or JSON file of
// them): docs/doctor.md's threshold table lists each (a test keeps the two
// equal). The alert rules and the dashboards' lines and bands
// (internal/dashboards), the live page and the planner read the same
// value, so an alert and the finding that explains it fire on the same
// numbers. The corpus (internal/corpus) is how a change to one is judged.
type Thresholds struct {
	KVWatermark    float64 `yaml:"kv_watermark" doc:"KV-cache usage of vLLM's preemption line (the KV alert's)"`
	KVHighShare    float64 `yaml:"kv_high_share" doc:"share of readings at the watermark that makes the KV cache full"`
	KVSpare        float64 `yaml:"kv_spare" doc:"peak KV usage below which the cache has room"`
	AdmissionShare float64 `yaml:"admission_share" doc:"share of readings in which a request waits and the free blocks cannot hold the next prompt"`

	BusyHigh          float64 `yaml:"busy_high" doc:"GPU utilisation of a GPU busy all the time"`
	EngineActiveBusy  float64 `yaml:"engine_active_busy" doc:"DCGM's GR_ENGINE_ACTIVE per unit of the time a GPU has work: a measured H200 reads 0.88–0.96 with steps back to back and 0.78–0.86 with host gaps of a few percent (busy 0.93–0.98); the doctor divides the reading by this, so that such a GPU reads saturated"`
	BusyLow           float64 `yaml:"busy_low" doc:"GPU utilisation of a GPU idle half the time"`
	FillHigh          float64 `yaml:"fill_high" doc:"step fill (tokens per step over max_num_batched_tokens) of full steps"`
	FillInferred      float64 `yaml:"fill_inferred" doc:"step fill of full steps when max_num_batched_tokens is only inferred (the smallest round budget the mean step fits, so half full means nothing)"`
	RooflineCompute   float64 `yaml:"roofline_compute" doc:"MFU over MBU at which a step's arithmetic rivals its memory traffic on this GPU: the batch's own work, not the weights' read, sets the step"`
	WideStep          float64 `yaml:"wide_step" doc:"tokens per step from which a busy GPU may be compute-bound on decode alone (without its peaks the doctor cannot tell)"`
	EngineBusy        float64 `yaml:"engine_busy" doc:"share of the time the engine spends in steps when they run back to back"`
	HostShare         float64 `yaml:"host_share" doc:"share of each step the GPU waits for the host that makes the host the limit"`
	HostGap           float64 `yaml:"host_gap" doc:"share of each step the GPU waits for the host from which an engine flat out on full steps is advised --async-scheduling (host-bound, from host_share, advises it too)"`
	ConflictGap       float64 `yaml:"conflict_gap" doc:"difference between two readings of utilisation that the report calls a conflict"`
	WaitingPersistent float64 `yaml:"waiting_persistent" doc:"share of readings with a request waiting that makes a queue"`
	NoWaiting         float64 `yaml:"no_waiting" doc:"share of readings with a request waiting below which nothing queues"`
	PinnedShare       float64 `yaml:"pinned_share" doc:"share of readings with running at max_num_seqs that pins it"`
	PinnedNear        float64 `yaml:"pinned_near" doc:"fraction of max_num_seqs (less one) a reading counts as at the cap"`
	QueueGrowth       float64 `yaml:"queue_growth" doc:"growth of the waiting queue (its least-squares slope over the window) per request arriving that shows more requests arrive than the engine serves; the queue must also grow by min_requests over the window"`
	BudgetReadShare   float64 `yaml:"budget_read_share" doc:"MBU of steps at their token budget on a prompt-heavy load (the share of the time their memory traffic takes at the GPU's peak bandwidth: mostly the weights' read, which a step pays whatever its size) from which the budget, with budget_roofline, is the limit"`
	BudgetRoofline    float64 `yaml:"budget_roofline" doc:"MFU over MBU (at the peaks of the weights' type: FP8's for FP8 weights) of such steps below which their arithmetic does not hide the weights' read, so that a larger budget carries more tokens for little more time (in the simulator's cost model, doubling a budget under both lines raises prefill throughput by about 10 % or more on every GPU, where a GPU that overlaps the read with the arithmetic, as a measured H200 does, gains little past 2)"`

	PreemptionRate    float64 `yaml:"preemption_rate" doc:"preemptions per second of a storm (the preemption alert's)"`
	RecomputeCritical float64 `yaml:"recompute_critical" doc:"share of computed tokens recomputed after preemption that makes a storm critical"`
	GPUMemoryUtil     float64 `yaml:"gpu_memory_util" doc:"--gpu-memory-utilization the KV remedies raise a lower one to, if the weights and activations leave room"`
	BudgetRaiseFill   float64 `yaml:"budget_raise_fill" doc:"step fill at which a compute-bound engine is advised a larger --max-num-batched-tokens, and from which token-budget counts the steps at their budget"`
	PrefillRaiseFill  float64 `yaml:"prefill_raise_fill" doc:"step fill at which a prefill-bound engine is advised a larger --max-num-batched-tokens"`
	QueueShare        float64 `yaml:"queue_share" doc:"share of end-to-end time spent queued that dominates latency (the queue alert's)"`
	AbortShare        float64 `yaml:"abort_share" doc:"share of finished requests aborted (the abort alert's)"`
	MinAborts         float64 `yaml:"min_aborts" doc:"aborts below which a share is an anecdote"`

	PrefillDominates float64 `yaml:"prefill_dominates" doc:"share of inference time in prefill that makes prefill the latency"`
	PrefillFair      float64 `yaml:"prefill_fair" doc:"share of inference time in prefill a prompt-heavy load needs for prefill to count"`
	PromptHeavy      float64 `yaml:"prompt_heavy" doc:"computed prompt tokens per generated one of a prompt-heavy load"`
	PromptDominated  float64 `yaml:"prompt_dominated" doc:"computed prompt tokens per generated one that make prefill the work"`
	TrendRise        float64 `yaml:"trend_rise" doc:"mean TTFT of the window's last third over its first that is a rise"`
	HoldShare        float64 `yaml:"hold_share" doc:"generation throughput of the last third over the first that holds"`
	ITLGrowth        float64 `yaml:"itl_growth" doc:"fitted ITL at the widest batch over the narrowest that is growth"`
	MinCorrelation   float64 `yaml:"min_correlation" doc:"correlation of interval ITL with batch width that links them"`
	MinWidthSpread   float64 `yaml:"min_width_spread" doc:"requests between the narrowest and widest mean batch for a fit"`

	HitIneffective      float64 `yaml:"hit_ineffective" doc:"prefix-cache hit rate below which caching helps little"`
	HitShared           float64 `yaml:"hit_shared" doc:"prefix-cache hit rate that shows prompts share prefixes"`
	PrefixReuseHit      float64 `yaml:"prefix_reuse_hit" doc:"prefix-cache hit rate at which a load's prompts are mostly what earlier requests sent (agent sessions, conversations): not a tuned line, since below it the cache still helps and prefix-caching judges whether it is evicted"`
	StaleShare          float64 `yaml:"stale_share" doc:"share of missed readings that makes the target down, not flaky"`
	ImbalanceRatio      float64 `yaml:"imbalance_ratio" doc:"mean queue of one replica over its fleet's mean (the same model's replicas, itself included) that is an imbalance (the imbalance alert's)"`
	ImbalanceMinWaiting float64 `yaml:"imbalance_min_waiting" doc:"mean requests waiting that one replica must exceed for an imbalance (the imbalance alert's)"`
	MinRequests         float64 `yaml:"min_requests" doc:"requests (through prefill, or finished) below which a share of them is an anecdote"`

	SpecMinDrafts      float64 `yaml:"spec_min_drafts" doc:"verify passes below which a draft acceptance rate is an anecdote"`
	SpecAcceptanceLow  float64 `yaml:"spec_acceptance_low" doc:"draft acceptance rate (accepted over draft tokens) below which a verify pass's drafts buy little (the acceptance alert's)"`
	SpecPositionKeep   float64 `yaml:"spec_position_keep" doc:"acceptance at a draft position (accepted there per verify pass) below which drafting it costs more than it saves"`
	SpecScoredPerToken float64 `yaml:"spec_scored_per_token" doc:"positions a verify pass scores per token it keeps above which, on a GPU busy with wide verify steps, speculation costs throughput (in the simulator's cost model, 1.5 still pays and 1.7 costs)"`

	// The advice's sizing: how far a recommended change moves its flag.
	KVGrowMin        float64 `yaml:"kv_grow_min" doc:"least factor a KV remedy grows the KV cache by: the queue's own need (running plus waiting, over running) is taken within kv_grow_min and kv_grow_max"`
	KVGrowMax        float64 `yaml:"kv_grow_max" doc:"most factor a KV remedy grows the KV cache by at once"`
	KVGrowEvicting   float64 `yaml:"kv_grow_evicting" doc:"least factor the KV cache is grown by when its blocks are taken from what still needs them (a preemption storm; prefixes evicted before reuse)"`
	StormSeqsShare   float64 `yaml:"storm_seqs_share" doc:"share of the mean running requests that a preemption storm's other remedy, a lower --max-num-seqs, admits"`
	BudgetRaise      float64 `yaml:"budget_raise" doc:"factor by which --max-num-batched-tokens is raised when steps are full (compute- and prefill-bound)"`
	SeqsRaise        float64 `yaml:"seqs_raise" doc:"factor by which --max-num-seqs is raised at its cap (host-bound; concurrency-cap raises it at least this much)"`
	CapHeadroom      float64 `yaml:"cap_headroom" doc:"concurrency-cap's --max-num-seqs over the requests running and waiting, within what the KV cache and the steps leave room for"`
	ScaleOutMin      float64 `yaml:"scale_out_min" doc:"fewest replicas a scale-out recommends (a whole number)"`
	ITLTarget        float64 `yaml:"itl_target" doc:"fitted inter-token latency, over the narrowest batch's, that decode-bound's --max-num-seqs keeps"`
	ClientTimeoutP99 float64 `yaml:"client_timeout_p99" doc:"client timeout advised, in multiples of the p99 end-to-end latency"`

	// The dashboards' colour bands, which no rule reads.
	KVFull         float64 `yaml:"kv_full" doc:"KV-cache usage at which the dashboards' KV panel turns red, the cache out of blocks (orange from kv_watermark, below it)"`
	SLOAttainedLow float64 `yaml:"slo_attained_low" doc:"share of requests within an SLO below which the dashboards' SLO tiles are red (orange from it)"`
	SLOAttained    float64 `yaml:"slo_attained" doc:"share of requests within an SLO from which the dashboards' SLO tiles are green"`

	ReplayThroughputGain float64 `yaml:"replay_throughput_gain" doc:"output throughput of the recommended replay over the current one that is an improvement"`
	ReplayLatencyGain    float64 `yaml:"replay_latency_gain" doc:"mean end-to-end latency of the current replay over the recommended one that is an improvement"`
	ReplayTolerance      float64 `yaml:"replay_tolerance" doc:"share by which neither throughput nor latency may get worse for a replay to improve"`
	ReplayITLGain        float64 `yaml:"replay_itl_gain" doc:"mean inter-token latency of the current replay over the recommended one that improves a change made for it"`
}

// DefaultThresholds are the doctor's.
func DefaultThresholds() Thresholds {
	return Thresholds{
		KVWatermark:    0.9,
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
		HostGap:           0.1,
		ConflictGap:       0.4,
		WaitingPersistent: 0.5,
		NoWaiting:         0.1,
		PinnedShare:       0.7,
		PinnedNear:        0.9,
		QueueGrowth:       0.05,
		BudgetReadShare:   0.15,
		BudgetRoofline:    2,

		PreemptionRate:    0.5,
		RecomputeCritical: 0.3,
		GPUMemoryUtil:     0.95,
		BudgetRaiseFill:   0.9,
		PrefillRaiseFill:  0.8,
		QueueShare:        0.5,
		AbortShare:        0.1,
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

		HitIneffective:      0.3,
		HitShared:           0.05,
		PrefixReuseHit:      0.5,
		StaleShare:          0.25,
		ImbalanceRatio:      1.5,
		ImbalanceMinWaiting: 2,
		MinRequests:         3,

		SpecMinDrafts:      100,
		SpecAcceptanceLow:  0.3,
		SpecPositionKeep:   0.3,
		SpecScoredPerToken: 1.6,

		KVGrowMin:        1.25,
		KVGrowMax:        4,
		KVGrowEvicting:   1.5,
		StormSeqsShare:   0.75,
		BudgetRaise:      2,
		SeqsRaise:        2,
		CapHeadroom:      1.25,
		ScaleOutMin:      2,
		ITLTarget:        1.25,
		ClientTimeoutP99: 2,

		KVFull:         0.98,
		SLOAttainedLow: 0.9,
		SLOAttained:    0.99,

		ReplayThroughputGain: 1.05,
		ReplayLatencyGain:    1.1,
		ReplayTolerance:      0.05,
		ReplayITLGain:        1.1,
	}
}

// ThresholdNames are the names the thresholds are set by, in the table's
// order.
func ThresholdNames() []string {
	ty := reflect.TypeFor[Thresholds]()
	out := make([]string, ty.NumField())
	for i := range ty.NumField() {
		out[i] = ty.Field(i).Tag.Get("yaml")
	}
	return out
}

// ThresholdDoc is what a threshold means, "" for no such name.
func ThresholdDoc(name string) string {
	if f, ok := thresholdField(name); ok {
		return f.Tag.Get("doc")
	}
	return ""
}

func thresholdField(name string) (reflect.StructField, bool) {
	ty := reflect.TypeFor[Thresholds]()
	for i := range ty.NumField() {
		if f := ty.Field(i); f.Tag.Get("yaml") == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Get is the threshold of that name; false for no such name.
func (t Thresholds) Get(name string) (float64, bool) {
	f, ok := thresholdField(name)
	if !ok {
		return 0, false
	}
	return reflect.ValueOf(t).FieldByIndex(f.Index).Float(), true
}

// Set sets the threshold of that name, refusing an unknown name or a
// number that is not finite and non-negative.
func (t *Thresholds) Set(name string, v float64) error {
	f, ok := thresholdField(name)
	if !ok {
		return fmt.Errorf("set threshold %q: no such threshold (docs/doctor.md lists them: %s)", name, strings.Join(ThresholdNames(), ", "))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("set threshold %s: %v is not a finite, non-negative number", name, v)
	}
	reflect.ValueOf(t).Elem().FieldByIndex(f.Index).SetFloat(v)
	return nil
}

// SetText sets one threshold from "name=value", as --threshold gives it.
func (t *Thresholds) SetText(nameValue string) error {
	name, value, ok := strings.Cut(nameValue, "=")
	if !ok {
		return fmt.Errorf("set threshold %q: want name=value, e.g. kv_watermark=0.85", nameValue)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return fmt.Errorf("set threshold %s: %w", name, err)
	}
	return t.Set(strings.TrimSpace(name), v)
}

// ReadThresholds reads a file of thresholds, YAML or JSON (a map of name
// to number), over base: a threshold the file does not name keeps base's
// value. An unknown name, a value that is not a number and a file of
// anything else are refused.
func ReadThresholds(r io.Reader, base Thresholds) (Thresholds, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return base, fmt.Errorf("read thresholds: %w", err)
	}
	var m map[string]float64
	dec := yaml.NewDecoder(bytes.NewReader(b)) // YAML reads JSON too
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return base, fmt.Errorf("read thresholds: want a map of threshold name to number: %w", err)
	}
	t := base
	for _, name := range ThresholdNames() { // the table's order: errors are stable
		if v, ok := m[name]; ok {
			if err := t.Set(name, v); err != nil {
				return base, fmt.Errorf("read thresholds: %w", err)
			}
			delete(m, name)
		}
	}
	if len(m) > 0 {
		return base, fmt.Errorf("read thresholds: no threshold %s (docs/doctor.md lists them)", strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
	return t, t.Validate()
}

// Validate reports the first threshold that cannot be compared with: a
// share outside (0, 1) where the rules or the alerts read it as one, a divisor of zero,
// an imbalance ratio not above 1.
func (t Thresholds) Validate() error {
	for _, name := range ThresholdNames() {
		if v, _ := t.Get(name); math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("threshold %s: %v is not a finite, non-negative number", name, v)
		}
	}
	for _, name := range []string{"kv_watermark", "queue_share", "abort_share", "spec_acceptance_low", "host_gap", "budget_read_share"} {
		if v, _ := t.Get(name); !(v > 0 && v < 1) {
			return fmt.Errorf("threshold %s: %v is a share an alert compares with: want it in (0, 1)", name, v)
		}
	}
	if !(t.EngineActiveBusy > 0 && t.EngineActiveBusy <= 1) {
		return fmt.Errorf("threshold engine_active_busy: %v divides DCGM's engine activity: want it in (0, 1]", t.EngineActiveBusy)
	}
	if !(t.ImbalanceRatio > 1) {
		return fmt.Errorf("threshold imbalance_ratio: %v: a replica above its fleet's mean by less than 1× is no imbalance", t.ImbalanceRatio)
	}
	return t.validateSizing()
}

// validateSizing refuses a factor that would advise the opposite of its
// change (a raise below 1×), a count that is no whole number, and colour
// bands out of order.
func (t Thresholds) validateSizing() error {
	for _, name := range []string{"kv_grow_min", "kv_grow_evicting", "budget_raise", "seqs_raise", "cap_headroom", "itl_target", "client_timeout_p99"} {
		if v, _ := t.Get(name); !(v >= 1) {
			return fmt.Errorf("threshold %s: %v is a factor a recommendation raises by: want it at least 1", name, v)
		}
	}
	switch {
	case !(t.KVGrowMax >= t.KVGrowMin):
		return fmt.Errorf("threshold kv_grow_max: %v is below kv_grow_min %v", t.KVGrowMax, t.KVGrowMin)
	case !(t.StormSeqsShare > 0 && t.StormSeqsShare < 1):
		return fmt.Errorf("threshold storm_seqs_share: %v lowers --max-num-seqs to a share of the running requests: want it in (0, 1)", t.StormSeqsShare)
	case !(t.ScaleOutMin >= 1) || t.ScaleOutMin != math.Trunc(t.ScaleOutMin):
		return fmt.Errorf("threshold scale_out_min: %v replicas: want a whole number, at least 1", t.ScaleOutMin)
	case !(t.KVFull > t.KVWatermark && t.KVFull <= 1):
		return fmt.Errorf("threshold kv_full: %v: the KV panel turns orange at kv_watermark (%v) and red at kv_full, so want it above the watermark and at most 1 (set kv_full with kv_watermark)", t.KVFull, t.KVWatermark)
	case !(t.SLOAttainedLow > 0 && t.SLOAttainedLow < t.SLOAttained && t.SLOAttained <= 1):
		return fmt.Errorf("threshold slo_attained_low %v, slo_attained %v: the SLO tiles are red below the first and green from the second: want 0 < slo_attained_low < slo_attained <= 1", t.SLOAttainedLow, t.SLOAttained)
	}
	return nil
}

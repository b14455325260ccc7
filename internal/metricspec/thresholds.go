package metricspec

// The thresholds the alert rules (internal/dashboards) and the doctor's
// rules (internal/doctor) share, so that an alert and the finding that
// explains it fire on the same numbers.
const (
	// KVWatermark is vLLM's preemption line: KV-cache usage at which new
	// requests wait for blocks and running ones get preempted.
	KVWatermark = 0.9
	// PreemptionRateHigh is preemptions per second that signal KV pressure.
	PreemptionRateHigh = 0.5
	// QueueShareHigh is the share of end-to-end request time spent queued
	// above which queueing dominates latency.
	QueueShareHigh = 0.5
	// AbortShareHigh is the share of finished requests aborted above which
	// clients are giving up.
	AbortShareHigh = 0.1
	// SpecAcceptanceLow is the draft acceptance rate (accepted over draft
	// tokens) below which speculative decoding's verify passes buy little.
	SpecAcceptanceLow = 0.3
)

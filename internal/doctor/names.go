package doctor

import (
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The window's schema: the series a source reads into a Window, by the
// keys the signals read them under. The doctor reads the families
// metricspec names; these are its own keys.
const (
	// FamilyUp is Prometheus' own scrape health.
	FamilyUp  = "up"
	keyAborts = metricspec.RequestSuccess + `{finished_reason="abort"}`

	keyWaitingCapacity = metricspec.NumRequestsWaitingByReason + `{reason="capacity"}`
	// InfoDCGM is the Window.Info entry of the GPUs' modelName, from the
	// DCGM series.
	InfoDCGM = "dcgm"
	// InfoEngines is the Window.Info entry of how many engines the target
	// serves from ("count"): the distinct values of vLLM's engine label on
	// its running gauge, one per data-parallel rank (--data-parallel-size).
	// Each rank has its own scheduler, KV cache and GPUs, and the
	// counters a rank keeps of its own time (busy seconds, steps, FLOPs per
	// GPU) sum over them.
	InfoEngines = "engines"
)

// How a Series reduces a family's label sets to one number.
const (
	AggSum = "sum"
	AggMax = "max" // KV usage is a fraction: the fullest engine, not a sum
	AggAvg = "avg" // DCGM activities: the mean over the target's GPUs
)

// maxSpecPositions is how many draft positions of
// vllm:spec_decode_num_accepted_tokens_per_pos_total the doctor reads
// (num_speculative_tokens is rarely above it); the target's k is the
// number of positions it exports.
const maxSpecPositions = 8

// keyEngineDead is glassbox_engine_dead of one reason: 1 once that
// killed the engine.
func keyEngineDead(reason string) string {
	return metricspec.EngineDead + `{reason="` + reason + `"}`
}

// keySpecPos is the accepted-tokens counter of draft position i.
func keySpecPos(i int) string {
	return metricspec.SpecDecodeAcceptedTokensPos + `{position="` + strconv.Itoa(i) + `"}`
}

// Series is one series the doctor reads: a family, summed (or maxed, or
// averaged) over every label set, optionally restricted to one label
// value.
type Series struct {
	Key    string // the Snapshot.Values key
	Family string
	Label  string // restricting label name, or ""
	Value  string // its value
	Agg    string // AggSum, AggMax or AggAvg
	// DCGM marks dcgm-exporter's series: another job, joined to the target
	// by its instance (Prometheus), or scraped from its own URL.
	DCGM bool
}

// ScalarSeries are the counters and gauges of a window.
func ScalarSeries() []Series {
	sum := func(f string) Series { return Series{Key: f, Family: f, Agg: AggSum} }
	out := []Series{
		sum(metricspec.NumRequestsRunning), sum(metricspec.NumRequestsWaiting), {Key: metricspec.KVCacheUsagePerc, Family: metricspec.KVCacheUsagePerc, Agg: AggMax},
		sum(metricspec.PrefixCacheQueries), sum(metricspec.PrefixCacheHits), sum(metricspec.NumPreemptions), sum(metricspec.PromptTokens), sum(metricspec.PromptTokensCached),
		sum(metricspec.GenerationTokens), sum(metricspec.EstimatedFLOPsPerGPU), sum(metricspec.ExecutorBusySeconds), sum(metricspec.EngineHostSeconds), sum(metricspec.EngineSteps), sum(metricspec.RequestSuccess), {Key: metricspec.ExecutorPeakFLOPs, Family: metricspec.ExecutorPeakFLOPs, Agg: AggMax},
		{Key: metricspec.ExecutorPeakMemBandwidth, Family: metricspec.ExecutorPeakMemBandwidth, Agg: AggMax},
		{Key: keyAborts, Family: metricspec.RequestSuccess, Label: metricspec.LabelFinishedReason, Value: "abort", Agg: AggSum},
		sum(metricspec.EstimatedReadBytesPerGPU),
		{Key: keyWaitingCapacity, Family: metricspec.NumRequestsWaitingByReason, Label: metricspec.LabelReason, Value: "capacity", Agg: AggSum},
		sum(metricspec.SpecDecodeDrafts), sum(metricspec.SpecDecodeDraftTokens), sum(metricspec.SpecDecodeAcceptedTokens),
	}
	for i := range maxSpecPositions {
		out = append(out, Series{Key: keySpecPos(i), Family: metricspec.SpecDecodeAcceptedTokensPos, Label: metricspec.LabelPosition, Value: strconv.Itoa(i), Agg: AggSum})
	}
	for _, r := range metricspec.EngineDeadReasons {
		out = append(out, Series{Key: keyEngineDead(r), Family: metricspec.EngineDead, Label: metricspec.LabelReason, Value: r, Agg: AggMax})
	}
	for _, f := range dcgmActivities {
		out = append(out, Series{Key: f, Family: f, Agg: AggAvg, DCGM: true})
	}
	for _, h := range histogramFamilies() {
		out = append(out, sum(h+"_sum"), sum(h+"_count"))
	}
	return out
}

// histogramFamilies are the histograms whose sums and counts a window
// holds; BucketFamilies those whose buckets it also holds.
func histogramFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime, metricspec.RequestPrefillTime, metricspec.RequestDecodeTime, metricspec.RequestInferenceTime, metricspec.RequestGenerationTokens, metricspec.IterationTokens, metricspec.EngineStepDuration}
}

// dcgmActivities are dcgm-exporter's profiling gauges the doctor reads.
var dcgmActivities = []string{metricspec.DCGMGREngineActive, metricspec.DCGMSMActive, metricspec.DCGMTensorActive, metricspec.DCGMDRAMActive}

func BucketFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime, metricspec.IterationTokens}
}

// InfoFamilies are the info gauges whose labels describe the target's
// configuration.
func InfoFamilies() []string {
	return []string{metricspec.CacheConfigInfo, metricspec.SchedulerConfigInfo, metricspec.ExecutorInfo}
}

// aliases are the names older vLLM releases exported a family under
// (vLLM 0.7's gpu_cache_usage_perc, say): the doctor reads a target of
// either age.
var aliases = map[string]string{
	metricspec.KVCacheUsagePerc:   metricspec.GPUCacheUsagePerc,
	metricspec.InterTokenLatency:  metricspec.TimePerOutputTokenSeconds,
	metricspec.PrefixCacheQueries: metricspec.GPUPrefixCacheQueries,
	metricspec.PrefixCacheHits:    metricspec.GPUPrefixCacheHits,
}

// AliasOf is the older name of a family or of a histogram's part, or "".
func AliasOf(name string) string {
	for _, suffix := range []string{"", "_sum", "_count", "_bucket"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if a, ok := aliases[base]; ok {
				return a + suffix
			}
		}
	}
	return ""
}

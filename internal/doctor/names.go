package doctor

import (
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The doctor reads the families metricspec names; these are its own keys.
const (
	mUp             = "up" // Prometheus' own scrape health
	keyAborts       = metricspec.RequestSuccess + `{finished_reason="abort"}`
	kvAggregatorMax = "max" // KV usage is a fraction: the fullest engine, not a sum
	aggAvg          = "avg" // DCGM activities: the mean over the target's GPUs

	keyWaitingCapacity = metricspec.NumRequestsWaitingByReason + `{reason="capacity"}`
	// infoDCGM holds the GPUs' modelName and count, from the DCGM series.
	infoDCGM = "dcgm"
)

// maxSpecPositions is how many draft positions of
// vllm:spec_decode_num_accepted_tokens_per_pos_total the doctor reads
// (num_speculative_tokens is rarely above it); the target's k is the
// number of positions it exports.
const maxSpecPositions = 8

// keySpecPos is the accepted-tokens counter of draft position i.
func keySpecPos(i int) string {
	return metricspec.SpecDecodeAcceptedTokensPos + `{position="` + strconv.Itoa(i) + `"}`
}

// seriesSpec is one series the doctor reads: a family, summed (or maxed)
// over every label set, optionally restricted to one label value.
type seriesSpec struct {
	key    string // the Snapshot.Values key
	family string
	label  string // restricting label name, or ""
	value  string // its value
	agg    string // "sum", "max" or "avg"
	// dcgm marks dcgm-exporter's series: another job, joined to the target
	// by its instance (Prometheus), or scraped from --dcgm-url.
	dcgm bool
}

// scalarSeries are the counters and gauges of a window.
func scalarSeries() []seriesSpec {
	sum := func(f string) seriesSpec { return seriesSpec{key: f, family: f, agg: "sum"} }
	out := []seriesSpec{
		sum(metricspec.NumRequestsRunning), sum(metricspec.NumRequestsWaiting), {key: metricspec.KVCacheUsagePerc, family: metricspec.KVCacheUsagePerc, agg: kvAggregatorMax},
		sum(metricspec.PrefixCacheQueries), sum(metricspec.PrefixCacheHits), sum(metricspec.NumPreemptions), sum(metricspec.PromptTokens), sum(metricspec.PromptTokensCached),
		sum(metricspec.GenerationTokens), sum(metricspec.EstimatedFLOPsPerGPU), sum(metricspec.ExecutorBusySeconds), sum(metricspec.EngineHostSeconds), sum(metricspec.EngineSteps), sum(metricspec.RequestSuccess), {key: metricspec.ExecutorPeakFLOPs, family: metricspec.ExecutorPeakFLOPs, agg: "max"},
		{key: metricspec.ExecutorPeakMemBandwidth, family: metricspec.ExecutorPeakMemBandwidth, agg: "max"},
		{key: keyAborts, family: metricspec.RequestSuccess, label: metricspec.LabelFinishedReason, value: "abort", agg: "sum"},
		sum(metricspec.EstimatedReadBytesPerGPU),
		{key: keyWaitingCapacity, family: metricspec.NumRequestsWaitingByReason, label: metricspec.LabelReason, value: "capacity", agg: "sum"},
		sum(metricspec.SpecDecodeDrafts), sum(metricspec.SpecDecodeDraftTokens), sum(metricspec.SpecDecodeAcceptedTokens),
	}
	for i := range maxSpecPositions {
		out = append(out, seriesSpec{key: keySpecPos(i), family: metricspec.SpecDecodeAcceptedTokensPos, label: metricspec.LabelPosition, value: strconv.Itoa(i), agg: "sum"})
	}
	for _, f := range dcgmActivities {
		out = append(out, seriesSpec{key: f, family: f, agg: aggAvg, dcgm: true})
	}
	for _, h := range histogramFamilies() {
		out = append(out, sum(h+"_sum"), sum(h+"_count"))
	}
	return out
}

// histogramFamilies are the histograms whose sums and counts a window
// holds; quantileFamilies those whose buckets it also holds.
func histogramFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime, metricspec.RequestPrefillTime, metricspec.RequestDecodeTime, metricspec.RequestInferenceTime, metricspec.RequestGenerationTokens, metricspec.IterationTokens, metricspec.EngineStepDuration}
}

// dcgmActivities are dcgm-exporter's profiling gauges the doctor reads.
var dcgmActivities = []string{metricspec.DCGMGREngineActive, metricspec.DCGMSMActive, metricspec.DCGMTensorActive, metricspec.DCGMDRAMActive}

func quantileFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime, metricspec.IterationTokens}
}

// infoFamilies are the info gauges whose labels describe the target's
// configuration.
func infoFamilies() []string {
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

// aliasOf is the older name of a family or of a histogram's part, or "".
func aliasOf(name string) string {
	for _, suffix := range []string{"", "_sum", "_count", "_bucket"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if a, ok := aliases[base]; ok {
				return a + suffix
			}
		}
	}
	return ""
}

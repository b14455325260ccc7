package doctor

import "github.com/glassbox-llm/glassbox/internal/metricspec"

// The doctor reads the families metricspec names; these are its own keys.
const (
	mUp             = "up" // Prometheus' own scrape health
	keyAborts       = metricspec.RequestSuccess + `{finished_reason="abort"}`
	kvAggregatorMax = "max" // KV usage is a fraction: the fullest engine, not a sum
)

// seriesSpec is one series the doctor reads: a family, summed (or maxed)
// over every label set, optionally restricted to one label value.
type seriesSpec struct {
	key    string // the Snapshot.Values key
	family string
	label  string // restricting label name, or ""
	value  string // its value
	agg    string // "sum" or "max"
}

// scalarSeries are the counters and gauges of a window.
func scalarSeries() []seriesSpec {
	sum := func(f string) seriesSpec { return seriesSpec{key: f, family: f, agg: "sum"} }
	out := []seriesSpec{
		sum(metricspec.NumRequestsRunning), sum(metricspec.NumRequestsWaiting), {key: metricspec.KVCacheUsagePerc, family: metricspec.KVCacheUsagePerc, agg: kvAggregatorMax},
		sum(metricspec.PrefixCacheQueries), sum(metricspec.PrefixCacheHits), sum(metricspec.NumPreemptions), sum(metricspec.PromptTokens), sum(metricspec.PromptTokensCached),
		sum(metricspec.GenerationTokens), sum(metricspec.EstimatedFLOPsPerGPU), sum(metricspec.ExecutorBusySeconds), sum(metricspec.EngineSteps), sum(metricspec.RequestSuccess), {key: metricspec.ExecutorPeakFLOPs, family: metricspec.ExecutorPeakFLOPs, agg: "max"},
		{key: keyAborts, family: metricspec.RequestSuccess, label: metricspec.LabelFinishedReason, value: "abort", agg: "sum"},
	}
	for _, h := range histogramFamilies() {
		out = append(out, sum(h+"_sum"), sum(h+"_count"))
	}
	return out
}

// histogramFamilies are the histograms whose sums and counts a window
// holds; quantileFamilies those whose buckets it also holds.
func histogramFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime, metricspec.RequestPrefillTime, metricspec.RequestDecodeTime, metricspec.RequestInferenceTime, metricspec.RequestGenerationTokens}
}

func quantileFamilies() []string {
	return []string{metricspec.TimeToFirstToken, metricspec.InterTokenLatency, metricspec.E2ERequestLatency, metricspec.RequestQueueTime}
}

// infoFamilies are the info gauges whose labels describe the target's
// configuration.
func infoFamilies() []string {
	return []string{metricspec.CacheConfigInfo, metricspec.SchedulerConfigInfo, metricspec.ExecutorInfo}
}

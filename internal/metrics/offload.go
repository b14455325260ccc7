package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// offloadSeries are the offload connector's families, fed by each step's
// StepEvent.Offload and look-ups; nil without an offload tier.
type offloadSeries struct {
	loadBytes, loadTime, storeBytes, storeTime, allocFailures prometheus.Counter
	loadSize, storeSize, syncDelay, cpuAlloc                  prometheus.Observer
	// The deprecated families, by transfer_type: loads, then stores.
	totalBytes, totalTime [2]prometheus.Counter
	size                  [2]prometheus.Observer
}

func newOffloadSeries(b *builder) *offloadSeries {
	o := &offloadSeries{}
	types := []string{metricspec.TransferLoad, metricspec.TransferStore}
	bytes := b.counterVec(metricspec.KVOffloadTotalBytes, types)
	times := b.counterVec(metricspec.KVOffloadTotalTime, types)
	sizes := b.histogramVec(metricspec.KVOffloadSize, types)
	for i, t := range types {
		o.totalBytes[i], o.totalTime[i], o.size[i] = bytes[t], times[t], sizes[t]
	}
	o.cpuAlloc = b.histogram(metricspec.KVOffloadCPUAllocationSize, 0)
	o.loadBytes = b.counter(metricspec.KVOffloadLoadBytes)
	o.loadTime = b.counter(metricspec.KVOffloadLoadTime)
	o.loadSize = b.histogram(metricspec.KVOffloadLoadSize, 0)
	o.storeBytes = b.counter(metricspec.KVOffloadStoreBytes)
	o.storeTime = b.counter(metricspec.KVOffloadStoreTime)
	o.storeSize = b.histogram(metricspec.KVOffloadStoreSize, 0)
	o.syncDelay = b.histogram(metricspec.KVOffloadLookupSyncDelay, 0)
	// glassbox's look-ups never defer (a block still being stored is not
	// a hit), so the async delay has no observation, as vLLM's has none
	// until one does.
	b.histogram(metricspec.KVOffloadLookupAsyncDelay, 0)
	o.allocFailures = b.counter(metricspec.KVOffloadAllocationFailure)
	return o
}

func (o *offloadSeries) observe(s *engine.StepEvent) {
	if o == nil {
		return
	}
	ev := &s.Offload
	for _, t := range ev.Loads {
		o.loadBytes.Add(t.Bytes)
		o.loadTime.Add(t.Seconds)
		o.loadSize.Observe(t.Bytes)
		o.totalBytes[0].Add(t.Bytes)
		o.totalTime[0].Add(t.Seconds)
		o.size[0].Observe(t.Bytes)
	}
	for _, t := range ev.Stores {
		o.storeBytes.Add(t.Bytes)
		o.storeTime.Add(t.Seconds)
		o.storeSize.Observe(t.Bytes)
		o.totalBytes[1].Add(t.Bytes)
		o.totalTime[1].Add(t.Seconds)
		o.size[1].Observe(t.Bytes)
	}
	for _, n := range ev.StoreBlocks {
		o.cpuAlloc.Observe(float64(n))
	}
	o.allocFailures.Add(float64(ev.AllocationFailures))
	// A look-up is a probe of the tier's hash map inside the step's
	// planning, which the engine's clock prices at nothing: each is
	// recorded as 0 s.
	for range s.ExternalLookups {
		o.syncDelay.Observe(0)
	}
}

// residencySeries are --kv-cache-metrics' histograms; nil without.
type residencySeries struct {
	lifetime, idle, reuseGap prometheus.Observer
}

func newResidencySeries(b *builder) *residencySeries {
	return &residencySeries{
		lifetime: b.histogram(metricspec.KVBlockLifetime, 0),
		idle:     b.histogram(metricspec.KVBlockIdleBeforeEvict, 0),
		reuseGap: b.histogram(metricspec.KVBlockReuseGap, 0),
	}
}

func (r *residencySeries) observe(s *engine.StepEvent) {
	if r == nil {
		return
	}
	for i := range s.BlockEvictions {
		ev := &s.BlockEvictions[i]
		r.lifetime.Observe(ev.Lifetime)
		r.idle.Observe(ev.Idle)
		for _, g := range ev.ReuseGaps() {
			r.reuseGap.Observe(g)
		}
	}
}

// histogramVec registers a histogram family with its one variable label
// and returns its children, one per value, created now so that they
// exist at zero.
func (b *builder) histogramVec(name string, values []string) map[string]prometheus.Observer {
	f := metricspec.Must(name)
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: f.Help, Buckets: f.Buckets(0), ConstLabels: b.labels}, f.Labels)
	out := make(map[string]prometheus.Observer, len(values))
	for _, val := range values {
		out[val] = v.WithLabelValues(val)
	}
	b.register(v)
	return out
}

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// statsCollector turns one engine.Stats snapshot per scrape into the gauge
// families. Reading the snapshot at scrape time, instead of setting gauges
// from the engine goroutine, keeps the engine free of metric work and makes
// every gauge of one scrape come from the same instant.
type statsCollector struct {
	stats  func() engine.Stats
	labels []string // model_name, engine values

	running, waiting, waitingByReason, kvUsage, kvBlocks *prometheus.Desc
}

func newStatsCollector(cfg Config) *statsCollector {
	vl := []string{labelModel, labelEngine}
	desc := func(name string) *prometheus.Desc {
		f := metricspec.Must(name)
		return prometheus.NewDesc(f.Name, f.Help, append(vl, f.Labels...), nil)
	}
	c := &statsCollector{
		stats:           cfg.Stats,
		labels:          []string{cfg.ModelName, cfg.Engine},
		running:         desc(metricspec.NumRequestsRunning),
		waiting:         desc(metricspec.NumRequestsWaiting),
		waitingByReason: desc(metricspec.NumRequestsWaitingByReason),
		kvUsage:         desc(metricspec.KVCacheUsagePerc),
		kvBlocks:        desc(metricspec.KVCacheBlocks),
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{c.running, c.waiting, c.waitingByReason, c.kvUsage, c.kvBlocks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	var s engine.Stats
	if c.stats != nil {
		s = c.stats()
	}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(c.labels[:2:2], extra...)...)
	}
	gauge(c.running, float64(s.Running))
	gauge(c.waiting, float64(s.Waiting))
	// glassbox has no deferred queue (no LoRA budget, no KV transfer), so
	// every waiting request waits for capacity.
	gauge(c.waitingByReason, float64(s.Waiting), "capacity")
	gauge(c.waitingByReason, 0, "deferred")
	gauge(c.kvUsage, s.KVUsage)
	gauge(c.kvBlocks, float64(max(s.KVFree-s.KVCached, 0)), "free")
	gauge(c.kvBlocks, float64(max(s.KVCached, 0)), "cached")
	gauge(c.kvBlocks, float64(max(s.KVBlocks-s.KVFree, 0)), "used")
}

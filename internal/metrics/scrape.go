package metrics

import (
	"strconv"
	"sync"

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
	// Deferred are those the last step passed over for their LoRA adapter
	// (glassbox has no KV transfer); the rest wait for capacity.
	deferred := min(s.Deferred, s.Waiting)
	gauge(c.waitingByReason, float64(s.Waiting-deferred), "capacity")
	gauge(c.waitingByReason, float64(deferred), "deferred")
	gauge(c.kvUsage, s.KVUsage)
	gauge(c.kvBlocks, float64(max(s.KVFree-s.KVCached, 0)), "free")
	gauge(c.kvBlocks, float64(max(s.KVCached, 0)), "cached")
	gauge(c.kvBlocks, float64(max(s.KVBlocks-s.KVFree, 0)), "used")
}

// loraCollector is vllm:lora_requests_info: one series per combination of
// running and waiting adapters seen, its value the Unix time (on the
// engine's clock) it was last current. vLLM sets the current combination
// every step and never removes the old ones, so consumers (the Gateway API
// Inference Extension) take the series with the newest value; glassbox
// notes the combination at every step too (a scrape every 15 s would miss
// those in between) and at each scrape.
type loraCollector struct {
	stats   func() engine.Stats
	desc    *prometheus.Desc
	maxLoRA string

	mu     sync.Mutex
	combos map[[2]string]float64 // running, waiting → when
	order  [][2]string
}

func newLoRACollector(cfg Config) *loraCollector {
	f := metricspec.Must(metricspec.LoRARequestsInfo)
	return &loraCollector{stats: cfg.Stats, desc: prometheus.NewDesc(f.Name, f.Help, f.Labels, nil),
		maxLoRA: strconv.Itoa(cfg.MaxLoRAs), combos: map[[2]string]float64{}}
}

func (c *loraCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *loraCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteLocked()
	for _, k := range c.order {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.combos[k], c.maxLoRA, k[1], k[0])
	}
}

// note records the engine's current combination (after each step).
func (c *loraCollector) note() {
	c.mu.Lock()
	c.noteLocked()
	c.mu.Unlock()
}

func (c *loraCollector) noteLocked() {
	var s engine.Stats
	if c.stats != nil {
		s = c.stats()
	}
	k := [2]string{s.RunningLoRA, s.WaitingLoRA}
	if _, ok := c.combos[k]; !ok {
		c.order = append(c.order, k)
	}
	if !s.LoRAAt.IsZero() {
		c.combos[k] = max(c.combos[k], float64(s.LoRAAt.UnixNano())/1e9)
	}
}

// deadCollector is glassbox_engine_dead: one series per reason the engine
// can die of, 1 for the one that killed it, read from the stats at scrape
// time. It is registered with the executor's families, whatever
// --disable-log-stats says: it is the engine's health, not its load.
type deadCollector struct {
	stats  func() engine.Stats
	labels []string // model_name, engine values
	desc   *prometheus.Desc
}

func newDeadCollector(cfg Config) *deadCollector {
	f := metricspec.Must(metricspec.EngineDead)
	return &deadCollector{stats: cfg.Stats, labels: []string{cfg.ModelName, cfg.Engine},
		desc: prometheus.NewDesc(f.Name, f.Help, append([]string{labelModel, labelEngine}, f.Labels...), nil)}
}

// Describe implements prometheus.Collector.
func (c *deadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *deadCollector) Collect(ch chan<- prometheus.Metric) {
	var dead engine.DeathReason
	if c.stats != nil {
		dead = c.stats().Dead
	}
	for _, r := range engine.DeathReasons {
		v := 0.0
		if r == dead {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, c.labels[0], c.labels[1], string(r))
	}
}

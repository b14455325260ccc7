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
	stats func() engine.Stats

	running, waiting, waitingByReason, kvUsage, kvBlocks *prometheus.Desc
	// With an offload tier (nil without): the CPU backend's pin gauges
	// and the loads by stage.
	cpuUsage, cpuWrite, cpuRead, kvFetch *prometheus.Desc
}

func newStatsCollector(cfg Config) *statsCollector {
	// model_name and engine are constant labels, so that data-parallel
	// ranks' collectors on one registry have descriptors of their own.
	constant := prometheus.Labels{labelModel: cfg.ModelName, labelEngine: cfg.Engine}
	desc := func(name string) *prometheus.Desc {
		f := metricspec.Must(name)
		return prometheus.NewDesc(f.Name, f.Help, f.Labels, constant)
	}
	c := &statsCollector{
		stats:           cfg.Stats,
		running:         desc(metricspec.NumRequestsRunning),
		waiting:         desc(metricspec.NumRequestsWaiting),
		waitingByReason: desc(metricspec.NumRequestsWaitingByReason),
		kvUsage:         desc(metricspec.KVCacheUsagePerc),
		kvBlocks:        desc(metricspec.KVCacheBlocks),
	}
	if cfg.Offload {
		c.kvFetch = desc(metricspec.NumRequestsKVFetchByStage)
		c.cpuUsage = desc(metricspec.KVOffloadCPUCacheUsage)
		c.cpuWrite = desc(metricspec.KVOffloadCPUCacheWriteUsage)
		c.cpuRead = desc(metricspec.KVOffloadCPUCacheReadUsage)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{c.running, c.waiting, c.waitingByReason, c.kvUsage, c.kvBlocks, c.kvFetch, c.cpuUsage, c.cpuWrite, c.cpuRead} {
		if d != nil {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	var s engine.Stats
	if c.stats != nil {
		s = c.stats()
	}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, extra...)
	}
	gauge(c.running, float64(s.Running))
	gauge(c.waiting, float64(s.Waiting))
	// Deferred are those the last step passed over for their LoRA adapter
	// and those loading their KV from the offload tier; the rest wait for
	// capacity.
	deferred := min(s.Deferred, s.Waiting)
	gauge(c.waitingByReason, float64(s.Waiting-deferred), "capacity")
	gauge(c.waitingByReason, float64(deferred), "deferred")
	gauge(c.kvUsage, s.KVUsage)
	gauge(c.kvBlocks, float64(max(s.KVFree-s.KVCached, 0)), "free")
	gauge(c.kvBlocks, float64(max(s.KVCached, 0)), "cached")
	gauge(c.kvBlocks, float64(max(s.KVBlocks-s.KVFree, 0)), "used")
	if c.kvFetch == nil {
		return
	}
	o := &s.Offload
	gauge(c.kvFetch, float64(o.LoadsQueued), metricspec.StageWaitingToStart)
	gauge(c.kvFetch, float64(o.LoadsInFlight), metricspec.StageInProgress)
	gauge(c.kvFetch, float64(o.LoadsDone), metricspec.StageCompletedWaiting)
	// The share of the tier pinned by transfers in flight, as vLLM's CPU
	// backend reports it (blocks held but idle are not counted).
	share := func(n int) float64 {
		if o.Blocks == 0 {
			return 0
		}
		return float64(n) / float64(o.Blocks)
	}
	gauge(c.cpuUsage, share(o.Storing+o.Loading))
	gauge(c.cpuWrite, share(o.Storing))
	gauge(c.cpuRead, share(o.Loading))
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
		c.combos[k] = 0 // noted once, whether or not it has a time yet
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
	stats func() engine.Stats
	desc  *prometheus.Desc
}

// newDeadCollector's model_name and engine are constant labels, so that
// data-parallel ranks sharing one registry each register their own.
func newDeadCollector(cfg Config, labels prometheus.Labels) *deadCollector {
	f := metricspec.Must(metricspec.EngineDead)
	return &deadCollector{stats: cfg.Stats, desc: prometheus.NewDesc(f.Name, f.Help, f.Labels, labels)}
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
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, string(r))
	}
}

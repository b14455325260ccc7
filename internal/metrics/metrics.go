// Package metrics is the only place glassbox defines Prometheus metrics. It
// owns vLLM's vllm:* families (same names, types, labels and buckets, so
// vLLM's dashboards and the Gateway API Inference Extension work unchanged),
// glassbox's own glassbox_* families, the HTTP instrumentation families and
// the /metrics text exposition.
//
// It turns the engine's Observer events and Stats snapshots into series; it
// never calls into the engine beyond reading Stats at scrape time. It must
// not import server, tracing, executor, sched or kvcache: the engine's public
// API is all it needs.
package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Label names shared by every per-engine family.
const (
	labelModel  = metricspec.LabelModel
	labelEngine = metricspec.LabelEngine
)

// Config says what the metrics describe. It is read once by New.
type Config struct {
	ModelName string // value of model_name: the first --served-model-name, else --model
	Engine    string // value of engine: the data-parallel index, "0" for one engine

	// MaxModelLen sizes the 1-2-5 token-count histograms, as vLLM does.
	MaxModelLen int

	// DisableLogStats mirrors --disable-log-stats: no vllm:* family is
	// registered and the Observer methods do nothing.
	DisableLogStats bool

	// Cache is what vllm:cache_config_info describes.
	Cache metricspec.CacheConfig

	// SchedulerInfo are the labels of glassbox_scheduler_config_info
	// (max_num_seqs, max_num_batched_tokens, max_model_len).
	SchedulerInfo map[string]string
	// ExecutorInfo are the labels of glassbox_executor_info (executor,
	// hardware, model, ...).
	ExecutorInfo map[string]string

	// Per-GPU peaks, exported so that MFU and MBU are PromQL divisions of
	// vllm:estimated_*_per_gpu_total rates by these gauges.
	PeakFLOPs     float64 // FLOP/s
	PeakBandwidth float64 // bytes/s

	// NumSpeculativeTokens is --speculative-config's k: with k > 0 the
	// four vllm:spec_decode_* families are registered, per-position
	// acceptance with positions "0" to k-1 (0: no speculation, no
	// families, as vLLM).
	NumSpeculativeTokens int

	// Stats is called at scrape time for the gauges; nil reads as all zero.
	Stats func() engine.Stats

	// MaxLoRAs is --max-loras when LoRA adapters are served (0: none);
	// it registers vllm:lora_requests_info.
	MaxLoRAs int

	// NoFrontend leaves out the API server's families (HTTP, admission
	// rejections): a data-parallel rank after the first, whose API server
	// is rank 0's.
	NoFrontend bool

	// Offload registers the KV offload connector's families (an offload
	// tier, --kv-offloading-size); KVCacheMetrics the residency
	// histograms (--kv-cache-metrics).
	Offload, KVCacheMetrics bool
}

// Metrics holds every series glassbox exports. ObserveStep and
// ObserveFinished run on the engine goroutine (and only there, which is why
// groups needs no lock); InstrumentHTTP's wrappers run on any goroutine and
// touch only Prometheus' own concurrency-safe types.
type Metrics struct {
	enabled bool

	step      stepSeries
	spec      specSeries
	offload   *offloadSeries   // nil without an offload tier
	residency *residencySeries // nil without --kv-cache-metrics
	finished  finishedSeries
	groups    map[string]*groupStats // open n>1 parent requests, by Group

	http       httpSeries
	admissions map[string]prometheus.Counter // by reason
	lora       *loraCollector                // nil unless LoRA adapters are served
}

var _ engine.Observer = (*Metrics)(nil)

// New registers every family on reg with its series pre-created at zero.
func New(cfg Config, reg prometheus.Registerer) (*Metrics, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new metrics: %w", err)
	}
	b := &builder{reg: reg, labels: prometheus.Labels{labelModel: cfg.ModelName, labelEngine: cfg.Engine}}
	m := &Metrics{enabled: !cfg.DisableLogStats}

	b.info(metricspec.SchedulerConfigInfo, cfg.SchedulerInfo, true)
	b.info(metricspec.ExecutorInfo, cfg.ExecutorInfo, true)
	b.gauge(metricspec.ExecutorPeakFLOPs, cfg.PeakFLOPs)
	b.gauge(metricspec.ExecutorPeakMemBandwidth, cfg.PeakBandwidth)
	b.register(newDeadCollector(cfg, b.labels))
	if !cfg.NoFrontend {
		m.http = newHTTPSeries(b)
	}

	if m.enabled {
		b.info(metricspec.CacheConfigInfo, cfg.Cache.Labels(), false)
		if cfg.NumSpeculativeTokens > 0 {
			m.spec = newSpecSeries(b, cfg.NumSpeculativeTokens)
		}
		if cfg.Offload {
			m.offload = newOffloadSeries(b)
		}
		b.sleepState()
		m.step = newStepSeries(b)
		m.finished = newFinishedSeries(b, cfg.MaxModelLen)
		if cfg.KVCacheMetrics {
			m.residency = newResidencySeries(b)
		}
		m.groups = make(map[string]*groupStats)
		b.register(newStatsCollector(cfg))
		// vllm:lora_requests_info has no engine label: rank 0's, as vLLM
		// warns it misleads with data parallelism.
		if cfg.MaxLoRAs > 0 && !cfg.NoFrontend {
			m.lora = newLoRACollector(cfg)
			b.register(m.lora)
		}
		if !cfg.NoFrontend {
			frontend := &builder{reg: reg, labels: prometheus.Labels{labelModel: cfg.ModelName}}
			m.admissions = frontend.counterVec(metricspec.AdmissionRejections, []string{metricspec.RejectQueueFull, metricspec.RejectShutdown, metricspec.RejectConcurrency})
			b.err = cmp.Or(b.err, frontend.err)
		}
	}
	if b.err != nil {
		return nil, fmt.Errorf("new metrics: %w", b.err)
	}
	return m, nil
}

func (c *Config) validate() error {
	if c.ModelName == "" || c.Engine == "" {
		return errors.New("model name and engine labels must not be empty")
	}
	if !c.DisableLogStats && c.MaxModelLen < 1 {
		return fmt.Errorf("max model len must be at least 1, got %d", c.MaxModelLen)
	}
	for what, info := range map[string]map[string]string{
		"scheduler info": c.SchedulerInfo, "executor info": c.ExecutorInfo,
	} {
		for k := range info {
			if k == labelModel || k == labelEngine || !model.LabelName(k).IsValidLegacy() || k == "__name__" {
				return fmt.Errorf("%s label %q is reserved or not a valid label name", what, k)
			}
		}
	}
	return nil
}

// Rejected counts a request refused at admission (an HTTP 503) for reason,
// one of metricspec's Reject constants.
func (m *Metrics) Rejected(reason string) {
	if c, ok := m.admissions[reason]; ok {
		c.Inc()
	}
}

// builder registers families one after another and keeps the first error,
// so that New reads as a list of definitions.
type builder struct {
	reg    prometheus.Registerer
	labels prometheus.Labels // model_name and engine
	err    error
}

func (b *builder) register(c prometheus.Collector) {
	if b.err != nil {
		return
	}
	if err := b.reg.Register(c); err != nil {
		b.err = fmt.Errorf("register metric: %w", err)
	}
}

func (b *builder) counter(name string) prometheus.Counter {
	return b.counterOf(metricspec.Must(name))
}

func (b *builder) counterOf(f metricspec.Family) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: f.Name, Help: f.Help, ConstLabels: b.labels})
	b.register(c)
	return c
}

// counterVec registers a family with its one variable label and returns
// its children, one per value, created now so that they exist at zero.
func (b *builder) counterVec(name string, values []string) map[string]prometheus.Counter {
	f := metricspec.Must(name)
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: f.Help, ConstLabels: b.labels}, f.Labels)
	out := make(map[string]prometheus.Counter, len(values))
	for _, val := range values {
		out[val] = v.WithLabelValues(val)
	}
	b.register(v)
	return out
}

// histogram registers a histogram with the family's buckets (sized by
// maxModelLen for the token-count histograms).
func (b *builder) histogram(name string, maxModelLen int) prometheus.Observer {
	return b.histogramOf(metricspec.Must(name), maxModelLen)
}

func (b *builder) histogramOf(f metricspec.Family, maxModelLen int) prometheus.Observer {
	name := f.Name
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: f.Help, Buckets: f.Buckets(maxModelLen), ConstLabels: b.labels})
	b.register(h)
	return h
}

// batchHistogram registers a histogram observed a step's values at a time.
func (b *builder) batchHistogram(name string) *batchHistogram {
	f := metricspec.Must(name)
	h := newBatchHistogram(prometheus.HistogramOpts{Name: name, Help: f.Help, Buckets: f.Buckets(0), ConstLabels: b.labels})
	b.register(h)
	return h
}

func (b *builder) gauge(name string, v float64) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: metricspec.Must(name).Help, ConstLabels: b.labels})
	g.Set(v)
	b.register(g)
}

// info registers an info-style gauge of value 1 whose labels carry the
// configuration. vLLM's cache_config_info has engine but no model_name.
func (b *builder) info(name string, info map[string]string, withModel bool) {
	labels := maps.Clone(info)
	if labels == nil {
		labels = prometheus.Labels{}
	}
	labels[labelEngine] = b.labels[labelEngine]
	if withModel {
		labels[labelModel] = b.labels[labelModel]
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: metricspec.Must(name).Help, ConstLabels: labels})
	g.Set(1)
	b.register(g)
}

// sleepState registers vllm:engine_sleep_state. glassbox never sleeps, so
// awake is 1 and the other states 0 for the process' life.
func (b *builder) sleepState() {
	f := metricspec.Must(metricspec.EngineSleepState)
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name, Help: f.Help, ConstLabels: b.labels}, f.Labels)
	v.WithLabelValues("awake").Set(1)
	v.WithLabelValues("weights_offloaded").Set(0)
	v.WithLabelValues("discard_all").Set(0)
	b.register(v)
}

// finishReasonValues are the request_success label values, pre-created in
// the engine's order.
func finishReasonValues() []string {
	out := make([]string, 0, len(engine.FinishReasons))
	for _, r := range engine.FinishReasons {
		out = append(out, string(r))
	}
	return out
}

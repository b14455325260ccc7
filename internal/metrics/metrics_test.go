package metrics

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

func testConfig() Config {
	return Config{
		ModelName:   "test-model",
		Engine:      "0",
		MaxModelLen: 4096,
		Cache: metricspec.CacheConfig{BlockSize: 16, NumGPUBlocks: 1000, EnablePrefixCaching: true,
			GPUMemoryUtilization: 0.92, CacheDtype: "auto", PrefixCachingHashAlgo: "sha256"},
		SchedulerInfo: map[string]string{"max_num_seqs": "256", "max_num_batched_tokens": "8192", "max_model_len": "4096"},
		ExecutorInfo:  map[string]string{"executor": "sim", "hardware": "H200", "model": "llama-3.1-8b"},
		PeakFLOPs:     989e12,
		PeakBandwidth: 4.8e12,
	}
}

// newTestMetrics builds Metrics on a fresh registry.
func newTestMetrics(t testing.TB, cfg Config) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(cfg, reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

// scrape serves reg through Handler and returns the body, checking the
// content type on the way.
func scrape(t testing.TB, reg prometheus.Gatherer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Content-Type"); got != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// parse reads exposition text with Prometheus' own parser, so that a
// formatting mistake fails here as it would fail a scrape.
func parse(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, text)
	}
	return fams
}

// sampleLine matches one sample line: name, label block, value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// labelOrders returns, per sample name, the label names in the order they
// were written (the parser sorts them, so order is checked on raw text).
func labelOrders(text string) map[string][][]string {
	out := map[string][][]string{}
	for line := range strings.Lines(text) {
		m := sampleLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			continue
		}
		var names []string
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			names = append(names, p[1])
		}
		out[m[1]] = append(out[m[1]], names)
	}
	return out
}

type familySpec struct {
	typ    dto.MetricType
	labels []string // in exposition order (sorted, as prometheus_client writes them), le excluded
	label  string   // the variable label, whose values are below
	values []string // its values, one series each; nil: one series
}

// expectedFamilies is the contract of reference/vllm-observability.md §1a
// and the real vLLM 0.30 scrape (and DESIGN.md §3 for glassbox_*), written
// out independently of the code.
func expectedFamilies() map[string]familySpec {
	me := []string{"engine", "model_name"}
	with := func(l string) []string { return slices.Sorted(slices.Values(append(slices.Clone(me), l))) }
	g, c, h := dto.MetricType_GAUGE, dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM
	out := map[string]familySpec{
		"vllm:num_requests_running":           {typ: g, labels: me},
		"vllm:num_requests_waiting":           {typ: g, labels: me},
		"vllm:num_requests_waiting_by_reason": {typ: g, labels: with("reason"), label: "reason", values: []string{"capacity", "deferred"}},
		"vllm:kv_cache_usage_perc":            {typ: g, labels: me},
		"vllm:engine_sleep_state":             {typ: g, labels: with("sleep_state"), label: "sleep_state", values: []string{"awake", "weights_offloaded", "discard_all"}},
		"vllm:cache_config_info": {typ: g, labels: []string{"_block_size_resolved", "block_size", "cache_dtype",
			"enable_mamba_fine_grained_prefix_cache", "enable_prefix_caching", "engine", "gpu_memory_utilization",
			"is_attention_free", "kv_cache_dtype_skip_layers", "kv_cache_layout", "kv_cache_max_concurrency",
			"kv_cache_memory_bytes", "kv_cache_size_tokens", "kv_offloading_backend", "kv_offloading_size",
			"kv_sharing_fast_prefill", "mamba_block_size", "mamba_cache_dtype", "mamba_cache_mode", "mamba_page_size_padded",
			"mamba_ssm_cache_dtype", "num_cpu_blocks", "num_gpu_blocks", "num_gpu_blocks_override",
			"prefix_cache_retention_interval", "prefix_caching_hash_algo", "prefix_match_unit", "replayssm_buffer_len",
			"skip_page_size_padded", "sliding_window", "use_kda_recoverssm", "use_replayssm", "user_specified_block_size",
			"user_specified_mamba_block_size"}},
		"vllm:prompt_tokens_by_source_total": {typ: c, labels: with("source"), label: "source", values: []string{"local_compute", "local_cache_hit", "external_kv_transfer"}},
		"vllm:prompt_tokens_cached_by_source_total": {typ: c, labels: with("source"), label: "source",
			values: []string{"device", "host", "p2p", "disk", "external_unspecified"}},
		"vllm:request_success_total":      {typ: c, labels: with("finished_reason"), label: "finished_reason", values: []string{"stop", "length", "abort", "error", "repetition"}},
		"vllm:admission_rejections_total": {typ: c, labels: []string{"model_name", "reason"}, label: "reason", values: []string{"max_num_queued_reqs", "shutdown", "limit_concurrency"}},
		"glassbox_scheduler_config_info": {typ: g, labels: []string{"engine",
			"max_model_len", "max_num_batched_tokens", "max_num_seqs", "model_name"}},
		"glassbox_executor_info":   {typ: g, labels: []string{"engine", "executor", "hardware", "model", "model_name"}},
		"glassbox_kv_cache_blocks": {typ: g, labels: with("state"), label: "state", values: []string{"free", "cached", "used"}},
		"glassbox_engine_dead":     {typ: g, labels: with("reason"), label: "reason", values: []string{"executor_error", "step_timeout", "executor_panic"}},
		// The instrumentator's unlabelled histogram exists before any request.
		"http_request_duration_highr_seconds": {typ: h},
	}
	for _, n := range []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:external_prefix_cache_queries_total", "vllm:external_prefix_cache_hits_total",
		"vllm:mm_cache_queries_total", "vllm:mm_cache_hits_total",
		"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:prompt_tokens_cached_total",
		"vllm:generation_tokens_total", "vllm:estimated_flops_per_gpu_total",
		"vllm:estimated_read_bytes_per_gpu_total", "vllm:estimated_write_bytes_per_gpu_total",
		"glassbox_executor_busy_seconds_total", "glassbox_engine_host_seconds_total", "glassbox_engine_steps_total"} {
		out[n] = familySpec{typ: c, labels: me}
	}
	for _, n := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
		"vllm:request_time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
		"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
		"vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds",
		"vllm:request_prompt_tokens", "vllm:request_generation_tokens",
		"vllm:request_max_num_generation_tokens", "vllm:request_params_n",
		"vllm:request_params_max_tokens", "vllm:request_prefill_kv_computed_tokens",
		"vllm:request_num_preemptions",
		"vllm:iteration_tokens_total", "glassbox_engine_step_duration_seconds"} {
		out[n] = familySpec{typ: h, labels: me}
	}
	for _, n := range []string{"glassbox_executor_peak_flops_per_second",
		"glassbox_executor_peak_memory_bandwidth_bytes_per_second"} {
		out[n] = familySpec{typ: g, labels: me}
	}
	// prometheus_client writes a _created gauge family after every counter
	// and histogram, with the same series.
	for name, f := range out {
		switch f.typ {
		case c:
			name = strings.TrimSuffix(name, "_total")
		case h:
		default:
			continue
		}
		out[name+"_created"] = familySpec{typ: g, labels: f.labels, label: f.label, values: f.values}
	}
	return out
}

// wantStartValue is what a series holds before any traffic.
func wantStartValue(family string, labels map[string]string, cfg Config) float64 {
	switch {
	case strings.HasSuffix(family, "_info"):
		return 1
	case family == "vllm:engine_sleep_state" && labels["sleep_state"] == "awake":
		return 1
	case family == "glassbox_executor_peak_flops_per_second":
		return cfg.PeakFLOPs
	case family == "glassbox_executor_peak_memory_bandwidth_bytes_per_second":
		return cfg.PeakBandwidth
	}
	return 0
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func TestFamiliesAtStartUp(t *testing.T) {
	cfg := testConfig()
	_, reg := newTestMetrics(t, cfg)
	text := scrape(t, reg)
	fams := parse(t, text)
	orders := labelOrders(text)

	want := expectedFamilies()
	got := slices.Sorted(maps.Keys(fams))
	if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), got); diff != "" {
		t.Errorf("families (-want +got):\n%s", diff)
	}
	for name, spec := range want {
		mf := fams[name]
		if mf == nil {
			continue
		}
		if mf.GetType() != spec.typ {
			t.Errorf("%s: type %v, want %v", name, mf.GetType(), spec.typ)
		}
		wantSeries := max(len(spec.values), 1)
		if len(mf.GetMetric()) != wantSeries {
			t.Errorf("%s: %d series, want %d", name, len(mf.GetMetric()), wantSeries)
		}
		var values []string
		for _, m := range mf.GetMetric() {
			lm := labelMap(m)
			if spec.values != nil {
				values = append(values, lm[spec.label])
			}
			if v := seriesValue(m); strings.HasSuffix(name, "_created") {
				if now := float64(time.Now().UnixNano()) / 1e9; v > now || v < now-60 {
					t.Errorf("%s%v = %v, want the series' creation time (now: %v)", name, lm, v, now)
				}
			} else if w := wantStartValue(name, lm, cfg); v != w {
				t.Errorf("%s%v = %v at start-up, want %v", name, lm, v, w)
			}
			if (slices.Contains(spec.labels, "engine") && lm["engine"] != "0") ||
				(slices.Contains(spec.labels, "model_name") && lm["model_name"] != "test-model") {
				t.Errorf("%s: labels %v", name, lm)
			}
		}
		if spec.values != nil && !cmp.Equal(slices.Sorted(slices.Values(values)), slices.Sorted(slices.Values(spec.values))) {
			t.Errorf("%s: label values %v, want %v", name, values, spec.values)
		}
		sample := name
		if spec.typ == dto.MetricType_HISTOGRAM {
			sample += "_count"
		}
		for _, o := range orders[sample] {
			if !cmp.Equal(o, spec.labels) {
				t.Errorf("%s: label order %v, want %v", sample, o, spec.labels)
			}
		}
	}
}

// seriesValue is a series' value, or a histogram's count.
func seriesValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount()) + m.GetHistogram().GetSampleSum()
	}
	return -1
}

func TestDisableLogStats(t *testing.T) {
	cfg := testConfig()
	cfg.DisableLogStats = true
	cfg.MaxModelLen = 0 // not needed without the token histograms
	m, reg := newTestMetrics(t, cfg)
	m.ObserveStep(&engine.StepEvent{PromptTokens: 5, TTFTs: []float64{0.1}})
	m.ObserveFinished(&engine.FinishedEvent{Reason: engine.FinishStop})
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).ServeHTTP(
		httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))

	fams := parse(t, scrape(t, reg))
	want := []string{
		"glassbox_engine_dead", "glassbox_executor_info", "glassbox_executor_peak_flops_per_second",
		"glassbox_executor_peak_memory_bandwidth_bytes_per_second", "glassbox_scheduler_config_info",
		"http_request_duration_highr_seconds", "http_request_duration_highr_seconds_created",
		"http_request_duration_seconds", "http_request_duration_seconds_created",
		"http_request_size_bytes", "http_request_size_bytes_created", "http_requests_created", "http_requests_total",
		"http_response_size_bytes", "http_response_size_bytes_created",
	}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(fams))); diff != "" {
		t.Errorf("families with --disable-log-stats (-want +got):\n%s", diff)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"no model name", func(c *Config) { c.ModelName = "" }},
		{"no engine", func(c *Config) { c.Engine = "" }},
		{"no max model len", func(c *Config) { c.MaxModelLen = 0 }},
		{"model_name in executor info", func(c *Config) { c.ExecutorInfo["model_name"] = "x" }},
		{"invalid label name", func(c *Config) { c.SchedulerInfo["max-num-seqs"] = "1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			if _, err := New(cfg, prometheus.NewRegistry()); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(testConfig(), reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(testConfig(), reg); err == nil {
		t.Error("second New on the same registry succeeded, want a duplicate-registration error")
	}
}

// TestLint runs Prometheus' metric linter. vLLM's names carry colons (a
// compatibility contract) and vllm:iteration_tokens_total is a histogram
// whose name ends in _total (also vLLM's); everything else must pass.
func TestLint(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).ServeHTTP(
		httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Text == "metric names should not contain ':'" {
			continue
		}
		if p.Metric == "vllm:iteration_tokens_total" && strings.Contains(p.Text, "_total") {
			continue
		}
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}

// TestLoRARequestsInfo: with LoRA, vllm:lora_requests_info has vLLM's
// three labels (no model_name or engine), one series per combination of
// adapters seen, valued by when it was last current.
func TestLoRARequestsInfo(t *testing.T) {
	cfg := testConfig()
	cfg.MaxLoRAs = 2
	now := time.Unix(1738217335, 0)
	st := engine.Stats{Running: 1, Waiting: 2, Deferred: 1, RunningLoRA: "a", WaitingLoRA: "b,c", LoRAAt: now}
	cfg.Stats = func() engine.Stats { return st }
	_, reg := newTestMetrics(t, cfg)
	text := scrape(t, reg)
	for _, want := range []string{
		`vllm:lora_requests_info{max_lora="2",running_lora_adapters="a",waiting_lora_adapters="b,c"} 1.738217335e+09`,
		`vllm:num_requests_waiting_by_reason{engine="0",model_name="test-model",reason="deferred"} 1`,
		`vllm:num_requests_waiting_by_reason{engine="0",model_name="test-model",reason="capacity"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, grepLines(text, "lora_requests_info", "by_reason"))
		}
	}
	st = engine.Stats{LoRAAt: now.Add(time.Second)}
	text = scrape(t, reg)
	if !strings.Contains(text, `running_lora_adapters="a",waiting_lora_adapters="b,c"} 1.738217335e+09`) ||
		!strings.Contains(text, `running_lora_adapters="",waiting_lora_adapters=""} 1.738217336e+09`) {
		t.Errorf("the older combination must stay, the newer one newest:\n%s", grepLines(text, "lora_requests_info"))
	}
}

func grepLines(text string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

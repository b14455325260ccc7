package inferenceperf

import (
	"fmt"
	"math"
	"slices"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Defaults of inference-perf's schema.
const (
	defaultWorkerConcurrency = 100
	defaultMockOutputLen     = 30 // its client's max_tokens when the data sets none
)

// check fills inference-perf's defaults and refuses what cannot run, by
// key and line.
func (c *Config) check() error {
	checks := []func() error{c.checkLoad, c.checkAPI, c.checkServer, c.checkData, c.checkReport, c.checkOutputs, c.checkBreakers}
	for _, f := range checks {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func (c *Config) checkLoad() error {
	l := &c.Load
	switch l.Type {
	case "":
		l.Type = "constant"
	case "constant", "poisson", "concurrent", "trace_replay", "trace_session_replay":
	default:
		return c.at("load.type", "%q: want constant, poisson, concurrent, trace_replay or trace_session_replay", l.Type)
	}
	if l.Interval != nil && !(*l.Interval >= 0) {
		return c.at("load.interval", "must not be negative, got %v", *l.Interval)
	}
	if err := c.checkSweep(); err != nil {
		return err
	}
	if len(l.Stages) == 0 && l.Sweep == nil {
		return c.at("load.stages", "load.stages is empty: give stages or a sweep")
	}
	if l.Type == "trace_replay" && (l.Trace == nil || l.Trace.File == "") {
		return c.at("load.trace", "load type trace_replay needs load.trace.file")
	}
	if l.Type != "trace_replay" && l.Trace != nil {
		return c.at("load.trace", "load.trace is read by load type trace_replay only")
	}
	if l.Trace != nil {
		if err := c.checkTraceFormat(l.Trace, "load.trace"); err != nil {
			return err
		}
	}
	if l.Type == "trace_session_replay" {
		if err := c.checkSessionStages(); err != nil {
			return err
		}
	} else if err := c.checkStages(); err != nil {
		return err
	}
	if w := l.NumWorkers; w != nil && *w < 0 {
		return c.at("load.num_workers", "must not be negative, got %d", *w)
	}
	if w := l.WorkerMaxConcurrency; w != nil && *w < 1 {
		return c.at("load.worker_max_concurrency", "must be positive, got %d", *w)
	}
	if w := l.WorkerMaxTCPConnections; w != nil && *w < 1 {
		return c.at("load.worker_max_tcp_connections", "must be positive, got %d", *w)
	}
	if t := l.RequestTimeout; t != nil && !finitePositive(*t) {
		return c.at("load.request_timeout", "must be positive, got %v", *t)
	}
	return c.checkLoRASplit()
}

func (c *Config) checkSweep() error {
	s := c.Load.Sweep
	if s == nil {
		return nil
	}
	switch c.Load.Type {
	case "concurrent":
		return c.at("load.sweep", "a sweep cannot run with load type concurrent (as in inference-perf)")
	case "trace_replay":
		return c.at("load.sweep", "a sweep cannot run with load type trace_replay here: the trace sets the send times")
	case "trace_session_replay":
		return c.at("load.sweep", "a sweep cannot run with load type trace_session_replay (as in inference-perf)")
	}
	switch s.Type {
	case "linear", "geometric":
	default:
		return c.at("load.sweep.type", "%q: want linear or geometric", s.Type)
	}
	defInt(&s.NumRequests, 2000)
	defFloat(&s.Timeout, 60)
	defInt(&s.NumStages, 5)
	defFloat(&s.StageDuration, 180)
	defFloat(&s.SaturationPercentile, 95)
	switch {
	case *s.NumRequests < 1 || *s.NumRequests > workload.MaxRequests:
		return c.at("load.sweep.num_requests", "want 1 to %d, got %d", workload.MaxRequests, *s.NumRequests)
	case !finitePositive(*s.Timeout):
		return c.at("load.sweep.timeout", "must be positive, got %v", *s.Timeout)
	case *s.NumStages < 1 || *s.NumStages > 1000:
		return c.at("load.sweep.num_stages", "want 1 to 1000, got %d", *s.NumStages)
	case !finitePositive(*s.StageDuration):
		return c.at("load.sweep.stage_duration", "must be positive, got %v", *s.StageDuration)
	case !(*s.SaturationPercentile >= 0 && *s.SaturationPercentile <= 100):
		return c.at("load.sweep.saturation_percentile", "want 0 to 100, got %v", *s.SaturationPercentile)
	}
	if len(c.Load.Stages) > 0 {
		c.note("load.stages: the sweep generates the stages and replaces these, as inference-perf does")
	}
	return nil
}

func (c *Config) checkLoRASplit() error {
	split := c.Load.LoRATrafficSplit
	if split == nil {
		return nil
	}
	if len(split) == 0 {
		return c.at("load.lora_traffic_split", "is empty")
	}
	sum := 0.0
	seen := map[string]bool{}
	for i, s := range split {
		p := fmt.Sprintf("load.lora_traffic_split[%d]", i)
		if s.Name == "" || seen[s.Name] {
			return c.at(p, "each adapter needs a name, given once")
		}
		if !(s.Split >= 0 && s.Split <= 1) {
			return c.at(p, "split must be in [0, 1], got %v", s.Split)
		}
		seen[s.Name] = true
		sum += s.Split
	}
	if math.Abs(sum-1) > 1e-9 {
		return c.at("load.lora_traffic_split", "the splits add up to %v, not 1.0", sum)
	}
	return nil
}

func (c *Config) checkAPI() error {
	a := &c.API
	switch a.Type {
	case "":
		a.Type = "completion"
	case "completion", "chat":
	case "anthropic_messages":
		return c.at("api.type", "anthropic_messages: glassbox bench measures the OpenAI APIs (completion, chat)")
	default:
		return c.at("api.type", "%q: want completion or chat", a.Type)
	}
	if u := a.SLOUnit; u != nil && !slices.Contains([]string{"s", "ms", "us"}, *u) {
		return c.at("api.slo_unit", "%q: want s, ms or us", *u)
	}
	if rf := a.ResponseFormat; rf != nil {
		switch rf.Type {
		case "":
			rf.Type = "json_schema"
		case "json_schema", "json_object":
		default:
			return c.at("api.response_format.type", "%q: want json_schema or json_object", rf.Type)
		}
		if rf.Name == nil {
			n := "structured_output"
			rf.Name = &n
		}
	}
	return nil
}

// ResponseFormat is api.response_format as the request carries it
// (inference-perf's to_api_format), or nil.
func (a *API) ResponseFormatBody() map[string]any {
	rf := a.ResponseFormat
	if rf == nil {
		return nil
	}
	if rf.Type == "json_object" {
		return map[string]any{"type": "json_object"}
	}
	var schema any
	if rf.JSONSchema != nil {
		schema = rf.JSONSchema
	}
	return map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": *rf.Name, "schema": schema}}
}

func (c *Config) checkServer() error {
	s := &c.Server
	switch s.Type {
	case "":
		s.Type = "vllm"
	case "vllm", "mock":
	case "sglang", "tgi":
		c.note("server.type %s: glassbox's server view reads vLLM's metric names from /metrics", s.Type)
	default:
		return c.at("server.type", "%q: want vllm, sglang, tgi or mock", s.Type)
	}
	if (s.CertPath == nil) != (s.KeyPath == nil) {
		return c.at("server.cert_path", "give cert_path and key_path together")
	}
	return nil
}

func (c *Config) checkReport() error {
	r := &c.Report.RequestLifecycle
	if r.Percentiles == nil {
		r.Percentiles = []float64{0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9}
	}
	for _, p := range r.Percentiles {
		if !(p >= 0 && p <= 100) {
			return c.at("report.request_lifecycle.percentiles", "want percentiles from 0 to 100, got %v", p)
		}
	}
	if u := r.UseServerOutputTokens; u != nil && !*u {
		return c.at("report.request_lifecycle.use_server_output_tokens", "false is not built: glassbox normalises the per-token metrics by the server's usage.completion_tokens (true), never by the client re-tokenizing the answer")
	}
	defInt(&r.MaxErrorMessages, 100)
	if *r.MaxErrorMessages < 0 {
		return c.at("report.request_lifecycle.max_error_messages", "must not be negative")
	}
	if g := c.Report.Goodput; g != nil {
		for k, v := range g.Constraints {
			if !slices.Contains([]string{"ttft", "tpot", "itl", "ntpot", "request_latency"}, k) {
				return c.at("report.goodput.constraints."+k, "want ttft, tpot, itl, ntpot or request_latency")
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				return c.at("report.goodput.constraints."+k, "must be a non-negative number of seconds, got %v", v)
			}
		}
	}
	return nil
}

// checkOutputs reads the blocks about where metrics come from and reports
// go, which do not change the load.
func (c *Config) checkOutputs() error {
	if m := c.Metrics; m != nil {
		switch m.Type {
		case "prometheus", "default":
		default:
			return c.at("metrics.type", "%q: want prometheus or default", m.Type)
		}
		if p := m.Prometheus; p != nil {
			if (p.URL != nil && *p.URL != "") == p.GoogleManaged {
				return c.at("metrics.prometheus", "give exactly one of url or google_managed (as inference-perf)")
			}
			c.note("metrics.prometheus: glassbox reads the server's /metrics itself (bench --metrics-url) for the Prometheus report, rather than querying Prometheus (so url, filters and scrape_interval are not used)")
		}
	}
	if t := c.Tokenizer; t != nil {
		c.note("tokenizer: glassbox counts tokens with the server's own tokenizer (/tokenize), or the simulator's; it loads no Hugging Face tokenizer (pretrained_model_name_or_path, trust_remote_code and token are not used)")
	}
	if c.Report.SessionLifecycle != nil && c.Data.Type != "otel_trace_replay" {
		c.note("report.session_lifecycle: session reports are written for data.type otel_trace_replay's sessions only (as in inference-perf); this run has none")
	}
	if s := c.Storage; s != nil {
		if s.GoogleCloudStorage != nil || s.SimpleStorageService != nil {
			c.note("storage: glassbox writes the reports to local storage only; the cloud buckets are not uploaded to")
		}
		for name, p := range map[string]*StoragePath{"google_cloud_storage": s.GoogleCloudStorage, "simple_storage_service": s.SimpleStorageService} {
			if p != nil && (p.BucketName == nil || *p.BucketName == "") {
				return c.at("storage."+name+".bucket_name", "is required")
			}
		}
		if l := s.LocalStorage; l != nil && (l.BucketName != nil || l.EndpointURL != nil || l.RegionName != nil || l.AddressingStyle != nil) {
			return c.at("storage.local_storage", "takes path and report_file_prefix only")
		}
	}
	return nil
}

// checkSessionStages checks trace_session_replay's stages (each a slice
// of the traces' sessions) and the load keys that do not apply to them.
func (c *Config) checkSessionStages() error {
	l := &c.Load
	if c.Data.Type != "otel_trace_replay" {
		return c.at("load.type", "trace_session_replay replays data.type otel_trace_replay's sessions, not data.type %q's requests", c.Data.Type)
	}
	for i, s := range l.Stages {
		p := fmt.Sprintf("load.stages[%d]", i)
		switch {
		case s.Rate != 0 || s.Duration != 0 || s.NumRequests != nil || s.ConcurrencyLevel != nil:
			return c.at(p, "load type trace_session_replay's stages take concurrent_sessions, session_rate, num_sessions and timeout, not rate, duration, num_requests or concurrency_level")
		case s.ConcurrentSessions == nil || *s.ConcurrentSessions < 0:
			return c.at(p+".concurrent_sessions", "is required: the most sessions at once, 0 for all")
		case s.SessionRate != nil && !finitePositive(*s.SessionRate):
			return c.at(p+".session_rate", "must be positive, got %v", *s.SessionRate)
		case s.SessionRate != nil && *s.ConcurrentSessions > 0 && *s.SessionRate > float64(*s.ConcurrentSessions):
			return c.at(p+".session_rate", "%v cannot exceed concurrent_sessions (%d), as in inference-perf", *s.SessionRate, *s.ConcurrentSessions)
		case s.NumSessions != nil && (*s.NumSessions < 1 || *s.NumSessions > workload.MaxRequests):
			return c.at(p+".num_sessions", "want 1 to %d, got %d", workload.MaxRequests, *s.NumSessions)
		case s.Timeout != nil && !finitePositive(*s.Timeout):
			return c.at(p+".timeout", "must be positive, got %v", *s.Timeout)
		}
	}
	return nil
}

// checkStages checks the stages of the load types that send requests.
func (c *Config) checkStages() error {
	l := &c.Load
	for i, s := range l.Stages {
		p := fmt.Sprintf("load.stages[%d]", i)
		if s.ConcurrentSessions != nil || s.SessionRate != nil || s.NumSessions != nil || s.Timeout != nil {
			return c.at(p, "concurrent_sessions, session_rate, num_sessions and timeout belong to load type trace_session_replay")
		}
		if l.Type == "concurrent" {
			if s.NumRequests == nil || *s.NumRequests < 1 || s.ConcurrencyLevel == nil || *s.ConcurrencyLevel < 1 {
				return c.at(p, "load type concurrent needs num_requests and concurrency_level, both positive")
			}
			if *s.NumRequests > workload.MaxRequests {
				return c.at(p, "%d requests is too many", *s.NumRequests)
			}
			continue
		}
		if s.NumRequests != nil || s.ConcurrencyLevel != nil {
			return c.at(p, "num_requests and concurrency_level belong to load type concurrent, not %s", l.Type)
		}
		if !finitePositive(s.Rate) || !finitePositive(s.Duration) {
			return c.at(p, "rate and duration must be positive, got %v and %v", s.Rate, s.Duration)
		}
		if n := s.Rate * s.Duration; n > workload.MaxRequests {
			return c.at(p, "%v requests is too many", n)
		}
	}
	return nil
}

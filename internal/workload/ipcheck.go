package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Defaults of inference-perf's schema.
const (
	defaultWorkerConcurrency = 100
	defaultMockOutputLen     = 30 // its client's max_tokens when the data sets none
)

// check fills inference-perf's defaults and refuses what cannot run, by
// key and line.
func (c *InferencePerf) check() error {
	checks := []func() error{c.checkLoad, c.checkAPI, c.checkServer, c.checkData, c.checkReport, c.checkOutputs, c.checkBreakers}
	for _, f := range checks {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (c *InferencePerf) note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func (c *InferencePerf) checkLoad() error {
	l := &c.Load
	switch l.Type {
	case "":
		l.Type = "constant"
	case "constant", "poisson", "concurrent", "trace_replay":
	case "trace_session_replay":
		return c.at("load.type", "trace_session_replay replays agent traces (otel_trace_replay, weka_trace_replay), which glassbox does not read")
	default:
		return c.at("load.type", "%q: want constant, poisson, concurrent or trace_replay", l.Type)
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
	for i, s := range l.Stages {
		p := fmt.Sprintf("load.stages[%d]", i)
		if s.ConcurrentSessions != nil || s.SessionRate != nil || s.NumSessions != nil || s.Timeout != nil {
			return c.at(p, "concurrent_sessions, session_rate, num_sessions and timeout belong to load type trace_session_replay")
		}
		if l.Type == "concurrent" {
			if s.NumRequests == nil || *s.NumRequests < 1 || s.ConcurrencyLevel == nil || *s.ConcurrencyLevel < 1 {
				return c.at(p, "load type concurrent needs num_requests and concurrency_level, both positive")
			}
			if *s.NumRequests > MaxRequests {
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
		if n := s.Rate * s.Duration; n > MaxRequests {
			return c.at(p, "%v requests is too many", n)
		}
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

func (c *InferencePerf) checkSweep() error {
	s := c.Load.Sweep
	if s == nil {
		return nil
	}
	switch c.Load.Type {
	case "concurrent":
		return c.at("load.sweep", "a sweep cannot run with load type concurrent (as in inference-perf)")
	case "trace_replay":
		return c.at("load.sweep", "a sweep cannot run with load type trace_replay here: the trace sets the send times")
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
	case *s.NumRequests < 1 || *s.NumRequests > MaxRequests:
		return c.at("load.sweep.num_requests", "want 1 to %d, got %d", MaxRequests, *s.NumRequests)
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

func (c *InferencePerf) checkLoRASplit() error {
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

func (c *InferencePerf) checkAPI() error {
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
func (a *IPAPI) ResponseFormatBody() map[string]any {
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

func (c *InferencePerf) checkServer() error {
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

func (c *InferencePerf) checkTraceFormat(t *IPTrace, path string) error {
	switch t.Format {
	case "":
		t.Format = TraceAzure
	case TraceAzure, TraceBurstGPT:
	default:
		return c.at(path+".format", "%q: want %s (or %s, which glassbox also reads)", t.Format, TraceAzure, TraceBurstGPT)
	}
	if t.File == "" {
		return c.at(path+".file", "is empty")
	}
	return nil
}

func (c *InferencePerf) checkData() error {
	d := &c.Data
	switch d.Type {
	case "":
		d.Type = "mock"
	case "mock", "random", "synthetic", "shared_prefix", "shareGPT":
	case "conversation_replay":
		if err := c.checkConversationReplay(); err != nil {
			return err
		}
	case "cnn_dailymail", "infinity_instruct", "billsum_conversations":
		return c.at("data.type", "%s: glassbox does not read that hub dataset (use shareGPT, random, synthetic or shared_prefix)", d.Type)
	case "otel_trace_replay", "weka_trace_replay", "visionarena":
		return c.at("data.type", "%s is not built in glassbox (it replays recorded agent traces or multimodal chats; conversation_replay generates agent sessions)", d.Type)
	default:
		return c.at("data.type", "%q: want mock, shareGPT, random, synthetic, shared_prefix or conversation_replay", d.Type)
	}
	if d.Type != "conversation_replay" && d.ConversationReplay != nil {
		return c.at("data.conversation_replay", "is set for data.type %s", d.Type)
	}
	for key, v := range map[string]any{"multimodal": d.Multimodal, "otel_trace_replay": d.OTelTraceReplay, "weka_trace_replay": d.WekaTraceReplay,
		"visionarena": d.VisionArena} {
		if v != nil {
			return c.at("data."+key, "glassbox does not generate multimodal prompts or replay recorded agent traces")
		}
	}
	if d.UseChatTemplate {
		if d.Type != "random" {
			return c.at("data.use_chat_template", "is only read by data.type random (as in inference-perf)")
		}
		return c.at("data.use_chat_template", "is not built in glassbox: it would need the model's chat template on the client")
	}
	if d.Type != "shared_prefix" && d.SharedPrefix != nil {
		return c.at("data.shared_prefix", "is set for data.type %s", d.Type)
	}
	if d.Trace != nil {
		if d.Type != "random" {
			return c.at("data.trace", "is read by data.type random only")
		}
		if err := c.checkTraceFormat(d.Trace, "data.trace"); err != nil {
			return err
		}
	}
	if d.Path != "" && d.Type != "shareGPT" {
		return c.at("data.path", "is read by data.type shareGPT only")
	}
	if d.CorpusFilePath != "" && d.Type != "synthetic" {
		return c.at("data.corpus_file_path", "is read by data.type synthetic only")
	}
	for _, k := range []struct {
		name string
		d    *IPDistribution
	}{{"input_distribution", d.InputDistribution}, {"output_distribution", d.OutputDistribution}} {
		if k.d == nil {
			continue
		}
		if d.Type == "mock" || d.Type == "shared_prefix" {
			return c.at("data."+k.name, "data.type %s takes no input or output distribution (as in inference-perf)", d.Type)
		}
		if err := k.d.check(); err != nil {
			return c.at("data."+k.name, "%v", err)
		}
		if d.Type == "random" || d.Type == "synthetic" {
			if err := k.d.checkGenerated(); err != nil {
				return c.at("data."+k.name, "%v", err)
			}
		}
	}
	switch d.Type {
	case "random", "synthetic":
		if d.Trace == nil && (d.InputDistribution == nil || d.OutputDistribution == nil) {
			return c.at("data.type", "data.type %s needs input_distribution and output_distribution (or, for random, data.trace)", d.Type)
		}
	case "shared_prefix":
		if d.SharedPrefix == nil {
			d.SharedPrefix = &IPSharedPrefix{}
		}
		if err := c.checkSharedPrefix(d.SharedPrefix); err != nil {
			return err
		}
		if d.SharedPrefix.EnableMultiTurnChat && c.API.Type != "completion" {
			return c.at("data.shared_prefix.enable_multi_turn_chat", "needs api.type completion, as inference-perf's")
		}
	}
	return nil
}

func (c *InferencePerf) checkSharedPrefix(s *IPSharedPrefix) error {
	const p = "data.shared_prefix"
	pick := func(a, b *int, name string, def int) (*int, error) {
		switch {
		case a != nil && b != nil && *a != *b:
			return nil, c.at(p+"."+name, "is given twice (with its alias) with different values")
		case a != nil:
			return a, nil
		case b != nil:
			return b, nil
		}
		return &def, nil
	}
	s.legacyGroups, s.legacyPerGroup = s.NumGroups, s.NumPromptsPerGroup
	var err error
	if s.NumGroups, err = pick(s.NumGroups, s.NumUniqueSystemPrompts, "num_groups", 10); err != nil {
		return err
	}
	if s.NumPromptsPerGroup, err = pick(s.NumPromptsPerGroup, s.NumUsersPerSystemPrompt, "num_prompts_per_group", 10); err != nil {
		return err
	}
	s.NumUniqueSystemPrompts, s.NumUsersPerSystemPrompt = s.NumGroups, s.NumPromptsPerGroup
	if *s.NumGroups < 1 || *s.NumPromptsPerGroup < 1 {
		return c.at(p, "num_groups and num_prompts_per_group must be at least 1")
	}
	if s.Multimodal != nil {
		return c.at(p+".multimodal", "glassbox does not generate multimodal prompts")
	}
	for _, f := range []struct {
		name   string
		l      **Length
		legacy *IPDistribution
		def    int
		min    int
	}{{"system_prompt_len", &s.SystemPromptLen, nil, 100, 0}, {"question_len", &s.QuestionLen, s.QuestionDistribution, 50, 1},
		{"output_len", &s.OutputLen, s.OutputDistribution, 50, 1}} {
		if *f.l == nil {
			*f.l = &Length{Value: f.def}
		}
		l := *f.l
		if l.Dist != nil && f.legacy != nil {
			return c.at(p+"."+f.name, "an inline distribution and the legacy %s are both given: use one", strings.Replace(f.name, "_len", "_distribution", 1))
		}
		if l.Dist != nil {
			if err := l.Dist.check(); err != nil {
				return c.at(p+"."+f.name, "%v", err)
			}
			if *l.Dist.Max < f.min {
				return c.at(p+"."+f.name, "max must be at least %d", f.min)
			}
		} else if l.Value < f.min {
			return c.at(p+"."+f.name, "must be at least %d, got %d", f.min, l.Value)
		}
	}
	for _, d := range []struct {
		name string
		d    *IPDistribution
	}{{"question_distribution", s.QuestionDistribution}, {"output_distribution", s.OutputDistribution}} {
		if d.d != nil {
			if err := d.d.check(); err != nil {
				return c.at(p+"."+d.name, "%v", err)
			}
		}
	}
	return nil
}

func defInt(p **int, v int) {
	if *p == nil {
		*p = &v
	}
}

func defFloat(p **float64, v float64) {
	if *p == nil {
		*p = &v
	}
}

// check fills a distribution's defaults and checks it, as inference-perf's
// Distribution model does.
func (d *IPDistribution) check() error {
	defInt(&d.Min, 10)
	defInt(&d.Max, 1024)
	defFloat(&d.Mean, 512)
	if d.Variance != nil {
		if d.StdDev != nil {
			return errors.New("give std_dev or variance, not both")
		}
		if !(*d.Variance >= 0) {
			return fmt.Errorf("variance cannot be negative, got %v", *d.Variance)
		}
		sd := math.Sqrt(*d.Variance)
		d.StdDev = &sd
	}
	defFloat(&d.StdDev, 200)
	defFloat(&d.Skew, 0)
	switch d.Type {
	case "":
		d.Type = "normal"
	case "normal", "skew_normal", "lognormal", "uniform", "poisson", "fixed":
	default:
		return fmt.Errorf("type %q: want normal, skew_normal, lognormal, uniform, poisson or fixed", d.Type)
	}
	if *d.Min > *d.Max || !(*d.StdDev >= 0) || *d.Min < 0 || math.IsInf(*d.Mean, 0) || math.IsNaN(*d.Mean) || math.IsInf(*d.StdDev, 0) {
		return fmt.Errorf("want 0 <= min <= max, a finite mean and std_dev >= 0, got min %d, max %d, mean %v, std_dev %v", *d.Min, *d.Max, *d.Mean, *d.StdDev)
	}
	if math.IsNaN(*d.Skew) || math.IsInf(*d.Skew, 0) {
		return fmt.Errorf("skew must be finite, got %v", *d.Skew)
	}
	if *d.Max > 1<<24 {
		return fmt.Errorf("max %d is too large", *d.Max)
	}
	if d.TotalCount != nil && (*d.TotalCount < 1 || *d.TotalCount > MaxRequests) {
		return fmt.Errorf("total_count must be 1 to %d, got %d", MaxRequests, *d.TotalCount)
	}
	return nil
}

// checkGenerated refuses what inference-perf's generate_distribution (the
// random and synthetic lengths) refuses: it draws only normal, lognormal,
// uniform and fixed lengths, and a normal mean outside [min, max].
func (d *IPDistribution) checkGenerated() error {
	switch d.Type {
	case "skew_normal", "poisson":
		return fmt.Errorf("type %s: inference-perf draws random and synthetic lengths as normal, lognormal, uniform or fixed", d.Type)
	case "normal":
		if *d.Mean < float64(*d.Min) || *d.Mean > float64(*d.Max) {
			return fmt.Errorf("the mean %v is outside [min, max] = [%d, %d]", *d.Mean, *d.Min, *d.Max)
		}
	}
	return nil
}

func (c *InferencePerf) checkReport() error {
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
func (c *InferencePerf) checkOutputs() error {
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
	if c.Report.SessionLifecycle != nil {
		c.note("report.session_lifecycle: glassbox runs no agent-trace sessions (load type trace_session_replay), so it writes no session reports")
	}
	if s := c.Storage; s != nil {
		if s.GoogleCloudStorage != nil || s.SimpleStorageService != nil {
			c.note("storage: glassbox writes the reports to local storage only; the cloud buckets are not uploaded to")
		}
		for name, p := range map[string]*IPStoragePath{"google_cloud_storage": s.GoogleCloudStorage, "simple_storage_service": s.SimpleStorageService} {
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

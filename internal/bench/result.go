package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/jsonobject"
)

// object and field are a JSON object whose keys keep their order (so the result reads
// like vLLM's), and one of its keys.
type (
	object = jsonobject.Object
	field  = jsonobject.Field
)

// JSON is the result file. Without a sweep it is `vllm bench serve`'s
// --save-result object, key for key (its metric keys follow
// --percentile-metrics and --metric-percentiles), plus a "server" object
// with the server's view. With a sweep it is the same header, a "sweep"
// list of such objects, one per pass, and the knee.
func (r *Result) JSON(detailed bool) ([]byte, error) {
	o := r.header()
	if r.Sweep == nil {
		o = append(o, r.passFields(r.Passes[0], detailed)...)
		return json.MarshalIndent(o, "", "  ")
	}
	var passes []object
	for _, pt := range r.Sweep.Points {
		po := object{{"strategy", pt.Pass.Name}, {"rate", finite(pt.Rate)}, {"slo_attained", pt.Attained}, {"meets_slos", pt.MeetsSLOs},
			{"request_rate", rateValue(pt.Pass.RequestRate)}, {"max_concurrency", maxConc(pt.Pass.MaxConcurrency)}}
		passes = append(passes, append(po, r.passFields(pt.Pass, detailed)...))
	}
	o = append(o, field{"slo_attainment_required", r.Config.SLOAttained}, field{"knee_request_rate", finite(r.Sweep.KneeRate())},
		field{"sweep", passes})
	return json.MarshalIndent(o, "", "  ")
}

func (r *Result) header() object {
	c := r.Config
	o := object{{"date", r.Date.Format("20060102-150405")}, {"endpoint_type", c.Backend}, {"backend", c.Backend},
		{"label", c.Label}, {"model_id", r.ModelID}, {"tokenizer_id", r.TokenizerID}, {"num_prompts", c.NumPrompts},
		{"request_rate", rateValue(c.RequestRate)}, {"burstiness", rateValue(c.Burstiness)}, {"max_concurrency", maxConc(c.MaxConcurrency)}}
	if c.Ramp != nil {
		o = append(o, field{"ramp_up_strategy", c.Ramp.Strategy}, field{"ramp_up_start_rps", c.Ramp.Start}, field{"ramp_up_end_rps", c.Ramp.End})
	}
	if c.Duration > 0 {
		o = append(o, field{"duration_limit_s", c.Duration.Seconds()})
	}
	return o
}

// passFields are vLLM's result keys for one pass, in vLLM's order.
func (r *Result) passFields(p *Pass, detailed bool) object {
	m := p.Metrics
	var goodput any
	if m.RequestGoodput != nil {
		goodput = *m.RequestGoodput
	}
	o := object{{"duration", m.Duration.Seconds()}, {"completed", m.Completed}, {"failed", m.Failed},
		{"total_input_tokens", m.TotalInput}, {"total_output_tokens", m.TotalOutput},
		{"request_throughput", m.RequestThroughput}, {"request_goodput", goodput},
		{"output_throughput", m.OutputThroughput}, {"total_token_throughput", m.TotalTokenThroughput}}
	lat := make([]float64, len(p.Outputs))
	queue := make([]float64, len(p.Outputs))
	for i, out := range p.Outputs {
		lat[i], queue[i] = out.Latency.Seconds(), out.QueueTime.Seconds()
	}
	if detailed {
		o = append(o, r.detail(p)...)
	}
	o = append(o, field{"latencies", lat}, field{"queue_times", queue},
		field{"max_output_tokens_per_s", m.MaxOutputTokensPerS}, field{"max_concurrent_requests", m.MaxConcurrentRequests}, field{"rtfx", 0.0})
	for _, name := range metricNames {
		d, ok := m.Dists[name]
		if !ok || !selected(r.Config.PercentileMetrics, name) {
			continue
		}
		o = append(o, field{"mean_" + name + "_ms", d.Mean}, field{"median_" + name + "_ms", d.Median}, field{"std_" + name + "_ms", d.Std})
		for _, pc := range d.Percentiles {
			o = append(o, field{"p" + percentileWord(pc.P) + "_" + name + "_ms", pc.Value})
		}
	}
	if len(p.Stages) > 0 {
		var stages []object
		for _, st := range p.Stages {
			stages = append(stages, r.stageObject(st))
		}
		o = append(o, field{"stages", stages})
	}
	if len(p.Turns) > 0 {
		o = append(o, field{"turns", turnObjects(p.Turns)})
	}
	if p.Sessions != nil {
		o = append(o, field{"sessions", sessionsObject(p.Sessions, detailed)})
	}
	if p.Server != nil {
		o = append(o, field{"server", serverObject(p.Server)})
	}
	if p.Chaos != nil {
		o = append(o, field{"chaos", p.Chaos})
	}
	if p.Soak != nil {
		o = append(o, field{"soak", p.Soak})
	}
	return o
}

// stageObject is one stage's metrics under vLLM's keys.
func (r *Result) stageObject(st StageMetrics) object {
	m := st.Metrics
	o := object{{"stage", st.Stage}, {"request_rate", st.Rate}, {"duration", m.Duration.Seconds()}, {"completed", m.Completed},
		{"failed", m.Failed}, {"request_throughput", m.RequestThroughput}, {"output_throughput", m.OutputThroughput}}
	for _, name := range []string{"ttft", "tpot", "itl", "e2el"} {
		d, ok := m.Dists[name]
		if !ok {
			continue
		}
		o = append(o, field{"mean_" + name + "_ms", d.Mean}, field{"median_" + name + "_ms", d.Median})
		for _, pc := range d.Percentiles {
			o = append(o, field{"p" + percentileWord(pc.P) + "_" + name + "_ms", pc.Value})
		}
	}
	return o
}

// detail is --save-detailed's per-request arrays.
func (r *Result) detail(p *Pass) object {
	n := len(p.Outputs)
	in, ttft, start := make([]int, n), make([]float64, n), make([]float64, n)
	itls, texts, errs := make([][]float64, n), make([]string, n), make([]string, n)
	for i, o := range p.Outputs {
		in[i], ttft[i], texts[i], errs[i] = o.PromptLen, o.TTFT.Seconds(), o.GeneratedText, o.Error
		if !o.Start.IsZero() {
			start[i] = o.Start.Sub(p.Start).Seconds()
		}
		itls[i] = make([]float64, len(o.ITL))
		for j, g := range o.ITL {
			itls[i][j] = g.Seconds()
		}
	}
	o := object{{"input_lens", in}, {"output_lens", p.Metrics.OutputLens}, {"ttfts", ttft}, {"itls", itls},
		{"start_times", start}, {"generated_texts", texts}, {"errors", errs}}
	if p.Sessions != nil {
		// glassbox's: which session and turn each request was, and when
		// it was due (start_times are when it went).
		sessions, turns, due := make([]int, n), make([]int, n), make([]float64, n)
		for i, o := range p.Outputs {
			sessions[i], turns[i], due[i] = o.Session, o.Turn, o.Due.Seconds()
		}
		o = append(o, field{"request_sessions", sessions}, field{"request_turns", turns}, field{"due_times", due})
	}
	return o
}

func serverObject(v *ServerView) object {
	hist := func(h ServerHist) object {
		o := object{{"count", h.Count}, {"mean_ms", h.Mean}}
		for _, p := range h.Percentiles {
			o = append(o, field{"p" + percentileWord(p.P) + "_ms", p.Value})
		}
		return o
	}
	var hit any
	if v.PrefixCacheHitRate != nil {
		hit = *v.PrefixCacheHitRate
	}
	return object{{"request_success", v.RequestSuccess}, {"prompt_tokens", v.PromptTokens}, {"generation_tokens", v.GenerationTokens},
		{"ttft", hist(v.TTFT)}, {"queue_time", hist(v.Queue)}, {"e2e_latency", hist(v.E2E)}, {"itl", hist(v.ITL)},
		{"preemptions", v.Preemptions}, {"prefix_cache_queries", v.PrefixCacheQueries}, {"prefix_cache_hits", v.PrefixCacheHits},
		{"prefix_cache_hit_rate", hit}, {"peak_kv_cache_usage", v.PeakKVUsage}, {"peak_waiting", v.PeakWaiting}, {"peak_running", v.PeakRunning},
		{"mean_waiting", v.MeanWaiting}, {"mean_running", v.MeanRunning}}
}

// percentileWord is vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
func percentileWord(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64)
}

func selected(list []string, name string) bool {
	for _, s := range list {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

// rateValue writes +Inf as vLLM does, the string "inf".
func rateValue(f float64) any {
	if math.IsInf(f, 1) {
		return "inf"
	}
	return f
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

func maxConc(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// Save writes the JSON result into dir (created when missing; "" is the
// working directory) as name, or vLLM's default name when name is empty,
// and returns the path written.
func (r *Result) Save(dir, name string, detailed bool) (string, error) {
	b, err := r.JSON(detailed)
	if err != nil {
		return "", err
	}
	if name == "" {
		name = r.DefaultName()
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create result dir: %w", err)
		}
		name = filepath.Join(dir, name)
	}
	if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write result: %w", err)
	}
	return name, nil
}

// DefaultName is vLLM's {label}-{rate}qps[-concurrencyN]-{model}-{date}.json.
func (r *Result) DefaultName() string {
	c := r.Config
	rate := "inf"
	if !math.IsInf(c.RequestRate, 1) {
		rate = strconv.FormatFloat(c.RequestRate, 'f', -1, 64)
	}
	if c.Ramp != nil {
		rate = fmt.Sprintf("ramp-up-%s-%gqps-%g", c.Ramp.Strategy, c.Ramp.Start, c.Ramp.End)
	}
	conc := ""
	if c.MaxConcurrency > 0 {
		conc = fmt.Sprintf("-concurrency%d", c.MaxConcurrency)
	}
	model := r.ModelID[strings.LastIndex(r.ModelID, "/")+1:]
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", c.Label, rate, conc, model, r.Date.Format("20060102-150405"))
}

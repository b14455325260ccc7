package dashboards

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// byModel is the grouping of every per-engine rule: one alert per scraped
// instance and model, whatever the engine count.
const byModel = "job, instance, model_name"

// Severities route alerts in Alertmanager (see alertmanagerConfig).
const (
	severityCritical = "critical"
	severityWarning  = "warning"
)

// alertSpec is one alerting rule together with the series that make it fire
// for one instance ("hot") and stay quiet for another ("cold") in its
// promtool unit test, and the doctor's finding that explains it (a test
// reads the same series as the doctor's window: the finding fires on the
// hot instance alone, at whatever thresholds the Config holds).
type alertSpec struct {
	name, severity string
	// finding is the doctor's finding that explains the alert; "" for an
	// SLO or HTTP alert no finding names (the doctor explains a breach by
	// its capacity and latency findings).
	finding       string
	expr          string
	forDur        time.Duration
	summary, desc string   // templates over $labels.instance and $labels.model_name only
	labels        []string // labels the alert carries besides severity
	series        func(e *testEnv, hot bool) []inputSeries
}

// selector is {job="<Job>"} plus extra matchers.
func (c *Config) selector(extra ...string) string {
	return "{" + strings.Join(append([]string{fmt.Sprintf("job=%q", c.Job)}, extra...), ", ") + "}"
}

func (c *Config) sumRate(name string, extra ...string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s%s[%s]))", byModel, name, c.selector(extra...), promDuration(c.RateWindow))
}

func (c *Config) quantile(q float64, hist string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (%s, le) (rate(%s_bucket%s[%s])))",
		q, byModel, hist, c.selector(), promDuration(c.RateWindow))
}

// alerts lists the alerting rules. Annotations never print $value: the
// promtool tests compare annotations exactly, and the linked dashboard
// shows the numbers. It is one long table on purpose: each rule reads next
// to the series that test it.
func alerts(c *Config) []alertSpec {
	w, f := promDuration(c.RateWindow), promDuration(c.For)
	on := "{{ $labels.model_name }} on {{ $labels.instance }}"
	model := []string{"job", "instance", "model_name"}
	return []alertSpec{{
		name: "GlassboxHighPreemptionRate", finding: "preemption-storm", severity: severityWarning, forDur: c.For, labels: model,
		expr:    fmt.Sprintf("%s > %g", c.sumRate(metricspec.NumPreemptions), c.Thresholds.PreemptionRate),
		summary: fmt.Sprintf("%s preempts more than %g requests/s", on, c.Thresholds.PreemptionRate),
		desc:    fmt.Sprintf("Over %s the engine preempted more than %g requests per second for %s: the KV cache is too small for the load, and preempted requests recompute their prefill.", w, c.Thresholds.PreemptionRate, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			return e.counter(metricspec.NumPreemptions, e.pick(hot, 1.5, 0.5)*c.Thresholds.PreemptionRate)
		},
	}, {
		name: "GlassboxKVCacheNearlyFull", finding: "kv-capacity-bound", severity: severityWarning, forDur: c.For, labels: model,
		expr: fmt.Sprintf("max by (%s) (avg_over_time(%s%s[%s])) > %g",
			byModel, metricspec.KVCacheUsagePerc, c.selector(), w, c.Thresholds.KVWatermark),
		summary: fmt.Sprintf("KV cache of %s above %g%% for %s", on, 100*c.Thresholds.KVWatermark, f),
		desc:    fmt.Sprintf("KV-cache usage averaged over %s has stayed above %g for %s. New requests wait for blocks and running ones get preempted.", w, c.Thresholds.KVWatermark, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			// Requests wait on both: the cache, not the load, tells them apart.
			return append(e.gauge(metricspec.KVCacheUsagePerc, e.pick(hot, (1+c.Thresholds.KVWatermark)/2, c.Thresholds.KVWatermark/2)),
				e.gauge(metricspec.NumRequestsWaiting, 4)...)
		},
	}, {
		name: "GlassboxHighE2ELatency", severity: severityWarning, forDur: c.For, labels: model,
		expr:    fmt.Sprintf("%s > %g", c.quantile(0.95, metricspec.E2ERequestLatency), c.E2EP95Seconds),
		summary: fmt.Sprintf("p95 end-to-end latency of %s above %gs", on, c.E2EP95Seconds),
		desc:    fmt.Sprintf("The 95th percentile of end-to-end request latency over %s has been above %gs for %s.", w, c.E2EP95Seconds, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			return e.histogram(metricspec.E2ERequestLatency, c.E2EP95Seconds, hot)
		},
	}, {
		name: "GlassboxTTFTAboveSLO", severity: severityWarning, forDur: c.For, labels: model,
		expr:    fmt.Sprintf("%s > %g", c.quantile(0.99, metricspec.TimeToFirstToken), c.TTFTSLOSeconds),
		summary: fmt.Sprintf("p99 time to first token of %s above its %gs SLO", on, c.TTFTSLOSeconds),
		desc:    fmt.Sprintf("The 99th percentile of time to first token over %s has been above the %gs SLO for %s.", w, c.TTFTSLOSeconds, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			return e.histogram(metricspec.TimeToFirstToken, c.TTFTSLOSeconds, hot)
		},
	}, {
		name: "GlassboxQueueTimeDominates", finding: "queueing-dominates", severity: severityWarning, forDur: c.For, labels: model,
		expr: fmt.Sprintf("%s / %s > %g",
			c.sumRate(metricspec.RequestQueueTime+"_sum"), c.sumRate(metricspec.E2ERequestLatency+"_sum"), c.Thresholds.QueueShare),
		summary: fmt.Sprintf("requests to %s spend over %g%% of their time queued", on, 100*c.Thresholds.QueueShare),
		desc:    fmt.Sprintf("Over %s, queueing took more than %g of all end-to-end request time for %s: the engine is saturated (compute or KV), not slow.", w, c.Thresholds.QueueShare, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			return append(e.counter(metricspec.E2ERequestLatency+"_sum", 10),
				e.counter(metricspec.RequestQueueTime+"_sum", 10*e.pick(hot, (1+c.Thresholds.QueueShare)/2, c.Thresholds.QueueShare/2))...)
		},
	}, {
		name: "GlassboxLoadImbalance", finding: "load-imbalance", severity: severityWarning, forDur: c.For, labels: model,
		expr:    c.imbalanceExpr(),
		summary: fmt.Sprintf("%s queues more than %g× its fleet's mean", on, c.Thresholds.ImbalanceRatio),
		desc: fmt.Sprintf("Averaged over %s, requests waiting on this replica have exceeded %g times the mean of the replicas serving the model, and %g requests, for %s: "+
			"the router sends it more than its share (affinity, a stale endpoint list, a Service without a picker), or it is slower than its peers.", w, c.Thresholds.ImbalanceRatio, c.Thresholds.ImbalanceMinWaiting, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			// Two replicas: the hot one queues, the cold one does not, so
			// the mean is half the hot queue.
			return e.gauge(metricspec.NumRequestsWaiting, e.pick(hot, 2*c.Thresholds.ImbalanceMinWaiting+4, 0))
		},
	}, {
		name: "GlassboxHighAbortRate", finding: "client-timeouts", severity: severityWarning, forDur: c.For, labels: model,
		expr: fmt.Sprintf("%s / %s > %g",
			c.sumRate(metricspec.RequestSuccess, `finished_reason="abort"`), c.sumRate(metricspec.RequestSuccess), c.Thresholds.AbortShare),
		summary: fmt.Sprintf("over %g%% of requests to %s are aborted", 100*c.Thresholds.AbortShare, on),
		desc:    fmt.Sprintf("Over %s more than %g of finished requests ended with finished_reason=\"abort\" for %s: clients disconnect or time out before their answer is complete.", w, c.Thresholds.AbortShare, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			abort := 10 * e.pick(hot, (1+c.Thresholds.AbortShare)/2, c.Thresholds.AbortShare/2)
			return append(e.counter(metricspec.RequestSuccess, abort, "finished_reason", "abort"),
				e.counter(metricspec.RequestSuccess, 10-abort, "finished_reason", "stop")...)
		},
	}, {
		// Without drafts the ratio is 0/0, which no comparison holds: the
		// alert is quiet where nothing speculates, or nothing is drafted.
		name: "GlassboxSpecAcceptanceCollapsed", finding: "speculation-costly", severity: severityWarning, forDur: c.For, labels: model,
		expr: fmt.Sprintf("%s / %s < %g",
			c.sumRate(metricspec.SpecDecodeAcceptedTokens), c.sumRate(metricspec.SpecDecodeDraftTokens), c.Thresholds.SpecAcceptanceLow),
		summary: fmt.Sprintf("speculative decoding of %s accepts under %g%% of its drafts", on, 100*c.Thresholds.SpecAcceptanceLow),
		desc: fmt.Sprintf("Over %s fewer than %g of the draft tokens were accepted for %s while drafts were being made: each verify pass scores drafts that are thrown away, "+
			"so speculation buys little and, at wide batches, costs throughput.", w, c.Thresholds.SpecAcceptanceLow, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			// Verify passes of four drafts each.
			return append(append(e.counter(metricspec.SpecDecodeDraftTokens, 10), e.counter(metricspec.SpecDecodeDrafts, 10.0/4)...),
				e.counter(metricspec.SpecDecodeAcceptedTokens, 10*e.pick(hot, c.Thresholds.SpecAcceptanceLow/2, (1+c.Thresholds.SpecAcceptanceLow)/2))...)
		},
	}, {
		name: "GlassboxHighErrorRate", severity: severityCritical, forDur: c.For, labels: []string{"job", "instance"},
		expr: fmt.Sprintf("sum by (job, instance) (rate(%s%s[%s])) / sum by (job, instance) (rate(%s%s[%s])) > %g",
			metricspec.HTTPRequests, c.selector(`status="5xx"`), w, metricspec.HTTPRequests, c.selector(), w, c.ErrorRatio),
		summary: fmt.Sprintf("over %g%% of HTTP responses from {{ $labels.instance }} are 5xx", 100*c.ErrorRatio),
		desc:    fmt.Sprintf("Over %s more than %g of HTTP responses were server errors for %s (503 is overload: the waiting queue is full).", w, c.ErrorRatio, f),
		series: func(e *testEnv, hot bool) []inputSeries {
			errs := 10 * e.pick(hot, (1+c.ErrorRatio)/2, c.ErrorRatio/2)
			return append(e.httpCounter("5xx", errs), e.httpCounter("2xx", 10-errs)...)
		},
	}, {
		name: "GlassboxEngineStalled", finding: "metrics-stale", severity: severityCritical, forDur: c.ShortFor, labels: model,
		expr: fmt.Sprintf("max by (%s) (%s%s) > 0 and on (%s) sum by (%s) (increase(%s%s[%s])) == 0",
			byModel, metricspec.NumRequestsRunning, c.selector(), byModel, byModel, metricspec.GenerationTokens, c.selector(), promDuration(c.StallWindow)),
		summary: fmt.Sprintf("engine of %s is stalled", on),
		desc:    fmt.Sprintf("Requests are running but no token was generated for %s: the engine loop or the executor is stuck.", promDuration(c.StallWindow)),
		series: func(e *testEnv, hot bool) []inputSeries {
			return append(e.gauge(metricspec.NumRequestsRunning, 3), e.counter(metricspec.GenerationTokens, e.pick(hot, 0, 50))...)
		},
	}, {
		name: "GlassboxEngineDead", finding: "engine-dead", severity: severityCritical, forDur: c.ShortFor, labels: model,
		// Over the rate window, not the last scrape: a liveness probe on
		// /health restarts the process about a minute after the death (the
		// chart's six failures ten seconds apart), and the new process
		// reads 0 before a for: of a minute has passed.
		expr:    fmt.Sprintf("max by (%s) (max_over_time(%s%s[%s])) == 1", byModel, metricspec.EngineDead, c.selector(), promDuration(c.RateWindow)),
		summary: fmt.Sprintf("engine of %s is dead", on),
		desc:    "The engine stopped (glassbox_engine_dead's reason says why: a sticky device fault, a step past --step-timeout, or a panicking executor): every request fails with 503 and /health answers 503 until the process restarts.",
		series: func(e *testEnv, hot bool) []inputSeries {
			var out []inputSeries
			for _, r := range metricspec.EngineDeadReasons {
				v := 0.0
				if hot && r == "executor_error" {
					v = 1
				}
				out = append(out, inputSeries{e.engineSeries(metricspec.EngineDead, "reason", r), fmt.Sprintf("%s+0x%d", num(v), e.steps)})
			}
			return out
		},
	}, {
		name: "GlassboxTargetDown", finding: "metrics-stale", severity: severityCritical, forDur: c.ShortFor, labels: []string{"job", "instance"},
		expr:    fmt.Sprintf("up%s == 0", c.selector()),
		summary: "Prometheus cannot scrape glassbox on {{ $labels.instance }}",
		desc:    fmt.Sprintf("The scrape of {{ $labels.instance }} (job %s) has failed for %s: the server is down, unreachable, or /metrics is refused (auth).", c.Job, promDuration(c.ShortFor)),
		series:  func(e *testEnv, hot bool) []inputSeries { return e.up(e.pick(hot, 0, 1)) },
	}}
}

// imbalanceExpr selects the replicas whose mean queue is ImbalanceRatio
// times the mean over all replicas of the same job and model, and more than
// ImbalanceMinWaiting requests. A lone replica is its own mean and never
// fires.
func (c *Config) imbalanceExpr() string {
	waiting := fmt.Sprintf("avg_over_time(%s%s[%s])", metricspec.NumRequestsWaiting, c.selector(), promDuration(c.RateWindow))
	each := fmt.Sprintf("max by (%s) (%s)", byModel, waiting)
	return fmt.Sprintf("%s > on (job, model_name) group_left () (%g * avg by (job, model_name) (%s)) and %s > %g",
		each, c.Thresholds.ImbalanceRatio, waiting, each, c.Thresholds.ImbalanceMinWaiting)
}

// recordingRule is one record: name = expr, with the promtool test input
// and the expected value.
type recordingRule struct {
	record, expr string
	series       func(e *testEnv) []inputSeries
	want         float64
}

// recordingRules precompute the series the dashboards and a long-term store
// want cheaply: token throughput, latency quantiles and utilisation.
func recordingRules(c *Config) []recordingRule {
	w := promDuration(c.RateWindow)
	prefix := "job_instance_model:"
	out := []recordingRule{
		{record: prefix + "vllm_generation_tokens:rate" + w, expr: c.sumRate(metricspec.GenerationTokens), want: 100,
			series: func(e *testEnv) []inputSeries { return e.counter(metricspec.GenerationTokens, 100) }},
		{record: prefix + "vllm_prompt_tokens:rate" + w, expr: c.sumRate(metricspec.PromptTokens), want: 400,
			series: func(e *testEnv) []inputSeries { return e.counter(metricspec.PromptTokens, 400) }},
		{record: prefix + "vllm_num_preemptions:rate" + w, expr: c.sumRate(metricspec.NumPreemptions), want: 0.25,
			series: func(e *testEnv) []inputSeries { return e.counter(metricspec.NumPreemptions, 0.25) }},
		{record: prefix + "vllm_kv_cache_usage_perc:avg" + w,
			expr: fmt.Sprintf("max by (%s) (avg_over_time(%s%s[%s]))", byModel, metricspec.KVCacheUsagePerc, c.selector(), w), want: 0.75,
			series: func(e *testEnv) []inputSeries { return e.gauge(metricspec.KVCacheUsagePerc, 0.75) }},
		{record: prefix + "glassbox_executor_busy:ratio_rate" + w, expr: c.sumRate(metricspec.ExecutorBusySeconds), want: 0.5,
			series: func(e *testEnv) []inputSeries { return e.counter(metricspec.ExecutorBusySeconds, 0.5) }},
		{record: prefix + "vllm_mfu:ratio_rate" + w,
			expr: fmt.Sprintf("%s / max by (%s) (%s%s)", c.sumRate(metricspec.EstimatedFLOPsPerGPU), byModel, metricspec.ExecutorPeakFLOPs, c.selector()),
			want: 0.25,
			series: func(e *testEnv) []inputSeries {
				return append(e.counter(metricspec.EstimatedFLOPsPerGPU, 100e12), e.gauge(metricspec.ExecutorPeakFLOPs, 400e12)...)
			}},
		{record: prefix + "vllm_mbu:ratio_rate" + w,
			expr: fmt.Sprintf("(%s + %s) / max by (%s) (%s%s)", c.sumRate(metricspec.EstimatedReadBytesPerGPU), c.sumRate(metricspec.EstimatedWriteBytesPerGPU),
				byModel, metricspec.ExecutorPeakMemBandwidth, c.selector()),
			want: 0.5,
			series: func(e *testEnv) []inputSeries {
				return append(append(e.counter(metricspec.EstimatedReadBytesPerGPU, 1.5e12), e.counter(metricspec.EstimatedWriteBytesPerGPU, 0.5e12)...),
					e.gauge(metricspec.ExecutorPeakMemBandwidth, 4e12)...)
			}},
	}
	for _, q := range []struct {
		hist string
		name string
		qs   []float64
	}{
		{metricspec.TimeToFirstToken, "vllm_time_to_first_token_seconds", []float64{0.5, 0.99}},
		{metricspec.InterTokenLatency, "vllm_inter_token_latency_seconds", []float64{0.5, 0.99}},
		{metricspec.E2ERequestLatency, "vllm_e2e_request_latency_seconds", []float64{0.5, 0.95, 0.99}},
	} {
		for _, qv := range q.qs {
			hist := q.hist
			out = append(out, recordingRule{
				record: fmt.Sprintf("%s%s:p%s_rate%s", prefix, q.name, strconv.FormatFloat(math.Round(1000*qv)/10, 'f', -1, 64), w), expr: c.quantile(qv, hist),
				// Every observation in (1, 2]: quantile q interpolates to 1+q.
				want:   1 + qv,
				series: func(e *testEnv) []inputSeries { return e.histogram(hist, 1, true) },
			})
		}
	}
	return out
}

// Rule-file YAML, in the field order Prometheus documents.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// runbookURL is the link to an alert's section of docs/runbooks.md; the
// anchor is the heading GitHub derives from "## <AlertName>".
func (c *Config) runbookURL(alert string) string {
	return c.RunbookURL + "#" + strings.ToLower(alert)
}

func (a *alertSpec) annotations(c *Config) map[string]string {
	return map[string]string{"summary": a.summary, "description": a.desc, "runbook_url": c.runbookURL(a.name)}
}

// RulesYAML renders the recording and alerting rules file.
func RulesYAML(c Config) ([]byte, error) {
	rec := ruleGroup{Name: "glassbox.recording"}
	for _, r := range recordingRules(&c) {
		rec.Rules = append(rec.Rules, rule{Record: r.record, Expr: r.expr})
	}
	al := ruleGroup{Name: "glassbox.alerts"}
	for _, a := range alerts(&c) {
		al.Rules = append(al.Rules, rule{
			Alert: a.name, Expr: a.expr, For: promDuration(a.forDur),
			Labels: map[string]string{"severity": a.severity}, Annotations: a.annotations(&c),
		})
	}
	return marshalYAML("# Generated by 'glassbox monitoring export'; do not edit.\n", ruleFile{Groups: []ruleGroup{rec, al}})
}

// AlertNames lists the alerting rules, for docs and tests.
func AlertNames(c Config) []string {
	var out []string
	for _, a := range alerts(&c) {
		out = append(out, a.name)
	}
	return out
}

// marshalYAML writes v with a header comment and two-space indentation.
func marshalYAML(header string, v any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return b.Bytes(), nil
}

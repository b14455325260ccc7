package metrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// dashboardQuery is one PromQL expression found in a dashboard file.
type dashboardQuery struct {
	file, expr string
}

// TestDashboardsQueryExportedMetrics parses every query of vLLM's
// dashboards in ../shared/compat with the real PromQL parser and checks
// that each vllm: series they select, and each label they filter or group
// by, is one glassbox exports.
func TestDashboardsQueryExportedMetrics(t *testing.T) {
	// Names that current vLLM does not export either, so no engine can.
	checkDashboards(t, filepath.Join(sharedDir(t), "compat"), testConfig(), map[string]string{
		"vllm:gpu_prefix_cache_hits_total":    "removed in vLLM 0.12 (now vllm:prefix_cache_hits_total)",
		"vllm:gpu_prefix_cache_queries_total": "removed in vLLM 0.12 (now vllm:prefix_cache_queries_total)",
		"vllm:healthy_pods_total":             "production-stack router metric",
		"vllm:current_qps":                    "production-stack router metric",
	})
}

// TestOfficialDashboardsQueryExportedMetrics: the same over vLLM's newest
// official dashboards (../shared/compat/vllm-official), against glassbox
// with every optional family on (speculation, LoRA, an offload tier,
// --kv-cache-metrics), as their collapsed rows need. What they select and
// glassbox has not, by prefix: the features it lacks (docs/monitoring.md
// names them).
func TestOfficialDashboardsQueryExportedMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.NumSpeculativeTokens, cfg.MaxLoRAs, cfg.Offload, cfg.KVCacheMetrics = 3, 2, true, true
	checkDashboards(t, filepath.Join(sharedDir(t), "compat", "vllm-official"), cfg, map[string]string{
		"vllm:nixl_":                           "NixlConnector's KV transfers between instances: glassbox has no KV connector across instances",
		"vllm:sleep_mode_operation_":           "sleep mode: glassbox never sleeps (vllm:engine_sleep_state stays awake)",
		"vllm:rl_weight_update_operation_":     "RL weight updates: glassbox does not reload weights while serving",
		"vllm:simple_kv_offload_":              "SimpleCPUOffloadConnector: glassbox offloads as the OffloadingConnector (--kv-offloading-backend native) does",
		"vllm:kv_offload_stores_skipped_total": "registered by vLLM only with the connector's store_threshold ≥ 2, which glassbox does not take",
	})
}

// checkDashboards checks every query of the dashboards in dir against what
// glassbox exports with cfg; absent lists the names (or name prefixes) no
// glassbox exports, each with why, and each must be queried.
func checkDashboards(t *testing.T, dir string, cfg Config, absent map[string]string) {
	queries := dashboardQueries(t, dir)
	series, familyLabels := exportedSeries(t, cfg)
	// Labels Prometheus' service discovery adds to every scraped series.
	targetLabels := []string{"job", "instance", "namespace", "service", "pod", "endpoint", "container", "server"}
	isAbsent := func(name string) (string, bool) {
		for k := range absent {
			if name == k || strings.HasSuffix(k, "_") && strings.HasPrefix(name, k) {
				return k, true
			}
		}
		return "", false
	}

	p := parser.NewParser(parser.Options{})
	seenAbsent := map[string]bool{}
	checked := 0
	for _, q := range queries {
		expr, err := p.ParseExpr(substituteGrafanaVars(q.expr))
		if err != nil {
			t.Errorf("%s: parse %q: %v", q.file, q.expr, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.VectorSelector:
				name := selectorName(n)
				if !strings.HasPrefix(name, "vllm:") {
					return nil
				}
				if k, ok := isAbsent(name); ok {
					seenAbsent[k] = true
					return nil
				}
				checked++
				have, ok := series[name]
				if !ok {
					t.Errorf("%s: query %q selects %s, which glassbox does not export", q.file, q.expr, name)
					return nil
				}
				for _, m := range n.LabelMatchers {
					if m.Name != labels.MetricName && !slices.Contains(have, m.Name) && !slices.Contains(targetLabels, m.Name) {
						t.Errorf("%s: query %q filters %s on label %q, which it does not carry", q.file, q.expr, name, m.Name)
					}
				}
			case *parser.AggregateExpr:
				if allAbsent(n.Expr, isAbsent) {
					return nil // grouped by the absent family's labels
				}
				for _, l := range n.Grouping {
					if !familyLabels[l] && !slices.Contains(targetLabels, l) {
						t.Errorf("%s: query %q groups by %q, which no exported family carries", q.file, q.expr, l)
					}
				}
			}
			return nil
		})
	}
	if checked < 50 {
		t.Errorf("only %d vllm: selectors checked in %d queries: is the dashboard walk broken?", checked, len(queries))
	}
	for name, why := range absent {
		if !seenAbsent[name] {
			t.Errorf("%s is listed as expected-absent (%s) but no dashboard queries it: drop it from the list", name, why)
		}
	}
}

// allAbsent reports whether every series e selects is an absent one.
func allAbsent(e parser.Expr, isAbsent func(string) (string, bool)) bool {
	all, seen := true, false
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			seen = true
			if _, ok := isAbsent(selectorName(vs)); !ok {
				all = false
			}
		}
		return nil
	})
	return seen && all
}

// exportedSeries returns each sample name glassbox writes (histograms as
// _bucket, _sum and _count) with its label names, and the union of labels.
func exportedSeries(t *testing.T, cfg Config) (map[string][]string, map[string]bool) {
	t.Helper()
	m, reg := newTestMetrics(t, cfg)
	if cfg.MaxLoRAs > 0 {
		m.ObserveStep(&engine.StepEvent{}) // lora_requests_info has its series from the first step
	}
	// The HTTP vectors have their children from the first request.
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	series := map[string][]string{}
	all := map[string]bool{}
	for name, mf := range parse(t, scrape(t, reg)) {
		var names []string
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if !slices.Contains(names, lp.GetName()) {
					names = append(names, lp.GetName())
				}
				all[lp.GetName()] = true
			}
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			series[name] = names
			continue
		}
		series[name+"_sum"], series[name+"_count"] = names, names
		series[name+"_bucket"] = append(slices.Clone(names), "le")
		all["le"] = true
	}
	return series, all
}

func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

var (
	grafanaSecondsVar = regexp.MustCompile(`\$\{?__\w+_m?s\}?`)
	grafanaRangeVar   = regexp.MustCompile(`\[\s*(?:\$\{?\w+(?::\w+)?\}?|\[\[\w+\]\])\s*\]`)
	grafanaVar        = regexp.MustCompile(`\$\{[^}]*\}|\$\w+|\[\[\w+(?::\w+)?\]\]`)
)

// substituteGrafanaVars makes a dashboard query valid PromQL: range
// variables ([$__rate_interval], [$__range]) become [5m], numeric ones
// ($__range_s) a number, and any other variable ($model_name, ${x:regex},
// [[x]]) a plain word, as they only appear inside label values here.
func substituteGrafanaVars(q string) string {
	q = grafanaSecondsVar.ReplaceAllString(q, "60")
	q = grafanaRangeVar.ReplaceAllString(q, "[5m]")
	return grafanaVar.ReplaceAllString(q, "x")
}

// dashboardQueries collects the queries of every Grafana (JSON) and Perses
// (YAML) dashboard in dir; other files (scrape configs, compose files) are
// skipped.
func dashboardQueries(t *testing.T, dir string) []dashboardQuery {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	dashboards := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		var doc map[string]any
		switch filepath.Ext(e.Name()) {
		case ".json":
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if doc["panels"] == nil {
				continue
			}
			var exprs []string
			grafanaExprs(doc, &exprs)
			for _, x := range exprs {
				out = append(out, dashboardQuery{e.Name(), x})
			}
		case ".yaml", ".yml":
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(raw, &doc); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if k, _ := doc["kind"].(string); k != "PersesDashboard" && k != "Dashboard" {
				continue
			}
			var exprs []string
			persesExprs(doc, &exprs)
			for _, x := range exprs {
				out = append(out, dashboardQuery{e.Name(), x})
			}
		default:
			continue
		}
		dashboards++
	}
	if dashboards == 0 {
		t.Fatalf("no dashboard found in %s", dir)
	}
	return out
}

// grafanaExprs collects panel target expressions ("expr") and the PromQL
// inside query-type template variables.
func grafanaExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if x, ok := v["expr"].(string); ok && strings.TrimSpace(x) != "" {
			*out = append(*out, x)
		}
		if v["type"] == "query" {
			q := v["query"]
			if m, ok := q.(map[string]any); ok {
				q = m["query"]
			}
			if s, ok := q.(string); ok {
				if x, ok := templatingExpr(s); ok {
					*out = append(*out, x)
				}
			}
		}
		for k, c := range v {
			if k != "expr" {
				grafanaExprs(c, out)
			}
		}
	case []any:
		for _, c := range v {
			grafanaExprs(c, out)
		}
	}
}

var (
	labelValuesCall = regexp.MustCompile(`^label_values\((.*)\)$`)
	queryResultCall = regexp.MustCompile(`^query_result\((.*)\)$`)
)

// templatingExpr extracts the PromQL of a Grafana variable query:
// label_values(selector, label) → selector, query_result(expr) → expr;
// label_values(label), label_names() and metrics() select no series.
func templatingExpr(q string) (string, bool) {
	q = strings.TrimSpace(q)
	if m := labelValuesCall.FindStringSubmatch(q); m != nil {
		i := strings.LastIndexByte(m[1], ',')
		if i < 0 {
			return "", false
		}
		return m[1][:i], true
	}
	if m := queryResultCall.FindStringSubmatch(q); m != nil {
		return m[1], true
	}
	if strings.HasPrefix(q, "label_names(") || strings.HasPrefix(q, "metrics(") || q == "" {
		return "", false
	}
	return q, true
}

// persesExprs collects the PromQL of Perses Prometheus plugins: time-series
// queries, PromQL variables and label-variable matchers.
func persesExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		spec, _ := v["spec"].(map[string]any)
		switch v["kind"] {
		case "PrometheusTimeSeriesQuery":
			if s, ok := spec["query"].(string); ok {
				*out = append(*out, s)
			}
		case "PrometheusPromQLVariable":
			if s, ok := spec["expr"].(string); ok {
				*out = append(*out, s)
			}
		case "PrometheusLabelValuesVariable", "PrometheusLabelNamesVariable":
			if ms, ok := spec["matchers"].([]any); ok {
				for _, m := range ms {
					if s, ok := m.(string); ok {
						*out = append(*out, s)
					}
				}
			}
		}
		for _, c := range v {
			persesExprs(c, out)
		}
	case []any:
		for _, c := range v {
			persesExprs(c, out)
		}
	}
}

func TestSubstituteGrafanaVars(t *testing.T) {
	tests := []struct{ in, want string }{
		{`rate(x{model_name="$model_name"}[$__rate_interval])`, `rate(x{model_name="x"}[5m])`},
		{`rate(x[${__range}])`, `rate(x[5m])`},
		{`increase(x{a=~"${var:regex}"}[$__interval]) / $__range_s`, `increase(x{a=~"x"}[5m]) / 60`},
		{`x{a="[[legacy]]"}`, `x{a="x"}`},
	}
	for _, tt := range tests {
		if got := substituteGrafanaVars(tt.in); got != tt.want {
			t.Errorf("substituteGrafanaVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTemplatingExpr(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"label_values(model_name)", "", false},
		{"label_values(vllm:generation_tokens_total,model_name)", "vllm:generation_tokens_total", true},
		{`label_values(up{job="a,b"}, instance)`, `up{job="a,b"}`, true},
		{"query_result(sum(up))", "sum(up)", true},
		{"label_names()", "", false},
	}
	for _, tt := range tests {
		got, ok := templatingExpr(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("templatingExpr(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

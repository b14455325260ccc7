package dashboards

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

	"github.com/google/go-cmp/cmp"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// exported is what a glassbox scrape carries: each sample name with its
// label names, and the le values of each histogram.
type exported struct {
	labels map[string][]string
	les    map[string][]string // bucket series name → le values
}

func exportedSeries(t *testing.T) exported {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(metrics.Config{
		ModelName: "m", Engine: "0", MaxModelLen: 4096,
		Cache: metricspec.CacheConfig{BlockSize: 16}, SchedulerInfo: map[string]string{"max_num_seqs": "8"},
		ExecutorInfo: map[string]string{"executor": "sim"}, PeakFLOPs: 1e15, PeakBandwidth: 4e12,
		NumSpeculativeTokens: 4, // the spec-decode families exist only with --speculative-config
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ex := exported{labels: map[string][]string{}, les: map[string][]string{}}
	for _, mf := range mfs {
		var names []string
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if !slices.Contains(names, lp.GetName()) {
					names = append(names, lp.GetName())
				}
			}
		}
		name := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			ex.labels[name+"_sum"], ex.labels[name+"_count"] = names, names
			ex.labels[name+"_bucket"] = append(slices.Clone(names), "le")
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				ex.les[name+"_bucket"] = append(ex.les[name+"_bucket"], metricspec.BucketLabel(b.GetUpperBound()))
			}
			ex.les[name+"_bucket"] = append(ex.les[name+"_bucket"], "+Inf")
		case dto.MetricType_SUMMARY:
			ex.labels[name+"_sum"], ex.labels[name+"_count"] = names, names
			ex.labels[name] = append(slices.Clone(names), "quantile")
		default:
			ex.labels[name] = names
		}
	}
	// The simulated GPU's dcgm-exporter, as serve --sim-dcgm-port serves it.
	hw, _ := profiles.LookupHardware("h100")
	exp, err := dcgm.New(dcgm.Config{Hardware: hw, GPUs: 2, GPUMemoryUtilization: 0.9, Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := exp.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	dcgmFams, err := parser.TextToMetricFamilies(strings.NewReader(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	for name, mf := range dcgmFams {
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			ex.labels[name] = append(ex.labels[name], lp.GetName())
		}
	}
	// Prometheus adds these to every scraped series, and writes up itself.
	for n := range ex.labels {
		ex.labels[n] = append(ex.labels[n], "job", "instance")
	}
	ex.labels["up"] = []string{"job", "instance"}
	return ex
}

var grafanaVar = regexp.MustCompile(`\[\$__\w+\]|\$\{?\w+\}?`)

// promQL makes a panel query valid PromQL: range variables become [5m],
// other variables (only ever inside label values here) a word.
func promQL(q string) string {
	return grafanaVar.ReplaceAllStringFunc(q, func(v string) string {
		if strings.HasPrefix(v, "[") {
			return "[5m]"
		}
		return "x"
	})
}

// panelQueries returns every target expression of a generated dashboard,
// by panel title.
func panelQueries(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range doc.Panels {
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

func generated(t *testing.T, c Config) map[string][]byte {
	t.Helper()
	files, err := Files(c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f.Path] = f.Data
	}
	return out
}

// ruleExprs returns the expression of every rule, and the recorded names.
func ruleExprs(t *testing.T, raw []byte) (map[string]string, []string) {
	t.Helper()
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	var recorded []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			exprs[r.Record+r.Alert] = r.Expr
			if r.Record != "" {
				recorded = append(recorded, r.Record)
			}
		}
	}
	return exprs, recorded
}

// TestQueriesSelectExportedMetrics parses every panel query and rule with
// Prometheus' parser: each series selected must be one glassbox exports
// (or a recording rule's output), filtered only on labels it carries, and
// a bucket selected by le must be one of the histogram's bounds.
func TestQueriesSelectExportedMetrics(t *testing.T) {
	ex := exportedSeries(t)
	files := generated(t, Default())
	queries := map[string]string{} // where → expr
	for _, path := range DashboardPaths() {
		for title, exprs := range panelQueries(t, files[path]) {
			for i, e := range exprs {
				queries[path+": "+title+" #"+string(rune('A'+i))] = e
			}
		}
	}
	exprs, recorded := ruleExprs(t, files[RulesPath])
	for name, e := range exprs {
		queries["rule "+name] = e
	}
	for _, v := range variables() {
		vm, err := v.Build()
		if err != nil {
			t.Fatal(err)
		}
		if vm.Query != nil && vm.Query.String != nil && strings.HasPrefix(*vm.Query.String, "label_values(") {
			s := strings.TrimSuffix(strings.TrimPrefix(*vm.Query.String, "label_values("), ")")
			queries["variable "+vm.Name] = s[:strings.LastIndexByte(s, ',')]
		}
	}
	p := parser.NewParser(parser.Options{})
	selected := 0
	for where, q := range queries {
		expr, err := p.ParseExpr(promQL(q))
		if err != nil {
			t.Errorf("%s: parse %q: %v", where, q, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			selected++
			if slices.Contains(recorded, vs.Name) {
				return nil
			}
			have, ok := ex.labels[vs.Name]
			if !ok {
				t.Errorf("%s: %q selects %s, which glassbox does not export", where, q, vs.Name)
				return nil
			}
			for _, m := range vs.LabelMatchers {
				switch {
				case m.Name == labels.MetricName:
				case !slices.Contains(have, m.Name):
					t.Errorf("%s: %q filters %s on label %q, which it does not carry", where, q, vs.Name, m.Name)
				case m.Name == "le" && !slices.Contains(ex.les[vs.Name], m.Value):
					t.Errorf("%s: %q selects bucket le=%q of %s, which has only %v", where, q, m.Value, vs.Name, ex.les[vs.Name])
				}
			}
			return nil
		})
	}
	if len(queries) < 40 || selected < 60 {
		t.Errorf("only %d queries with %d selectors checked: is the walk broken?", len(queries), selected)
	}
}

// TestDashboardsRoundTrip decodes the generated JSON with the SDK's own
// types, as Grafana tooling would, and checks what every panel needs.
func TestDashboardsRoundTrip(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	files := generated(t, Default())
	for _, path := range DashboardPaths() {
		var db dashboard.Dashboard
		if err := json.Unmarshal(files[path], &db); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var vars []string
		for _, v := range db.Templating.List {
			vars = append(vars, v.Name)
		}
		if diff := cmp.Diff([]string{"datasource", "instance", "model_name"}, vars); diff != "" {
			t.Errorf("%s: template variables (-want +got):\n%s", path, diff)
		}
		panels := 0
		for _, p := range db.Panels {
			if p.Panel == nil {
				continue
			}
			panels++
			if len(p.Panel.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", path, *p.Panel.Title)
			}
			if p.Panel.Datasource == nil || *p.Panel.Datasource.Uid != "${datasource}" {
				t.Errorf("%s: panel %q does not use the datasource variable", path, *p.Panel.Title)
			}
		}
		if panels < 8 {
			t.Errorf("%s: %d panels", path, panels)
		}
	}
}

// TestDiagnosisOverlays checks the two views the diagnosis dashboard exists
// for: each overlay queries all its signals, and the KV watermark is drawn.
func TestDiagnosisOverlays(t *testing.T) {
	c := Default()
	c.Thresholds.KVWatermark = 0.85
	files := generated(t, c)
	qs := panelQueries(t, files[DiagnosisPath])
	for title, want := range map[string][]string{
		"Generation throughput vs GPU utilisation": {
			"rate(" + metricspec.GenerationTokens, metricspec.DCGMGREngineActive + `{instance=~"$instance"}) or `,
			"rate(" + metricspec.ExecutorBusySeconds, metricspec.DCGMTensorActive, metricspec.DCGMDRAMActive,
			metricspec.EstimatedFLOPsPerGPU, metricspec.ExecutorPeakFLOPs,
			metricspec.EstimatedReadBytesPerGPU, metricspec.ExecutorPeakMemBandwidth,
		},
		"Queue depth vs KV-cache watermark": {metricspec.NumRequestsWaiting, metricspec.KVCacheUsagePerc, "rate(" + metricspec.NumPreemptions},
	} {
		all := strings.Join(qs[title], "\n")
		if all == "" {
			t.Errorf("no panel %q", title)
		}
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("panel %q does not query %s", title, w)
			}
		}
	}
	if !strings.Contains(string(files[DiagnosisPath]), `"value": 0.85`) {
		t.Error("the diagnosis dashboard does not draw the configured KV watermark")
	}
}

// TestPanelsLinkEveryRunbook checks that each alert's runbook is linked
// from some panel and each link points at an alert.
func TestPanelsLinkEveryRunbook(t *testing.T) {
	c := Default()
	files := generated(t, c)
	link := regexp.MustCompile(regexp.QuoteMeta(c.RunbookURL) + `#(\w+)`)
	linked := map[string]bool{}
	for _, path := range DashboardPaths() {
		for _, m := range link.FindAllStringSubmatch(string(files[path]), -1) {
			linked[m[1]] = true
		}
	}
	for _, a := range AlertNames(c) {
		if !linked[strings.ToLower(a)] {
			t.Errorf("no panel links the runbook of %s", a)
		}
		delete(linked, strings.ToLower(a))
	}
	for anchor := range linked {
		t.Errorf("a panel links runbook anchor #%s, which is no alert", anchor)
	}
}

// TestRunbooksDocumentEveryAlert reads docs/runbooks.md: every alert needs
// a section whose GitHub anchor is the one runbook_url points at.
func TestRunbooksDocumentEveryAlert(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range AlertNames(Default()) {
		if !regexp.MustCompile(`(?m)^## ` + a + `\s*$`).Match(raw) {
			t.Errorf("docs/runbooks.md has no '## %s' section", a)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"default", func(*Config) {}, true},
		{"empty job", func(c *Config) { c.Job = "" }, false},
		{"zero window", func(c *Config) { c.RateWindow = 0 }, false},
		{"window under two scrapes", func(c *Config) { c.RateWindow = c.ScrapeInterval }, false},
		{"kv ratio 1", func(c *Config) { c.Thresholds.KVWatermark = 1 }, false},
		{"ttft slo off the buckets", func(c *Config) { c.TTFTSLOSeconds = 0.3 }, false},
		{"ttft slo on a bucket", func(c *Config) { c.TTFTSLOSeconds = 0.25 }, true},
		{"negative e2e", func(c *Config) { c.E2EP95Seconds = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

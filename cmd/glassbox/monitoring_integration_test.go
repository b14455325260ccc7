package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// compatUnavailable lists the queries of vLLM's dashboards in
// ../shared/compat that no vLLM engine answers either, by a substring of
// the query, with the reason.
var compatUnavailable = map[string]string{
	"lmcache:":                "LMCache library metrics (lmcache-dashboard.json): glassbox has no LMCache connector",
	"router_":                 "production-stack router process metrics (router CPU, memory, disk)",
	"vllm:healthy_pods_total": "production-stack router metric, not an engine one",
	"vllm:current_qps":        "production-stack router metric, not an engine one",
	"vllm:gpu_prefix_cache_":  "removed in vLLM 0.12 (now vllm:prefix_cache_*), so empty against current vLLM too",
}

// TestMonitoringStack runs the shipped monitoring against a real server: a
// real Prometheus scrapes 'glassbox serve' (simulated H200) and its
// simulated dcgm-exporter under load with the generated rules, and a real
// Alertmanager routes to a webhook. Every panel query of our dashboards and
// of vLLM's dashboards must return data, and the DCGM series must agree with
// the engine's own; then a workload that overfills the KV cache must make
// the KV-usage and preemption alerts fire in Prometheus and reach the webhook.
func TestMonitoringStack(t *testing.T) {
	reftest.Long(t, "serve, a real Prometheus and Alertmanager under load")
	if testing.Short() {
		t.Skip("starts Prometheus and Alertmanager; skipped with -short")
	}
	promBin, amBin := stackTool(t, "prometheus"), stackTool(t, "prometheus-alertmanager")
	const model = "llama-3.1-8b"
	// 256 blocks of 16 tokens (128 KiB of KV per token): a handful of
	// short requests fit easily, two dozen long ones cannot.
	// Speculation on (at synthetic rates), so that the speculative
	// decoding row's panels have their families.
	base, _ := serveTest(t, "--sim-time-scale", "1", "--max-model-len", "1024",
		"--kv-cache-memory-bytes", fmt.Sprint(256*16*131072), "--sim-dcgm-port", "0",
		"--speculative-config", `{"method":"ngram","num_speculative_tokens":2,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.8,0.5]}`)
	target := strings.TrimPrefix(base, "http://")
	inst, _ := servers.Load(base)

	hook, hookSrv := newWebhook(t)
	amAddr, promAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	c := dashboards.Default()
	c.Target, c.AlertmanagerTarget, c.DCGMTarget = target, amAddr, inst.(*instance).dcgmAddr
	c.CriticalWebhookURL, c.WarningWebhookURL = hookSrv.URL+"/critical", hookSrv.URL+"/warning"
	c.ScrapeInterval = time.Second
	c.RateWindow, c.StallWindow, c.For, c.ShortFor = 10*time.Second, 10*time.Second, 3*time.Second, 3*time.Second
	c.GroupWait, c.GroupInterval, c.RepeatInterval = time.Second, time.Second, time.Minute
	dir := t.TempDir()
	if _, err := dashboards.Export(dir, c); err != nil {
		t.Fatal(err)
	}
	startChild(t, amBin, "--config.file="+filepath.Join(dir, dashboards.AlertmanagerPath),
		"--storage.path="+filepath.Join(dir, "am-data"), "--web.listen-address="+amAddr, "--cluster.listen-address=")
	startChild(t, promBin, "--config.file="+filepath.Join(dir, dashboards.PrometheusPath),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr,
		"--rules.alert.resend-delay=1s")
	promURL := "http://" + promAddr
	waitFor(t, "Alertmanager ready", 20*time.Second, func() bool { return httpOK("http://" + amAddr + "/-/ready") })
	waitFor(t, "Prometheus ready", 20*time.Second, func() bool { return httpOK(promURL + "/-/ready") })
	waitFor(t, "Prometheus scraping glassbox", 20*time.Second, func() bool {
		s, err := promQuery(promURL, fmt.Sprintf(`up{job=%q} == 1`, c.Job))
		return err == nil && len(s) == 1
	})

	vars := map[string]string{"instance": target, "model_name": model, "Deployment_id": model}
	queries := ourQueries(t, vars)
	compat, skipped := dashboardQueries(t, reftest.Path(t, "compat"), 1, compatUnavailable, vars)
	queries = append(queries, compat...)

	// Phase 1: a steady mix of short requests sharing a prefix, until every
	// query answers.
	shared := words(100, 7)
	ctx, stopLoad := context.WithCancel(context.Background())
	wait := loadLoop(ctx, base, 6, 200, func(w, i int) map[string]any {
		return map[string]any{"model": model, "prompt": shared + words(10+i%20, w*1000+i), "max_tokens": 8 + (w*7+i)%40}
	})
	pending := slices.Clone(queries)
	deadline := time.Now().Add(60 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		pending = slices.DeleteFunc(pending, func(q panelQuery) bool { return answers(promURL, q.expr) })
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	checkDCGMReconciles(t, promURL)
	stopLoad()
	okN, failN := wait()
	t.Logf("phase 1: %d requests answered, %d failed; %d queries checked (%d of vLLM's), %d vLLM queries skipped",
		okN, failN, len(queries), len(compat), len(skipped))
	for _, q := range pending {
		t.Errorf("%s: panel %q: query returned no data: %s", q.file, q.panel, q.expr)
	}
	for _, s := range skipped {
		if answers(promURL, s.expr) {
			t.Errorf("%s: %q is listed as unavailable but returns data: drop it from compatUnavailable", s.file, s.expr)
		}
	}

	// Phase 2: four dozen generations overfill the KV cache until both
	// alerts have reached the webhook. Each request ends at about 10 of the
	// 256 blocks: a request waiting for room (admission is first come first
	// served) leaves at most that much free, so usage stays near 0.95, clear
	// of the alert's 0.9. Two dozen requests of 30 blocks kept it at
	// 0.84-0.94, and the alert came and went.
	ctx, stopLoad = context.WithCancel(context.Background())
	defer stopLoad()
	wait = loadLoop(ctx, base, 48, 100, func(w, i int) map[string]any {
		return map[string]any{"model": model, "prompt": words(30, 10000+w*100+i), "max_tokens": 100, "ignore_eos": true}
	})
	want := []string{"GlassboxKVCacheNearlyFull", "GlassboxHighPreemptionRate"}
	// What the alerts' inputs read, every few seconds, to say on a timeout
	// whether the load, the rule or the routing fell short.
	var trace []string
	start, lastTrace := time.Now(), time.Time{}
	for !hook.got("/warning", want[0]) || !hook.got("/warning", want[1]) {
		if time.Since(lastTrace) >= 5*time.Second {
			lastTrace = time.Now()
			trace = append(trace, fmt.Sprintf("%4.0fs %s", time.Since(start).Seconds(), alertInputs(promURL, hook, want)))
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("gave up after 90s waiting for the KV and preemption alerts at the webhook; every 5s:\n%s", strings.Join(trace, "\n"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	firing := firingAlerts(t, promURL)
	stopLoad()
	okN, failN = wait()
	t.Logf("phase 2: %d requests answered, %d failed; firing in Prometheus: %v", okN, failN, firing)
	for _, a := range want {
		if !slices.Contains(firing, a) {
			t.Errorf("%s reached the webhook but is not firing in Prometheus", a)
		}
	}
}

// alertInputs reads what the KV and preemption alerts are computed from,
// their state in Prometheus, and what has reached the webhook.
func alertInputs(promURL string, hook *webhook, alerts []string) string {
	var b strings.Builder
	for _, q := range []struct{ name, expr string }{
		{"preemptions/s", `sum(rate(vllm:num_preemptions_total[10s]))`},
		{"kv usage", `max(avg_over_time(vllm:kv_cache_usage_perc[10s]))`},
		{"running", `sum(vllm:num_requests_running)`},
		{"waiting", `sum(vllm:num_requests_waiting)`},
	} {
		v := "none"
		if s, err := promQuery(promURL, q.expr); err != nil {
			v = err.Error()
		} else if len(s) > 0 {
			v = fmt.Sprintf("%.3g", s[0].Value)
		}
		fmt.Fprintf(&b, "%s %s; ", q.name, v)
	}
	if s, err := promQuery(promURL, `ALERTS`); err == nil {
		for _, x := range s {
			if slices.Contains(alerts, x.Metric["alertname"]) {
				fmt.Fprintf(&b, "%s %s; ", x.Metric["alertname"], x.Metric["alertstate"])
			}
		}
	}
	for _, a := range alerts {
		if hook.got("/warning", a) {
			fmt.Fprintf(&b, "%s at the webhook; ", a)
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// panelQuery is one query of one panel of one dashboard file.
type panelQuery struct{ file, panel, expr string }

// answers reports whether expr returns at least one sample that is a
// number (a NaN, such as a quantile over no observations, is no data).
func answers(promURL, expr string) bool {
	s, err := promQuery(promURL, expr)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(s, func(x promSample) bool { return !math.IsNaN(x.Value) })
}

func firingAlerts(t *testing.T, promURL string) []string {
	t.Helper()
	s, err := promQuery(promURL, `ALERTS{alertstate="firing"}`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range s {
		out = append(out, x.Metric["alertname"])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

var (
	rangeVar = regexp.MustCompile(`\[\s*\$\{?(__\w+)\}?\s*\]`)
	plainVar = regexp.MustCompile(`\$\{?(\w+)(?::\w+)?\}?`)
)

// substitute fills in Grafana's variables as a dashboard would: rate
// intervals become 15 s (fifteen 1 s scrapes), the range five minutes
// (longer than the test), and template variables their values.
func substitute(t *testing.T, q string, vars map[string]string) string {
	q = rangeVar.ReplaceAllStringFunc(q, func(m string) string {
		if strings.Contains(m, "__range") {
			return "[5m]"
		}
		return "[15s]"
	})
	return plainVar.ReplaceAllStringFunc(q, func(m string) string {
		name := plainVar.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("query %q uses variable $%s, which the test does not know", q, name)
		}
		return v
	})
}

// ourQueries are the panel targets and variable queries of the shipped
// dashboards.
func ourQueries(t *testing.T, vars map[string]string) []panelQuery {
	files, err := dashboards.Files(dashboards.Default())
	if err != nil {
		t.Fatal(err)
	}
	var out []panelQuery
	for _, f := range files {
		if slices.Contains(dashboards.DashboardPaths(), f.Path) {
			out = append(out, grafanaQueries(t, f.Path, f.Data, vars)...)
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d queries in our dashboards", len(out))
	}
	return out
}

// dashboardQueries are the panel queries and variable selectors of the
// Grafana dashboards in dir (at least want of them), minus those with a key
// of unavailable (returned second); a key no dashboard queries is an error.
func dashboardQueries(t *testing.T, dir string, want int, unavailable map[string]string, vars map[string]string) (use, skipped []panelQuery) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(paths) < want {
		t.Fatalf("%d dashboards in %s, want %d", len(paths), dir, want)
	}
	var all []panelQuery
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, grafanaQueries(t, filepath.Base(p), raw, vars)...)
	}
	use, skipped = splitQueries(all, unavailable)
	for key, why := range unavailable {
		if !slices.ContainsFunc(skipped, func(q panelQuery) bool { return strings.Contains(q.expr, key) }) {
			t.Errorf("%q is listed unavailable (%s) but no dashboard in %s queries it", key, why, dir)
		}
	}
	return use, skipped
}

// grafanaQueries walks a Grafana dashboard for panel targets ("expr") and
// the selector of label_values(selector, label) variables.
func grafanaQueries(t *testing.T, file string, raw []byte, vars map[string]string) []panelQuery {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []panelQuery
	var walk func(v any, panel string)
	walk = func(v any, panel string) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok && v["targets"] != nil {
				panel = title
			}
			if e, ok := v["expr"].(string); ok && strings.TrimSpace(e) != "" {
				out = append(out, panelQuery{file, panel, substitute(t, e, vars)})
			}
			if v["type"] == "query" {
				q, _ := v["query"].(string)
				if m, ok := v["query"].(map[string]any); ok {
					q, _ = m["query"].(string)
				}
				if sel, ok := strings.CutPrefix(q, "label_values("); ok && strings.Contains(sel, ",") {
					sel = sel[:strings.LastIndexByte(sel, ',')]
					out = append(out, panelQuery{file, "variable " + fmt.Sprint(v["name"]), substitute(t, sel, vars)})
				}
			}
			for k, c := range v {
				if k != "expr" {
					walk(c, panel)
				}
			}
		case []any:
			for _, c := range v {
				walk(c, panel)
			}
		}
	}
	walk(doc, "")
	return out
}

// checkDCGMReconciles compares, in Prometheus under load, the simulated
// GPU's DCGM series with the engine's own: engine activity with the
// executor's busy ratio (within 0.02), tensor-pipe activity with the MFU
// that vLLM's FLOP counter gives, and a framebuffer that stays at what
// --gpu-memory-utilization preallocates.
func checkDCGMReconciles(t *testing.T, promURL string) {
	t.Helper()
	value := func(q string) (float64, bool) {
		s, err := promQuery(promURL, q)
		if err != nil || len(s) != 1 || math.IsNaN(s[0].Value) {
			return 0, false
		}
		return s[0].Value, true
	}
	var last string
	ok := false
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && !ok; time.Sleep(time.Second) {
		active, a := value(`avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"}[10s])`)
		busy, b := value(`sum(rate(glassbox_executor_busy_seconds_total[10s]))`)
		tensor, c := value(`avg_over_time(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0"}[10s])`)
		mfu, d := value(`sum(rate(vllm:estimated_flops_per_gpu_total[10s])) / max(glassbox_executor_peak_flops_per_second)`)
		last = fmt.Sprintf("engine active %.3f vs busy %.3f; tensor active %.4f vs MFU %.4f", active, busy, tensor, mfu)
		ok = a && b && c && d && busy > 0.05 && math.Abs(active-busy) <= 0.02 && math.Abs(tensor-mfu) <= 0.02+0.1*mfu
	}
	if !ok {
		t.Errorf("DCGM does not reconcile with the engine within 30 s: %s", last)
	} else {
		t.Logf("DCGM reconciles: %s", last)
	}
	minFB, a := value(`min_over_time(DCGM_FI_DEV_FB_USED{gpu="0"}[5m])`)
	maxFB, b := value(`max_over_time(DCGM_FI_DEV_FB_USED{gpu="0"}[5m])`)
	total, c := value(`DCGM_FI_DEV_FB_USED{gpu="0"} + DCGM_FI_DEV_FB_FREE{gpu="0"} + DCGM_FI_DEV_FB_RESERVED{gpu="0"}`)
	if !a || !b || !c || minFB != maxFB || math.Abs(minFB/total-0.92) > 0.001 {
		t.Errorf("framebuffer used %v..%v MiB of %v: want flat at --gpu-memory-utilization 0.92", minFB, maxFB, total)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/live"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// localFleet is a fleet without Kubernetes: glassbox replicas in this
// process, guarded by an API key with their metrics ports open (as the Helm
// chart runs them), found by a real Prometheus through file_sd_configs, with
// a real Alertmanager delivering to a webhook.
type localFleet struct {
	// PromURL is the fleet's Prometheus; Selector the label matchers of
	// its replicas there ({job="glassbox"}). Together they are what
	// 'glassbox doctor --prometheus-url URL --selector SELECTOR' reads.
	PromURL, Selector string
	// Replicas in start order; each Instance is the instance label
	// Prometheus gives its series (the metrics listener's address).
	Replicas []fleetReplica
	Model    string
	hook     *webhook
}

type fleetReplica struct {
	Base       string // the API, e.g. http://127.0.0.1:41234
	Instance   string // host:port of the metrics listener
	MetricsURL string
	DCGM       string // host:port of the simulated dcgm-exporter
}

// Instances lists the replicas' instance labels.
func (f *localFleet) Instances() []string {
	var out []string
	for _, r := range f.Replicas {
		out = append(out, r.Instance)
	}
	return out
}

const fleetKey = "fleet-key"

// startLocalFleet starts n simulated replicas (args are added to each
// one's serve flags), exports the monitoring files for them with c's
// windows and thresholds (its Fleet, addresses and webhooks are filled in
// here), and starts Prometheus and Alertmanager on them. Everything stops
// when the test ends.
func startLocalFleet(t *testing.T, n int, c dashboards.Config, args ...string) *localFleet {
	t.Helper()
	promBin, amBin := stackTool(t, "prometheus"), stackTool(t, "prometheus-alertmanager")
	f := &localFleet{Selector: fmt.Sprintf(`{job=%q}`, c.Job), Model: "llama-3.1-8b"}
	c.Fleet = nil
	for range n {
		base, _ := serveTest(t, append([]string{"--api-key", fleetKey, "--metrics-port", "0", "--sim-dcgm-port", "0"}, args...)...)
		v, _ := servers.Load(base)
		inst := v.(*instance)
		f.Replicas = append(f.Replicas, fleetReplica{Base: base, Instance: inst.metricsAddr,
			MetricsURL: "http://" + inst.metricsAddr + "/metrics", DCGM: inst.dcgmAddr})
		c.Fleet = append(c.Fleet, dashboards.FleetTarget{Target: inst.metricsAddr, DCGM: inst.dcgmAddr})
	}
	hook, hookSrv := newWebhook(t)
	f.hook = hook
	amAddr, promAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	c.AlertmanagerTarget = amAddr
	c.CriticalWebhookURL, c.WarningWebhookURL = hookSrv.URL+"/critical", hookSrv.URL+"/warning"
	dir := t.TempDir()
	if _, err := dashboards.Export(dir, c); err != nil {
		t.Fatal(err)
	}
	startChild(t, amBin, "--config.file="+filepath.Join(dir, dashboards.AlertmanagerPath),
		"--storage.path="+filepath.Join(dir, "am-data"), "--web.listen-address="+amAddr, "--cluster.listen-address=")
	startChild(t, promBin, "--config.file="+filepath.Join(dir, dashboards.PrometheusPath),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr,
		"--rules.alert.resend-delay=1s")
	f.PromURL = "http://" + promAddr
	waitFor(t, "Alertmanager ready", 20*time.Second, func() bool { return httpOK("http://" + amAddr + "/-/ready") })
	waitFor(t, "Prometheus ready", 20*time.Second, func() bool { return httpOK(f.PromURL + "/-/ready") })
	for _, job := range []string{c.Job, c.DCGMJob} {
		waitFor(t, "Prometheus scraping every replica as job "+job, 20*time.Second, func() bool {
			got, err := instancesOf(f.PromURL, fmt.Sprintf(`up{job=%q} == 1`, job))
			return err == nil && slices.Equal(got, sortedCopy(f.Instances()))
		})
	}
	return f
}

// bench runs 'glassbox bench' against replica i with args until ctx ends,
// and returns a function that waits for it.
func (f *localFleet) bench(ctx context.Context, t *testing.T, i int, args ...string) (wait func()) {
	r := f.Replicas[i]
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"bench", "--base-url", r.Base, "--api-key", fleetKey, "--metrics-url", r.MetricsURL,
			"--model", f.Model, "--duration", "10m", "--disable-tqdm", "--seed", fmt.Sprint(i)}, args...), io.Discard, io.Discard)
	}()
	return func() {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("bench against replica %d: %v", i, err)
		}
	}
}

// TestLocalFleet runs three replicas under a real Prometheus and
// Alertmanager, loads one of them far more than the others with glassbox
// bench, and checks the fleet's monitoring as a user would read it: every
// replica is scraped with its GPU, the endpoint picker's scrape sees every
// one, each per-replica query of the Fleet dashboard returns one series per
// replica, the per-replica panels put the hot replica on top, and
// GlassboxLoadImbalance fires for it alone and reaches the webhook, while
// no alert names a cold replica.
func TestLocalFleet(t *testing.T) {
	reftest.Long(t, "three replicas, a real Prometheus and Alertmanager")
	if testing.Short() {
		t.Skip("starts three replicas, Prometheus and Alertmanager; skipped with -short")
	}
	c := dashboards.Default()
	c.ScrapeInterval = time.Second
	c.RateWindow, c.StallWindow, c.For, c.ShortFor = 10*time.Second, 10*time.Second, 3*time.Second, 3*time.Second
	c.GroupWait, c.GroupInterval, c.RepeatInterval = time.Second, time.Second, time.Minute
	// 256 KV blocks of 16 tokens (128 KiB of KV per token) per replica: the
	// hot replica's two dozen long generations cannot all run at once.
	f := startLocalFleet(t, 3, c, "--sim-time-scale", "1", "--max-model-len", "1024",
		"--kv-cache-memory-bytes", fmt.Sprint(256*16*131072))
	hot := f.Replicas[0].Instance

	// The picker polls each pod's metrics port with no credentials.
	for _, r := range f.Replicas {
		if _, _, _, blockSize, blocks, err := eppScrape(context.Background(), r.MetricsURL); err != nil || blockSize != 16 || blocks != 256 {
			t.Errorf("picker's scrape of %s: block size %d, %d blocks, %v", r.Instance, blockSize, blocks, err)
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	waits := []func(){
		f.bench(ctx, t, 0, "--random-input-len", "150", "--random-output-len", "300", "--max-concurrency", "24", "--num-prompts", "100"),
		f.bench(ctx, t, 1, "--random-input-len", "32", "--random-output-len", "16", "--request-rate", "2", "--max-concurrency", "2", "--num-prompts", "50"),
		f.bench(ctx, t, 2, "--random-input-len", "32", "--random-output-len", "16", "--request-rate", "2", "--max-concurrency", "2", "--num-prompts", "50"),
	}
	defer func() {
		stop()
		for _, w := range waits {
			w()
		}
	}()

	checkFleetDashboard(t, f, hot)
	checkImbalanceAlert(t, f, hot)
	checkDoctorFleet(t, f, hot)
	checkDashboardFederation(t, f, hot)
}

// checkDoctorFleet runs the doctor over the fleet while the load runs: one
// report per replica, the hot one first and KV-capacity bound, the cold
// ones without a bottleneck, and a fleet finding naming the imbalance.
func checkDoctorFleet(t *testing.T, f *localFleet, hot string) {
	t.Helper()
	// The window must not start before Prometheus found every replica.
	waitFor(t, "8 s of scrapes of every replica", 30*time.Second, func() bool {
		s, err := promQuery(f.PromURL, "min(count_over_time(vllm:num_requests_running"+f.Selector+"[8s]))")
		return err == nil && len(s) == 1 && s[0].Value >= 7
	})
	var out strings.Builder
	err := run(context.Background(), []string{"doctor", "--prometheus-url", f.PromURL, "--selector", f.Selector, "--since", "6s", "--interval", "1s", "--json"}, &out, io.Discard)
	if code := exitCode(err); code != doctorExitWarning && code != doctorExitCritical {
		t.Fatalf("doctor over the fleet: exit %d (%v)\n%s", code, err, out.String())
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Fleet == nil || len(rep.Fleet.Instances) != len(f.Replicas) {
		t.Fatalf("doctor over the fleet: no per-instance reports for %d replicas:\n%s", len(f.Replicas), out.String())
	}
	first := rep.Fleet.Instances[0]
	if first.Instance != hot || !slices.Contains(first.Report.Names(), "kv-capacity-bound") {
		t.Errorf("the worst instance is %s with %v; want %s, KV-capacity bound", first.Instance, first.Report.Names(), hot)
	}
	// A cold replica may miss a scrape on two busy cores (metrics-stale);
	// it must not look like a bottleneck.
	for _, in := range rep.Fleet.Instances[1:] {
		for _, name := range in.Report.Names() {
			if slices.Contains([]string{"kv-capacity-bound", "compute-bound", "concurrency-cap", "queueing-dominates", "preemption-storm"}, name) {
				t.Errorf("cold replica %s has findings %v", in.Instance, in.Report.Names())
			}
		}
	}
	if !slices.Contains(rep.Names(), "load-imbalance") || !strings.Contains(rep.Findings[0].Title, hot) {
		t.Errorf("the fleet's findings %v do not name the imbalance at %s", rep.Names(), hot)
	}
	// --verify replays one replica: over a fleet it must say so, not
	// replay the fleet's sum as if it were one.
	err = run(context.Background(), []string{"doctor", "--prometheus-url", f.PromURL, "--selector", f.Selector, "--since", "6s", "--interval", "1s", "--verify"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "matches 3 instances") {
		t.Errorf("doctor --verify over the fleet: %v, want an error naming the 3 instances", err)
	}
}

// checkDashboardFederation: glassbox dashboard --prometheus-url finds
// every replica through the real Prometheus's range API and reads each
// one's series alone, ranked as the doctor ranks the fleet (the hot one
// first); a range selector is refused.
func checkDashboardFederation(t *testing.T, f *localFleet, hot string) {
	t.Helper()
	page, err := live.New(live.Config{Prometheus: &live.Prometheus{URL: f.PromURL, Selector: f.Selector, Step: time.Second, Since: 6 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	page.Handler("/dashboard").ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/api/state", nil))
	var st live.State
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	if st.Problem != "" || len(st.Items) != len(f.Replicas) || !st.Window.Live {
		t.Fatalf("the page read %d instances of %d replicas (live %v): %s", len(st.Items), len(f.Replicas), st.Window.Live, st.Problem)
	}
	if st.Items[0].Name != hot {
		t.Errorf("the page ranks %s first, want the hot %s", st.Items[0].Name, hot)
	}
	for _, in := range st.Items {
		if in.Readings < 5 || len(in.Series.T) < 4 || in.Questions == nil {
			t.Errorf("%s: %d readings, %d intervals, answers %v", in.Name, in.Readings, len(in.Series.T), in.Questions)
		}
	}
	if _, err := live.New(live.Config{Prometheus: &live.Prometheus{URL: f.PromURL, Selector: `{job="glassbox"}[5m]`}}); err == nil {
		t.Error("a range selector was accepted")
	}
}

// perReplicaQueries are the Fleet dashboard's targets drawn one series per
// instance (legend {{instance}}), by panel title.
func perReplicaQueries(t *testing.T, vars map[string]string) map[string][]string {
	t.Helper()
	files, err := dashboards.Files(dashboards.Default())
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, file := range files {
		if file.Path == dashboards.FleetPath {
			raw = file.Data
		}
	}
	var doc struct {
		Panels []struct {
			Title   string
			Targets []struct {
				Expr         string
				LegendFormat string
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range doc.Panels {
		for _, tg := range p.Targets {
			if strings.HasPrefix(tg.LegendFormat, "{{instance}}") {
				out[p.Title] = append(out[p.Title], substitute(t, tg.Expr, vars))
			}
		}
	}
	if len(out) < 6 {
		t.Fatalf("only %d per-replica panels in the Fleet dashboard", len(out))
	}
	return out
}

// checkFleetDashboard waits until every per-replica query returns exactly
// one series per replica, and the queue and KV panels rank hot first.
func checkFleetDashboard(t *testing.T, f *localFleet, hot string) {
	t.Helper()
	queries := perReplicaQueries(t, map[string]string{"instance": ".*", "model_name": f.Model})
	want := sortedCopy(f.Instances())
	pending := map[string]string{}
	for title, qs := range queries {
		for i, q := range qs {
			pending[fmt.Sprintf("%s #%d", title, i)] = q
		}
	}
	last := map[string]string{}
	deadline := time.Now().Add(60 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for what, q := range pending {
			got, err := instancesOf(f.PromURL, q)
			if err == nil && slices.Equal(got, want) {
				delete(pending, what)
			}
			last[what] = fmt.Sprintf("%v (err %v)", got, err)
		}
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	for what, q := range pending {
		t.Errorf("Fleet panel %s: want one series per replica %v, got %s: %s", what, want, last[what], q)
	}
	for _, title := range []string{"Requests waiting, per replica", "KV-cache usage, per replica", "Queue against the fleet mean"} {
		q := queries[title][0]
		var ranking string
		waitFor(t, "the hot replica on top of "+title, 60*time.Second, func() bool {
			top, second, err := topTwo(f.PromURL, q)
			ranking = fmt.Sprintf("%s then %s", top, second)
			return err == nil && top == hot && second != ""
		})
		t.Logf("%s: %s", title, ranking)
	}
}

// checkImbalanceAlert waits for GlassboxLoadImbalance to fire for hot in
// Prometheus and reach the warning webhook, then checks no alert, firing or
// delivered, names a cold replica.
func checkImbalanceAlert(t *testing.T, f *localFleet, hot string) {
	t.Helper()
	const alert = "GlassboxLoadImbalance"
	waitFor(t, alert+" for the hot replica at the webhook", 90*time.Second, func() bool {
		return slices.Contains(f.hook.firingInstances("/warning", alert), hot)
	})
	firing, err := promQuery(f.PromURL, `ALERTS{alertstate="firing"}`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range firing {
		names = append(names, s.Metric["alertname"]+"@"+s.Metric["instance"])
		if s.Metric["instance"] != hot {
			t.Errorf("%s fires for %s, a cold replica", s.Metric["alertname"], s.Metric["instance"])
		}
	}
	sort.Strings(names)
	t.Logf("firing: %v", names)
	if !slices.Contains(names, alert+"@"+hot) {
		t.Errorf("%s reached the webhook but is not firing for %s in Prometheus", alert, hot)
	}
	for _, path := range []string{"/warning", "/critical"} {
		f.hook.mu.Lock()
		for name, insts := range f.hook.instances[path] {
			for _, inst := range insts {
				if inst != hot {
					t.Errorf("%s reached %s for %s, a cold replica", name, path, inst)
				}
			}
		}
		f.hook.mu.Unlock()
	}
}

// instancesOf runs q and returns the sorted instance labels of its series
// that hold a number.
func instancesOf(promURL, q string) ([]string, error) {
	s, err := promQuery(promURL, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, x := range s {
		if !math.IsNaN(x.Value) {
			out = append(out, x.Metric["instance"])
		}
	}
	sort.Strings(out)
	return out, nil
}

// topTwo returns the instances of q's largest and second-largest values,
// the second "" unless the first is strictly larger.
func topTwo(promURL, q string) (top, second string, err error) {
	s, err := promQuery(promURL, q)
	if err != nil {
		return "", "", err
	}
	sort.Slice(s, func(i, j int) bool { return s[i].Value > s[j].Value })
	if len(s) < 2 || !(s[0].Value > s[1].Value) {
		return "", "", nil
	}
	return s[0].Metric["instance"], s[1].Metric["instance"], nil
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

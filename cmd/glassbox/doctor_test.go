package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// scenario drives 'glassbox serve' (sim, real time) into one bottleneck
// class with a configuration and a bench load, and says what the doctor
// must find, and must not (docs/doctor.md lists them).
type scenario struct {
	name    string
	serve   []string
	load    bench.Config // BaseURL, MetricsURL and Duration are filled in
	window  time.Duration
	want    []string
	healthy bool // nothing above info
}

// contradicts lists, per class, the classes that cannot hold at once.
func contradicts(name string) []string {
	capacity := []string{"kv-capacity-bound", "compute-bound", "concurrency-cap", "under-loaded"}
	switch name {
	case "kv-capacity-bound", "compute-bound", "concurrency-cap":
		return slices.DeleteFunc(slices.Clone(capacity), func(s string) bool { return s == name })
	case "under-loaded":
		return []string{"kv-capacity-bound", "compute-bound", "concurrency-cap", "queueing-dominates", "preemption-storm"}
	case "prefill-bound":
		return []string{"decode-bound"}
	case "decode-bound":
		return []string{"prefill-bound"}
	}
	return nil
}

// kvBytes is n blocks of 16 tokens of llama-3.1-8b (128 KiB per token).
func kvBytes(blocks int) string { return fmt.Sprint(blocks * 16 * 131072) }

func random(in, out int) workload.DatasetConfig {
	return workload.DatasetConfig{Name: "random", RandomInputLen: in, RandomOutputLen: out}
}

func scenarios() []scenario {
	const w = 4 * time.Second
	return []scenario{
		{name: "healthy, light load", window: w, want: []string{"under-loaded"}, healthy: true,
			load: bench.Config{Dataset: random(128, 32), RequestRate: 1.5}},
		{name: "KV cache too small for long generations", window: w, want: []string{"kv-capacity-bound", "preemption-storm"},
			serve: []string{"--max-model-len", "1024", "--kv-cache-memory-bytes", kvBytes(256)},
			load:  bench.Config{Dataset: random(200, 300), RequestRate: 30}},
		{name: "long prompts over the token budget", window: w, want: []string{"compute-bound", "queueing-dominates"},
			serve: []string{"--max-num-batched-tokens", "2048"},
			load:  bench.Config{Dataset: random(1500, 8), RequestRate: 40}},
		{name: "max-num-seqs of 4", window: w, want: []string{"concurrency-cap", "queueing-dominates"},
			serve: []string{"--max-num-seqs", "4"},
			load:  bench.Config{Dataset: random(64, 64), RequestRate: 40}},
		{name: "long prompts, short answers", window: w, want: []string{"prefill-bound"},
			load: bench.Config{Dataset: random(3000, 4), RequestRate: 2}},
		{name: "batch widening under a ramp", window: 6 * time.Second, want: []string{"decode-bound"},
			load: bench.Config{Dataset: random(64, 1500), Ramp: &workload.Ramp{Strategy: "linear", Start: 2, End: 150}}},
		{name: "client timeout shorter than the answers", window: w, want: []string{"client-timeouts"},
			load: bench.Config{Dataset: random(64, 200), RequestRate: 10, RequestTimeout: 500 * time.Millisecond}},
		{name: "shared prefixes without prefix caching", window: w, want: []string{"prefix-caching"},
			serve: []string{"--no-enable-prefix-caching"},
			load: bench.Config{Dataset: workload.DatasetConfig{Name: "prefix-repetition", PrefixLen: 1024, SuffixLen: 64, NumPrefixes: 4, PrefixOutputLen: 16},
				RequestRate: 4}},
	}
}

// runLoad runs a bench load against base until ctx ends, or for at most
// twice the window.
func runLoad(ctx context.Context, base string, cfg bench.Config, window time.Duration) (wait func()) {
	cfg.BaseURL, cfg.MetricsURL, cfg.Duration, cfg.Seed = base, "-", 2*window, 1
	if cfg.NumPrompts == 0 {
		// Prompts are cycled; fewer are quicker to prepare.
		cfg.NumPrompts = 200
		if cfg.RequestRate > 0 {
			cfg.NumPrompts = min(200, max(10, int(cfg.RequestRate*2*window.Seconds())+1))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = bench.Run(ctx, cfg) }) // its errors (timeouts, the cancel) are the server's to report
	return wg.Wait
}

// clothes are the three ways a scenario's target is read: glassbox's own
// series; vLLM's alone with dcgm-exporter beside them; vLLM's alone.
var clothes = []string{"glassbox", "vllm+dcgm", "vllm"}

// diagnoseUnderLoad starts serve, puts the load on it and runs the doctor
// over the window while the load runs.
func diagnoseUnderLoad(t *testing.T, sc scenario, verify *doctor.VerifyConfig) (*doctor.Report, string) {
	t.Helper()
	reps, base := diagnoseInClothes(t, sc, verify, clothes[:1])
	return reps[0], base
}

// diagnoseInClothes runs one doctor per view of the same target over the
// same window, at once: the glassbox view reads /metrics; the vLLM views
// read it through a proxy that strips what vLLM does not export (as serve
// --disable-glassbox-metrics does), one of them with the simulated GPU's
// dcgm-exporter too.
func diagnoseInClothes(t *testing.T, sc scenario, verify *doctor.VerifyConfig, views []string) ([]*doctor.Report, string) {
	t.Helper()
	base, _ := serveTest(t, append([]string{"--sim-time-scale", "1", "--sim-dcgm-port", "0"}, sc.serve...)...)
	inst, _ := servers.Load(base)
	dcgmURL := "http://" + inst.(*instance).dcgmAddr + "/metrics"
	vllmView := stripGlassbox(t, base+"/metrics")
	ctx, cancel := context.WithCancel(context.Background())
	wait := runLoad(ctx, base, sc.load, sc.window)
	waitForLoad(t, base)
	reps := make([]*doctor.Report, len(views))
	errs := make([]error, len(views))
	var wg sync.WaitGroup
	for i, v := range views {
		cfg := doctor.Config{MetricsURL: base + "/metrics", Duration: sc.window, Interval: max(250*time.Millisecond, sc.window/12), Verify: verify}
		switch v {
		case "vllm+dcgm":
			cfg.MetricsURL, cfg.DCGMURL, cfg.Verify = vllmView, dcgmURL, nil
		case "vllm":
			cfg.MetricsURL, cfg.Verify = vllmView, nil
		}
		wg.Go(func() { reps[i], errs[i] = doctor.Run(context.Background(), cfg) })
	}
	wg.Wait()
	cancel()
	wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s view: %v", views[i], err)
		}
		var text strings.Builder
		_ = reps[i].WriteText(&text)
		t.Logf("%s, read as %s:\n%s", sc.name, views[i], text.String())
	}
	return reps, base
}

// stripGlassbox serves url's exposition without the glassbox_* and go_*
// families: what the same engine would show as a vLLM server.
func stripGlassbox(t *testing.T, url string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(url)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		for _, line := range strings.SplitAfter(string(b), "\n") {
			name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
			if !strings.HasPrefix(name, "glassbox_") && !strings.HasPrefix(name, "go_") {
				io.WriteString(w, line)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// waitForLoad waits until the server has a request in flight: bench
// builds its prompts before the first one goes out, and the window must
// not be spent on that.
func waitForLoad(t *testing.T, base string) {
	t.Helper()
	for range 400 {
		m := scrape(t, base)
		if m["vllm:num_requests_running"]+m["vllm:num_requests_waiting"] > 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the load never reached the server")
}

func checkScenario(t *testing.T, sc scenario, rep *doctor.Report) {
	t.Helper()
	names := rep.Names()
	for _, w := range sc.want {
		if !slices.Contains(names, w) {
			t.Errorf("%s: the doctor did not name %s; it found %v", sc.name, w, names)
		}
		for _, c := range contradicts(w) {
			if slices.Contains(names, c) {
				t.Errorf("%s: %s was named together with the contradicting %s", sc.name, w, c)
			}
		}
	}
	if sc.healthy && rep.Worst() != doctor.Info {
		t.Errorf("%s: a healthy run has a finding above info: %v", sc.name, names)
	}
}

// TestDoctorScenarios runs every scenario in both clothes: the doctor must
// name the same bottleneck from glassbox's own series, from vLLM's with
// DCGM, and from vLLM's alone.
func TestDoctorScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("drives glassbox serve under load for about a minute; skipped with -short")
	}
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			reps, _ := diagnoseInClothes(t, sc, nil, clothes)
			for i, rep := range reps {
				view := sc
				view.name = sc.name + " (" + clothes[i] + ")"
				checkScenario(t, view, rep)
			}
		})
	}
}

// TestDoctorTargetGoesDown: a server that stops mid-window is a critical
// metrics-stale finding; one that never answers is a read error.
func TestDoctorTargetGoesDown(t *testing.T) {
	base, stop := serveTest(t, "--sim-time-scale", "1")
	timer := time.AfterFunc(1500*time.Millisecond, func() { _ = stop() })
	defer timer.Stop()
	rep, err := doctor.Run(context.Background(), doctor.Config{MetricsURL: base + "/metrics", Duration: 3 * time.Second, Interval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Names(), "metrics-stale") || rep.ExitCode() != 2 {
		t.Errorf("findings %v, exit %d: want a critical metrics-stale", rep.Names(), rep.ExitCode())
	}
	var out, errOut strings.Builder
	err = run(context.Background(), []string{"doctor", "--metrics-url", base + "/metrics", "--duration", "1s", "--interval", "500ms"}, &out, &errOut)
	if code := exitCode(err); code != doctorExitUsage {
		t.Errorf("doctor against a stopped server: exit %d (%v), want %d", code, err, doctorExitUsage)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(interface{ ExitCode() int }); ok {
		return e.ExitCode()
	}
	return 1
}

// TestDoctorVerifiesKVRecommendation closes the loop on the KV scenario:
// the replay on a replica with the recommended KV cache must beat the
// current flags.
func TestDoctorVerifiesKVRecommendation(t *testing.T) {
	if testing.Short() {
		t.Skip("replays load on two replicas; skipped with -short")
	}
	sc := scenarios()[1]
	rep, _ := diagnoseUnderLoad(t, sc, &doctor.VerifyConfig{Replay: replayVirtual, Seed: 1})
	checkScenario(t, sc, rep)
	v := rep.Verification
	if v == nil || v.Skipped != "" {
		t.Fatalf("verification skipped: %+v", v)
	}
	if v.Current.Error != "" || v.Recommended.Error != "" {
		t.Fatalf("replay failed: %q %q", v.Current.Error, v.Recommended.Error)
	}
	if !v.Improved {
		t.Errorf("the KV recommendation did not improve the replay: %s", v.Verdict)
	}
	if !slices.Contains(v.Current.Flags, kvBytes(256)) || slices.Contains(v.Recommended.Flags, kvBytes(256)) {
		t.Errorf("current flags %v should carry the target's KV bytes %s, the recommended ones more", v.Current.Flags, kvBytes(256))
	}
}

func TestDoctorCommandLine(t *testing.T) {
	base, _ := serveTest(t, "--sim-time-scale", "1")
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"doctor", "--metrics-url", base + "/metrics", "--duration", "1s", "--interval", "250ms", "--json"}, &out, &errOut)
	if code := exitCode(err); code != 0 {
		t.Fatalf("idle server: exit %d (%v)", code, err)
	}
	if !strings.Contains(out.String(), `"exit_code": 0`) || !strings.Contains(out.String(), `"engine": "glassbox"`) {
		t.Errorf("json report:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"doctor"},
		{"doctor", "--metrics-url", base + "/metrics", "--prometheus-url", "http://127.0.0.1:1"},
		{"doctor", "--metrics-url", base + "/metrics", "--bench-result", "/nonexistent.json"},
		{"doctor", "--no-such-flag"},
	} {
		if code := exitCode(run(context.Background(), args, &out, &errOut)); code != doctorExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, doctorExitUsage)
		}
	}
}

// TestReplayVirtualSameLoadForBoth: --verify's two replays differ in their
// flags only. The recommended replica has more KV blocks; it must still be
// sent the same prompts at the same moments as the current one (the draw
// once followed the block count, mixing sampling noise into the verdict).
func TestReplayVirtualSameLoadForBoth(t *testing.T) {
	cur := doctor.ReplicaConfig{Hardware: "h100", Model: "llama-3.1-8b", TensorParallel: 1, MaxNumSeqs: 64,
		MaxNumBatchedTokens: 2048, MaxModelLen: 4096, BlockSize: 16, NumBlocks: 4000, PrefixCaching: true}
	rec := cur
	rec.NumBlocks = 8000
	load := doctor.ReplayLoad{RequestRate: 4, InputTokens: 300, OutputTokens: 40, SendSeconds: 10, Seed: 3}
	sent := func(rc doctor.ReplicaConfig) []string {
		_, outs, _, err := replayVirtual(context.Background(), rc, load)
		if err != nil {
			t.Fatal(err)
		}
		var first time.Time
		var s []string
		for _, o := range outs {
			if first.IsZero() || o.Start.Before(first) {
				first = o.Start
			}
		}
		for _, o := range outs {
			s = append(s, fmt.Sprintf("%d tokens at %v", o.PromptLen, o.Start.Sub(first)))
		}
		slices.Sort(s)
		return s
	}
	a, b := sent(cur), sent(rec)
	if len(a) == 0 {
		t.Fatal("the replay sent nothing")
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("the two replays were sent different loads (-current +recommended):\n%s", d)
	}
}

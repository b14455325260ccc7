package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/source"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// kvBytes is n blocks of 16 tokens of llama-3.1-8b (128 KiB per token).
// defaults is the doctor with its default thresholds and no hints.
var defaults = doctor.NewDiagnoser(doctor.DefaultThresholds(), doctor.Hints{})

// doctorRun diagnoses what src reads with the default doctor, as glassbox
// doctor does.
func doctorRun(ctx context.Context, src source.Source) (*doctor.Report, error) {
	return diagnose(ctx, &request{src: src, doc: defaults})
}

func kvBytes(blocks int) string { return fmt.Sprint(blocks * 16 * 131072) }

func random(in, out int) workload.DatasetConfig {
	return workload.DatasetConfig{Name: "random", RandomInputLen: in, RandomOutputLen: out}
}

// runLoad runs a bench load against base until ctx ends, or for at most
// twice the window.
func runLoad(ctx context.Context, base string, cfg bench.Config, window time.Duration) (wait func()) {
	cfg.BaseURL, cfg.MetricsURL, cfg.Duration, cfg.Seed = base, "-", 2*window, 1
	if cfg.NumPrompts == 0 {
		cfg.NumPrompts = 200
		if cfg.RequestRate > 0 {
			cfg.NumPrompts = min(200, max(10, int(cfg.RequestRate*2*window.Seconds())+1))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = bench.Run(ctx, cfg) }) // its errors (timeouts, the cancel) are the server's to report
	return wg.Wait
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

// TestDoctorTargetGoesDown: a server that stops mid-window is a critical
// metrics-stale finding; one that never answers is a read error.
func TestDoctorTargetGoesDown(t *testing.T) {
	base, stop := serveTest(t, "--sim-time-scale", "1")
	timer := time.AfterFunc(1500*time.Millisecond, func() { _ = stop() })
	defer timer.Stop()
	rep, err := doctorRun(context.Background(), source.Scrape{URL: base + "/metrics", Duration: 3 * time.Second, Interval: 250 * time.Millisecond})
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
		{"doctor", "--metrics-url", base + "/metrics", "--quantization", "awq"},
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
		flags, err := replicaFlags(rc)
		if err != nil {
			t.Fatal(err)
		}
		outs, _, err := replayRun(context.Background(), flags, rc, load)
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

// replayedFlags simulates a target from its simulate command line,
// diagnoses it in glassbox's clothes and returns the serve flags --verify
// would replay its recommendation with, and the window.
func replayedFlags(t *testing.T, args ...string) (string, *doctor.Window) {
	t.Helper()
	f, err := parseSimulateFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.replicaConfig()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := f.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := doctor.NewWindow("simulate", "target")
	var errs []error
	cfg := simulate.Config{Replica: rc, Plan: plan, ObserveInterval: 2 * time.Second, Observe: func(at time.Time, in simulate.Instance) {
		body, err := text(in.Gatherer)
		errs = append(errs, err)
		s, err := promtext.Parse(strings.NewReader(body))
		errs = append(errs, err)
		if err == nil {
			source.Append(w, at, s)
		}
	}}
	if _, err := simulate.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rep := defaults.Diagnose(w, nil)
	var flags []string
	v := doctor.Verify(context.Background(), doctor.VerifyConfig{Seed: 1, Send: time.Second, Replay: func(_ context.Context, got doctor.ReplicaConfig, _ doctor.ReplayLoad) ([]string, doctor.ReplayOutcome, error) {
		fl, err := replicaFlags(got)
		flags = fl
		return fl, doctor.ReplayOutcome{}, err
	}}, rep)
	if v.Skipped != "" {
		t.Fatalf("not replayed: %s (findings %v)", v.Skipped, rep.Names())
	}
	return strings.Join(flags, " "), w
}

// TestReplayKeepsFP8: an FP8 target (serve --sim-dtype fp8) says its
// weights' type in glassbox_executor_info and its cache's in
// vllm:cache_config_info, and --verify replays it in FP8: the replica's
// flags carry --quantization fp8 and --kv-cache-dtype fp8, and its KV
// cache holds the target's blocks at one byte an element (it was replayed
// in bf16, with twice the bytes).
func TestReplayKeepsFP8(t *testing.T) {
	joined, w := replayedFlags(t, "--sim-hardware", "h100", "--sim-model", "llama-3.1-8b", "--sim-dtype", "fp8", "--max-num-batched-tokens", "512",
		"--random-input-len", "2000", "--random-output-len", "16", "--request-rate", "40", "--duration", "20s", "--num-prompts", "801", "--seed", "1")
	if !strings.Contains(joined, "--quantization fp8") || !strings.Contains(joined, "--kv-cache-dtype fp8") {
		t.Errorf("the FP8 target's replay flags: %s", joined)
	}
	// 64 KiB a token of Llama-3.1-8B's KV in fp8: 32 layers × 8 heads × 128 × 2.
	blocks, err := strconv.Atoi(w.Info["vllm:cache_config_info"]["num_gpu_blocks"])
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(int64(blocks) * 16 * 65536); !strings.Contains(joined, "--kv-cache-memory-bytes "+want) {
		t.Errorf("replay flags %s: want --kv-cache-memory-bytes %s (%d blocks of 16 fp8 tokens)", joined, want, blocks)
	}
}

// TestReplayKeepsDataParallel: a server of two data-parallel ranks is
// replayed as two (it was replayed as one rank taking the whole load).
func TestReplayKeepsDataParallel(t *testing.T) {
	joined, _ := replayedFlags(t, "--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--data-parallel-size", "2", "--max-num-seqs", "8",
		"--random-input-len", "256", "--random-output-len", "128", "--request-rate", "40", "--duration", "20s", "--num-prompts", "801", "--seed", "1")
	if !strings.Contains(joined, "--data-parallel-size 2") {
		t.Errorf("the data-parallel target's replay flags: %s", joined)
	}
}

// TestReplayKeepsOffload: a target with a CPU KV offload tier is replayed
// with its tier (it was replayed without one).
func TestReplayKeepsOffload(t *testing.T) {
	joined, _ := replayedFlags(t, "--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-model-len", "4096", "--kv-cache-memory-bytes", "1000000000", "--kv-offloading-size", "8",
		"--random-input-len", "512", "--random-output-len", "1024", "--request-rate", "8", "--duration", "30s", "--num-prompts", "241", "--seed", "1")
	if !strings.Contains(joined, "--kv-offloading-size 8") {
		t.Errorf("the offloading target's replay flags: %s", joined)
	}
}

// TestReplayKeepsExpertParallel: a mixture of experts served with
// --enable-expert-parallel is replayed with it (it was replayed with each
// expert split over the GPUs).
func TestReplayKeepsExpertParallel(t *testing.T) {
	joined, _ := replayedFlags(t, "--sim-hardware", "h100", "--sim-model", "mixtral-8x7b", "--tensor-parallel-size", "2", "--enable-expert-parallel", "--max-num-batched-tokens", "512",
		"--random-input-len", "2000", "--random-output-len", "16", "--request-rate", "20", "--duration", "20s", "--num-prompts", "401", "--seed", "1")
	if !strings.Contains(joined, "--enable-expert-parallel") || !strings.Contains(joined, "--tensor-parallel-size 2") {
		t.Errorf("the expert-parallel target's replay flags: %s", joined)
	}
}

// fleetSource is a Source whose selector matched two instances: what the
// doctor reads of a fleet, from any source that names one.
type fleetSource struct{ selector string }

func (f fleetSource) Collect(context.Context) ([]doctor.Member, error) {
	var ms []doctor.Member
	for _, in := range []string{"10.0.0.1:8000", "10.0.0.2:8000"} {
		ms = append(ms, doctor.Member{Instance: in, ModelName: "m", Window: doctor.NewWindow("prometheus", "http://prometheus:9090")})
	}
	return ms, nil
}

func (f fleetSource) FleetSelector() string { return f.selector }

// TestDoctorFleetNamedBySource: several members make a fleet report named
// by the source's own selector (cmd asserts no concrete source to reach
// it), and --verify, which replays one replica, refuses the fleet by that
// name.
func TestDoctorFleetNamedBySource(t *testing.T) {
	src := fleetSource{`{job="vllm"}`}
	rep, err := doctorRun(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fleet == nil || len(rep.Fleet.Instances) != 2 || rep.Selector != src.selector || rep.Target != "http://prometheus:9090" {
		t.Fatalf("fleet report: selector %q, target %q, fleet %+v", rep.Selector, rep.Target, rep.Fleet)
	}
	_, err = diagnose(context.Background(), &request{src: src, doc: defaults, verify: &doctor.VerifyConfig{}})
	if err == nil || !strings.Contains(err.Error(), `{job="vllm"} matches 2 instances`) {
		t.Errorf("--verify over a fleet: %v", err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// sessionsConfig is an inference-perf file of two stages of multi-turn
// shared-prefix sessions.
const sessionsConfig = `
load:
  type: constant
  stages:
  - {rate: 10, duration: 2}
  - {rate: 20, duration: 1}
api: {type: completion, streaming: true}
server: {type: vllm, ignore_eos: true}
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 3
    num_users_per_system_prompt: 2
    system_prompt_len: 40
    question_len: 30
    output_len: 12
    enable_multi_turn_chat: true
`

func resultJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestBenchAndSimulateTakeTheSameConfig: one inference-perf file, sent by
// bench to a running server and run by simulate in virtual time, gives the
// same requests in the same stages, each round of a session carrying the
// conversation so far; simulate then replays bench's detailed result.
func TestBenchAndSimulateTakeTheSameConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "load.yaml")
	if err := os.WriteFile(cfg, []byte(sessionsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := serveTest(t, "--sim-time-scale", "0.1")
	benchOut := filepath.Join(dir, "bench.json")
	var out strings.Builder
	if err := run(context.Background(), []string{"bench", "--config", cfg, "--base-url", base, "--disable-tqdm", "--save-detailed",
		"--result-filename", benchOut, "--inference-perf-report", filepath.Join(dir, "bench-reports")}, &out, io.Discard); err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	simOut := filepath.Join(dir, "sim.json")
	out.Reset()
	if err := run(context.Background(), []string{"simulate", "--config", cfg, "--result-filename", simOut, "--inference-perf-report", "-"}, &out, io.Discard); err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "real time") || !strings.Contains(out.String(), "Stages") {
		t.Errorf("simulate's summary:\n%s", out.String())
	}
	b, s := resultJSON(t, benchOut), resultJSON(t, simOut)
	for name, j := range map[string]map[string]any{"bench": b, "simulate": s} {
		stages, _ := j["stages"].([]any)
		if j["completed"] != 40.0 || j["failed"] != 0.0 || j["num_prompts"] != 40.0 || len(stages) != 2 {
			t.Errorf("%s: completed %v, failed %v, num_prompts %v, %d stages; want 40, 0, 40, 2", name, j["completed"], j["failed"], j["num_prompts"], len(stages))
			continue
		}
		// 6 users: their first rounds are 70 tokens and a space, later ones longer.
		if in := j["total_input_tokens"].(float64); in <= 40*71 {
			t.Errorf("%s: %v input tokens over 40 requests: the sessions did not carry their conversations", name, in)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"simulate", "--replay", benchOut, "--result-filename", filepath.Join(dir, "replay.json")}, &out, io.Discard); err != nil {
		t.Fatalf("simulate --replay: %v\n%s", err, out.String())
	}
	r := resultJSON(t, filepath.Join(dir, "replay.json"))
	if r["completed"] != 40.0 || r["total_input_tokens"] != b["total_input_tokens"] || r["total_output_tokens"] != b["total_output_tokens"] {
		t.Errorf("replay: %v requests, %v/%v tokens; bench had 40, %v/%v", r["completed"], r["total_input_tokens"], r["total_output_tokens"],
			b["total_input_tokens"], b["total_output_tokens"])
	}
}

// TestSimulateTakesBenchFlags: vLLM bench's random dataset and rate flags
// run in virtual time on serve's scheduling flags.
func TestSimulateTakesBenchFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	var out strings.Builder
	err := run(context.Background(), []string{"simulate", "--sim-hardware", "a100-80g", "--sim-model", "Qwen/Qwen2.5-7B-Instruct", "--max-num-seqs", "16",
		"--random-input-len", "500", "--random-output-len", "50", "--num-prompts", "200", "--request-rate", "40", "--result-filename", path,
		"--percentile-metrics", "ttft,e2el"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	j := resultJSON(t, path)
	if j["completed"] != 200.0 || j["total_input_tokens"] != 200*500.0 || j["total_output_tokens"] != 200*50.0 || j["request_rate"] != 40.0 {
		t.Errorf("result: %v", j)
	}
	if _, ok := j["mean_e2el_ms"]; !ok {
		t.Error("no mean_e2el_ms")
	}
	for _, bad := range [][]string{{"--sim-model", "gpt-5"}, {"--config", "/nonexistent.yaml"}, {"--inference-perf-compat", "v9"}, {"--sim-calibration", "/nonexistent"}} {
		if err := run(context.Background(), append([]string{"simulate", "--num-prompts", "1"}, bad...), io.Discard, io.Discard); err == nil {
			t.Errorf("simulate %v succeeded", bad)
		}
	}
}

// TestCalibrateCommand: the calibration command replays a runs directory
// and writes a profile that simulate then loads.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	run1 := filepath.Join(dir, "runs", "a")
	if err := os.MkdirAll(run1, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"workload.yaml": "load: {stages: [{rate: 4, duration: 5}]}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2, num_prompts_per_group: 2, question_len: 200, output_len: 40}}\n",
		"server.args":   "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 32",
		"result.json":   `{"mean_ttft_ms": 45, "mean_e2el_ms": 420}`,
	} {
		if err := os.WriteFile(filepath.Join(run1, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prof := filepath.Join(dir, "h100.yaml")
	var out strings.Builder
	if err := run(context.Background(), []string{"simulate", "calibrate", "--runs", filepath.Join(dir, "runs"), "--iterations", "1", "--output", prof}, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"Before", "After", "| a |", "frontend_arrival", "Profile written"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"simulate", "--sim-hardware", "h100", "--sim-calibration", prof, "--num-prompts", "5", "--random-input-len", "20", "--random-output-len", "4"}, io.Discard, io.Discard); err != nil {
		t.Errorf("simulate with the fitted profile: %v", err)
	}
	if err := run(context.Background(), []string{"simulate", "--sim-hardware", "a100-80g", "--sim-calibration", prof, "--num-prompts", "1"}, io.Discard, io.Discard); err == nil {
		t.Error("an h100 profile was accepted for an a100")
	}
	// --terms fits those alone; a term it does not know, or --scoreboard
	// with a fit's flags, is refused by name.
	out.Reset()
	if err := run(context.Background(), []string{"simulate", "calibrate", "--runs", filepath.Join(dir, "runs"), "--iterations", "1", "--terms", "frontend_arrival,frontend_lag_steps"}, &out, io.Discard); err != nil {
		t.Fatalf("--terms: %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`kv_read_factor +(\S+) → +(\S+)\n`).MatchString(out.String()) || !kept(out.String(), "kv_read_factor") || !kept(out.String(), "step_overhead") {
		t.Errorf("a fit of the frontend's arrival and lag moved other terms:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"--runs", filepath.Join(dir, "runs"), "--terms", "frontend_speed"},
		{"--reference", "README.md", "--scoreboard", "--iterations", "2"},
		{"--scoreboard"},
	} {
		err := run(context.Background(), append([]string{"simulate", "calibrate"}, args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "frontend_speed") && !strings.Contains(err.Error(), "--scoreboard") && !strings.Contains(err.Error(), "--reference") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// kept says the fitted-terms table shows the term unchanged.
func kept(out, term string) bool {
	m := regexp.MustCompile(term + ` +(\S+) → +(\S+)`).FindStringSubmatch(out)
	return m != nil && m[1] == m[2]
}

// TestPlanCommand: plan over a small grid prints every configuration, the
// best, and the serve command lines of both servers.
func TestPlanCommand(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"plan", "--slo", "ttft:p99<=400ms,tpot:p99<=20ms", "--sim-hardware", "h100", "--tensor-parallel-size", "1",
		"--max-num-seqs", "16,32", "--random-input-len", "200", "--random-output-len", "30", "--num-prompts", "20", "--trial-duration", "10s",
		"--price", "h100=2.5/h", "--target-rate", "30"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"max-num-seqs", "ttft p99 ms", "h100      1   16", "h100      1   32", "Best: h100 × 1",
		"glassbox serve --sim-hardware h100", "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"plan"}, {"plan", "--slo", "ttft:p99<=1s", "--price", "h100"}, {"plan", "--slo", "ttft:p99<=1s", "--max-num-seqs", "8,x"}} {
		if err := run(context.Background(), bad, io.Discard, io.Discard); err == nil {
			t.Errorf("%v succeeded", bad)
		}
	}
}

// TestPlanSpeculationSweep: plan --speculation-sweep runs the rates with
// --speculative-config and without and says where speculation stops
// paying; without --speculative-config, or with a rate that is no number,
// it is refused by name. (internal/plan tests the crossover itself.)
func TestPlanSpeculationSweep(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"plan", "--sim-hardware", "h200", "--random-input-len", "128", "--random-output-len", "128", "--trial-duration", "10s",
		"--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.9,0.8,0.7]}`,
		"--speculation-sweep", "1,2"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"TPOT p50 ms (spec)", "\n1  ", "\n2  ", "pays", "Speculation pays at every rate swept."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for flagName, args := range map[string][]string{
		"--speculative-config": {"plan", "--speculation-sweep", "2"},
		"--speculation-sweep":  {"plan", "--speculation-sweep", "2,x", "--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`},
		"--slo":                {"plan", "--speculation-sweep", "2", "--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`, "--slo", "ttft:p99<=1s"},
		"--replicas":           {"plan", "--speculation-sweep", "2", "--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`, "--replicas", "2,4"},
		"--max-loras":          {"simulate", "--max-loras", "4"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), flagName) {
			t.Errorf("%v: %v, want an error naming %s", args, err, flagName)
		}
	}
}

// TestSimulatedRunInPrometheus: a simulated run's --metrics-out loads into
// a real Prometheus through promtool, and the doctor reads it there as it
// reads a live server: a max-num-seqs of 4 under load is the concurrency cap.
func TestSimulatedRunInPrometheus(t *testing.T) {
	reftest.Long(t, "a simulated run loaded into a real Prometheus")
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	dir := t.TempDir()
	om := filepath.Join(dir, "metrics.om")
	var out strings.Builder
	if err := run(context.Background(), []string{"simulate", "--max-num-seqs", "4", "--random-input-len", "64", "--random-output-len", "64",
		"--num-prompts", "100", "--request-rate", "40", "--duration", "3m", "--metrics-out", om, "--metrics-interval", "5s"}, &out, io.Discard); err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	importOpenMetrics(t, om, dir)
	promURL := startPromOn(t, dir).url
	out.Reset()
	err := run(context.Background(), []string{"doctor", "--prometheus-url", promURL, "--end", "2026-01-01T00:02:30Z", "--since", "2m", "--interval", "5s", "--json"}, &out, io.Discard)
	if code := exitCode(err); code != doctorExitWarning && code != doctorExitCritical {
		t.Fatalf("doctor exit %d (%v):\n%s", code, err, out.String())
	}
	if !strings.Contains(out.String(), `"name": "concurrency-cap"`) {
		t.Errorf("the doctor did not find the concurrency cap in the simulated run:\n%s", out.String())
	}
}

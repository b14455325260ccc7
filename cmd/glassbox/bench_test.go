package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchJSON runs 'glassbox bench' with args and returns its result file.
func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "result.json")
	var out strings.Builder
	if err := run(context.Background(), append([]string{"bench", "--result-filename", path, "--disable-tqdm"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("result: %v", err)
	}
	return j
}

// TestBenchCountsMatchServerMetrics runs bench against the simulator and
// checks the client's request and token totals against the server's own
// counters, both as the test scrapes them and as bench's server view does.
func TestBenchCountsMatchServerMetrics(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"completions random shared prefix", []string{"--random-input-len", "48", "--random-output-len", "12", "--random-range-ratio", "0.5", "--random-prefix-len", "32"}},
		{"chat prefix repetition", []string{"--backend", "openai-chat", "--dataset-name", "prefix-repetition", "--prefix-repetition-prefix-len", "64",
			"--prefix-repetition-suffix-len", "8", "--prefix-repetition-num-prefixes", "3", "--output-len", "10", "--ignore-eos"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, _ := serveTest(t, "--sim-time-scale", "0.05")
			before := scrape(t, base)
			j := benchJSON(t, append([]string{"--base-url", base, "--num-prompts", "30", "--request-rate", "300", "--seed", "3",
				"--metrics-interval", "50ms", "--percentile-metrics", "ttft,tpot,itl,e2el"}, tt.args...)...)
			after := waitIdle(t, base)
			if j["completed"] != 30.0 || j["failed"] != 0.0 {
				t.Fatalf("completed %v, failed %v; want 30, 0", j["completed"], j["failed"])
			}
			server := j["server"].(map[string]any)
			for _, c := range []struct {
				client, metric, view string
				delta                float64
			}{
				{"completed", "", "request_success", successTotal(after) - successTotal(before)},
				{"total_input_tokens", "vllm:prompt_tokens_total", "prompt_tokens", 0},
				{"total_output_tokens", "vllm:generation_tokens_total", "generation_tokens", 0},
			} {
				d := c.delta
				if c.metric != "" {
					d = after[c.metric] - before[c.metric]
				}
				if j[c.client] != d || server[c.view] != d {
					t.Errorf("client %s = %v; server delta %v as the test scraped it, %v in bench's server view", c.client, j[c.client], d, server[c.view])
				}
			}
			if tt.name == "chat prefix repetition" && server["prefix_cache_hit_rate"].(float64) <= 0 {
				t.Errorf("prefix-repetition workload: prefix cache hit rate %v, want > 0", server["prefix_cache_hit_rate"])
			}
			ttft := server["ttft"].(map[string]any)
			if ttft["count"] != 30.0 || j["mean_ttft_ms"].(float64) <= 0 || j["p99_e2el_ms"].(float64) < j["mean_ttft_ms"].(float64) {
				t.Errorf("server TTFT count %v, client mean TTFT %v, p99 E2EL %v", ttft["count"], j["mean_ttft_ms"], j["p99_e2el_ms"])
			}
		})
	}
}

// TestBenchSweepFindsAKnee sweeps a server that runs one sequence at a
// time: the synchronous pass meets a TTFT SLO ten times its own TTFT, the
// throughput pass queues everything behind one request and cannot.
func TestBenchSweepFindsAKnee(t *testing.T) {
	base, _ := serveTest(t, "--sim-time-scale", "0.5", "--max-num-seqs", "1")
	j := benchJSON(t, "--base-url", base, "--sweep", "--sweep-size", "4", "--num-prompts", "12", "--random-input-len", "256",
		"--random-output-len", "16", "--goodput", "ttft:150", "--metrics-interval", "50ms")
	passes := j["sweep"].([]any)
	if len(passes) != 4 {
		t.Fatalf("%d sweep passes, want 4", len(passes))
	}
	sync, tp := passes[0].(map[string]any), passes[1].(map[string]any)
	if sync["strategy"] != "synchronous" || sync["meets_slos"] != true || tp["strategy"] != "throughput" || tp["meets_slos"] != false {
		t.Fatalf("synchronous pass meets SLOs: %v (TTFT %v ms); throughput pass meets them: %v (TTFT %v ms); want true, false",
			sync["meets_slos"], sync["mean_ttft_ms"], tp["meets_slos"], tp["mean_ttft_ms"])
	}
	// The knee is the highest rate of a pass that met the SLOs (a pass's
	// rate is what it achieved, so on a busy machine the throughput pass
	// need not beat the synchronous one).
	best := 0.0
	for _, p := range passes {
		if p := p.(map[string]any); p["meets_slos"] == true {
			best = max(best, p["rate"].(float64))
		}
	}
	if knee, ok := j["knee_request_rate"].(float64); !ok || knee != best || knee < sync["rate"].(float64) {
		t.Errorf("knee %v req/s, want the highest rate that met the SLOs, %v (synchronous %v)", j["knee_request_rate"], best, sync["rate"])
	}
}

// TestBenchRandomPromptsHaveTheAskedLength: --random-input-len N sends
// prompts the server counts as exactly N tokens (its BOS included), on
// the simulator's vocabulary and on a real SentencePiece model.
func TestBenchRandomPromptsHaveTheAskedLength(t *testing.T) {
	for _, tt := range []struct {
		name  string
		serve []string
		len   int
	}{
		{"simulator", []string{"--sim-time-scale", "0.05"}, 300},
		{"stories260K", []string{"--model", storiesPath(t), "--threads", "1"}, 120},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, _ := serveTest(t, tt.serve...)
			j := benchJSON(t, "--base-url", base, "--num-prompts", "12", "--random-input-len", fmt.Sprint(tt.len),
				"--random-output-len", "2", "--metrics-interval", "50ms")
			m := waitIdle(t, base)
			n, sum := m["vllm:request_prompt_tokens_count"], m["vllm:request_prompt_tokens_sum"]
			if n != 12 || sum != float64(12*tt.len) || j["total_input_tokens"] != float64(12*tt.len) {
				t.Errorf("%v requests of %v prompt tokens in all (client counted %v), want 12 of exactly %d", n, sum, j["total_input_tokens"], tt.len)
			}
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/dashboards"
)

// kvAt is a vLLM target whose KV cache sits at kv with four requests
// waiting behind eight running, its counters moving on by step.
func kvAt(kv float64, step int) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 8
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %g
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m"} %d
# TYPE vllm:request_success counter
vllm:request_success_total{finished_reason="stop",model_name="m"} %d
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="m"} %d
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} %d
vllm:time_to_first_token_seconds_sum{model_name="m"} %g
vllm:time_to_first_token_seconds_count{model_name="m"} %d
`, kv, 100*step, step, step, step, 0.2*float64(step), step)
}

// TestThresholdMovesFindingAlertAndLine: one threshold, set on the command
// line (--threshold, or a --thresholds file, or monitoring export's own
// flag), moves the doctor's finding, the alert and the dashboards' line
// together: a KV cache at 0.85 with a queue is KV-capacity bound under a
// watermark of 0.8, and not under the default 0.9.
func TestThresholdMovesFindingAlertAndLine(t *testing.T) {
	var mu sync.Mutex
	step := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		step++
		body := kvAt(0.85, step)
		mu.Unlock()
		io.WriteString(w, body)
	}))
	defer target.Close()
	file := filepath.Join(t.TempDir(), "thresholds.yaml")
	if err := os.WriteFile(file, []byte("# the KV line of this fleet\nkv_watermark: 0.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		doctor, monitor []string
		watermark       float64
		capacityBoundKV bool
	}{
		{"defaults", nil, nil, 0.9, false},
		{"--threshold", []string{"--threshold", "kv_watermark=0.8"}, []string{"--threshold", "kv_watermark=0.8"}, 0.8, true},
		{"--thresholds file", []string{"--thresholds", file}, []string{"--thresholds", file}, 0.8, true},
		{"monitoring export's --kv-cache-usage", []string{"--threshold", "kv_watermark=0.8"}, []string{"--kv-cache-usage", "0.8"}, 0.8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			args := append([]string{"doctor", "--metrics-url", target.URL + "/metrics", "--duration", "1s", "--interval", "250ms", "--json"}, tc.doctor...)
			if err := run(context.Background(), args, &out, io.Discard); exitCode(err) > 2 {
				t.Fatal(err)
			}
			var rep struct{ Findings []struct{ Name string } }
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range rep.Findings {
				names = append(names, f.Name)
			}
			if got := slices.Contains(names, "kv-capacity-bound"); got != tc.capacityBoundKV {
				t.Errorf("the doctor's findings %v: kv-capacity-bound %v, want %v", names, got, tc.capacityBoundKV)
			}

			dir := t.TempDir()
			if err := run(context.Background(), append(append([]string{"monitoring", "export"}, tc.monitor...), dir), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			if got := kvAlertThreshold(t, dir); got != fmt.Sprint(tc.watermark) {
				t.Errorf("GlassboxKVCacheNearlyFull fires above %s, want %g", got, tc.watermark)
			}
			if got := kvLines(t, dir); len(got) == 0 || slices.ContainsFunc(got, func(v float64) bool { return v != tc.watermark }) {
				t.Errorf("the dashboards' KV lines are at %v, want %g", got, tc.watermark)
			}
		})
	}
	for _, bad := range [][]string{
		{"doctor", "--metrics-url", target.URL, "--threshold", "kv_watermark"},
		{"doctor", "--metrics-url", target.URL, "--threshold", "no_such=1"},
		{"doctor", "--metrics-url", target.URL, "--threshold", "kv_watermark=1.5"},
		{"doctor", "--metrics-url", target.URL, "--thresholds", "/no/such/file"},
		{"monitoring", "export", "--threshold", "busy_high=-1", t.TempDir()},
	} {
		if err := run(context.Background(), bad, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// kvAlertThreshold is the number GlassboxKVCacheNearlyFull compares with.
func kvAlertThreshold(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dashboards.RulesPath))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "GlassboxKVCacheNearlyFull" {
				_, after, _ := strings.Cut(r.Expr, " > ")
				return strings.TrimSpace(after)
			}
		}
	}
	t.Fatal("no GlassboxKVCacheNearlyFull")
	return ""
}

// kvLines are the threshold lines of the dashboards' KV-cache panels.
func kvLines(t *testing.T, dir string) []float64 {
	t.Helper()
	var out []float64
	for _, path := range dashboards.DashboardPaths() {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title       string
				FieldConfig struct {
					Defaults struct {
						Thresholds struct {
							Steps []struct{ Value *float64 }
						}
					}
				}
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			if !strings.Contains(p.Title, "KV-cache") {
				continue
			}
			if steps := p.FieldConfig.Defaults.Thresholds.Steps; len(steps) > 1 && steps[1].Value != nil {
				out = append(out, *steps[1].Value)
			}
		}
	}
	return out
}

// TestPlanTakesThresholds: plan takes the doctor's threshold flags (the
// same definition as doctor's, listed by --help), and they move its
// answer: past the row's limit the doctor finds queueing dominating at the
// default queue_share of 0.5, and not once a file moves it to 0.97; a bad
// threshold is refused by name, and so is one beside --speculation-sweep,
// which diagnoses nothing.
func TestPlanTakesThresholds(t *testing.T) {
	var help strings.Builder
	if err := run(context.Background(), []string{"plan", "--help"}, io.Discard, &help); err == nil || !strings.Contains(help.String(), "-thresholds string") || !strings.Contains(help.String(), "-threshold value") {
		t.Errorf("plan --help (%v) lists no --threshold and --thresholds:\n%s", err, help.String())
	}
	file := filepath.Join(t.TempDir(), "thresholds.yaml")
	if err := os.WriteFile(file, []byte("queue_share: 0.97\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := []string{"plan", "--slo", "ttft:p99<=400ms,tpot:p99<=20ms", "--sim-hardware", "h100", "--max-num-seqs", "16",
		"--random-input-len", "200", "--random-output-len", "30", "--num-prompts", "20", "--trial-duration", "5s"}
	limit := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), append(slices.Clone(plan), args...), &out, io.Discard); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		_, after, ok := strings.Cut(out.String(), "the doctor finds ")
		if !ok {
			t.Fatalf("%v: no finding past the limit:\n%s", args, out.String())
		}
		name, _, _ := strings.Cut(after, ":")
		return name
	}
	if got := limit(); got != "queueing-dominates" {
		t.Errorf("default thresholds: the doctor finds %s past the limit, want queueing-dominates", got)
	}
	if got := limit("--thresholds", file); got == "queueing-dominates" {
		t.Errorf("queue_share 0.97: the doctor still finds %s past the limit", got)
	}
	for _, bad := range [][]string{
		{"--threshold", "no_such=1"},
		{"--threshold", "queue_share=2"},
		{"--speculation-sweep", "2", "--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`, "--threshold", "queue_share=0.9"},
	} {
		if err := run(context.Background(), append(slices.Clone(plan), bad...), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "threshold") {
			t.Errorf("%v: %v, want an error naming the threshold", bad, err)
		}
	}
}

package promtext

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

const sample = `# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 3.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 2.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 5.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 5.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 4.5
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="100"} 1.0
`

func parse(t *testing.T, text string) *Scrape {
	t.Helper()
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReductions(t *testing.T) {
	s := parse(t, sample)
	for _, tt := range []struct {
		name string
		want Labels
		max  bool
		v    float64
	}{
		{name: "vllm:request_success_total", v: 5},
		{name: "vllm:request_success_total", want: Labels{"finished_reason": "abort"}, v: 2},
		{name: "vllm:kv_cache_usage_perc", max: true, v: 0.75},
		{name: "vllm:kv_cache_usage_perc", v: 1},
		// A Python client that names the counter family without _total.
		{name: "vllm:num_preemptions_total", v: 7},
		{name: "vllm:e2e_request_latency_seconds_count", v: 5},
		{name: "vllm:e2e_request_latency_seconds_sum", v: 4.5},
	} {
		get := s.Sum
		if tt.max {
			get = s.Max
		}
		if v, ok := get(tt.name, tt.want); !ok || v != tt.v {
			t.Errorf("%s%v (max %v) = %v %v, want %v", tt.name, tt.want, tt.max, v, ok, tt.v)
		}
	}
	if _, ok := s.Sum("vllm:request_success_total", Labels{"finished_reason": "length"}); ok {
		t.Error("a label value no series has matched")
	}
	if _, ok := s.Sum("vllm:absent", nil); ok {
		t.Error("an absent family matched")
	}
	want := map[float64]float64{0.5: 1, 1: 4, math.Inf(1): 5}
	if diff := cmp.Diff(want, s.Buckets("vllm:e2e_request_latency_seconds", nil)); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	if got := s.Info("vllm:cache_config_info"); got["num_gpu_blocks"] != "100" || got["engine"] != "0" {
		t.Errorf("info labels %v", got)
	}
	if n := len(s.Series("vllm:request_success_total")); n != 2 {
		t.Errorf("%d series, want 2", n)
	}
}

// TestRealCaptures parses every real /metrics capture of a running vLLM
// server in ../shared/compat: what a user's server writes must read.
func TestRealCaptures(t *testing.T) {
	dir := reftest.Path(t, "compat")
	files, _ := filepath.Glob(filepath.Join(dir, "*-metrics.txt"))
	if len(files) == 0 {
		t.Fatalf("no *-metrics.txt capture in %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := parse(t, string(raw))
			if len(s.Names()) < 10 {
				t.Errorf("only %d families", len(s.Names()))
			}
			if _, ok := s.Sum("vllm:num_requests_running", nil); !ok {
				t.Error("no vllm:num_requests_running")
			}
		})
	}
}

// FuzzParse feeds arbitrary text through the parser and every reduction:
// none may panic.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("# TYPE x histogram\nx_bucket{le=\"1\"} 2\nx_bucket{le=\"+Inf\"} 1\nx_count 1\nx_sum 3\n")
	f.Add("x 1\nx 2\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, n := range s.Names() {
			s.Sum(n, nil)
			s.Max(n, Labels{"le": "1"})
			s.Series(n)
			s.Info(n)
			s.Buckets(n, nil)
		}
	})
}

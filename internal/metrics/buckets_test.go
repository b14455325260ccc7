package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func sharedDir(t *testing.T) string { t.Helper(); return reftest.Path(t) }

// bucketsOf returns the finite upper bounds of a gathered histogram family.
func bucketsOf(t *testing.T, fams map[string]*dto.MetricFamily, name string) []float64 {
	t.Helper()
	mf := fams[name]
	if mf == nil || len(mf.GetMetric()) == 0 || mf.GetMetric()[0].GetHistogram() == nil {
		t.Fatalf("histogram %s is not exported", name)
	}
	var out []float64
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		if ub := b.GetUpperBound(); ub < 1e308 {
			out = append(out, ub)
		}
	}
	return out
}

var (
	specRow    = regexp.MustCompile(`^\| (TTFT|Token-step|Request latency|Iteration tokens|n|1-2-5 to max_model_len) \| ([^|]*) \| ([^|]*) \|`)
	specNumber = regexp.MustCompile(`\d+(?:\.\d+)?`)
	specName   = regexp.MustCompile("`([a-z0-9_]+)`")
	specRange  = regexp.MustCompile(`(\d+) → …, (?:\d+, )*(\d+)`)
)

// TestBucketsMatchSpec reads the bucket table of
// reference/vllm-observability.md and checks every family it names.
func TestBucketsMatchSpec(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(sharedDir(t), "reference", "vllm-observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MaxModelLen = 4096
	_, reg := newTestMetrics(t, cfg)
	fams := parse(t, scrape(t, reg))

	// Families the table lists that glassbox deliberately does not export.
	removed := map[string]bool{"time_per_output_token_seconds": true}
	rows := 0
	for line := range strings.Lines(string(raw)) {
		m := specRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		set, bounds, usedBy := m[1], m[2], m[3]
		var want []float64
		if set == "1-2-5 to max_model_len" {
			// The spec's own example for 4096 ends at 2000.
			want = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}
			checkOneTwoFiveExamples(t, bounds)
		} else {
			if i := strings.IndexByte(bounds, '('); i >= 0 {
				bounds = bounds[:i] // "(fixed, not tied to ...)"
			}
			for _, s := range specNumber.FindAllString(bounds, -1) {
				f, _ := strconv.ParseFloat(s, 64)
				want = append(want, f)
			}
		}
		names := specName.FindAllStringSubmatch(usedBy, -1)
		if len(names) == 0 {
			t.Errorf("bucket set %q: no family parsed from %q", set, usedBy)
		}
		for _, n := range names {
			if removed[n[1]] {
				continue
			}
			if diff := cmp.Diff(want, bucketsOf(t, fams, "vllm:"+n[1])); diff != "" {
				t.Errorf("vllm:%s buckets (set %s) (-spec +got):\n%s", n[1], set, diff)
			}
		}
	}
	if rows != 6 {
		t.Errorf("found %d bucket rows in the spec, want 6: has its table changed?", rows)
	}
}

// checkOneTwoFiveExamples checks the spec's "max_model_len N → …, last"
// examples against the bucket builder.
func checkOneTwoFiveExamples(t *testing.T, text string) {
	t.Helper()
	ex := specRange.FindAllStringSubmatch(text, -1)
	if len(ex) == 0 {
		t.Errorf("no max_model_len example found in %q", text)
	}
	for _, e := range ex {
		n, _ := strconv.Atoi(e[1])
		last, _ := strconv.ParseFloat(e[2], 64)
		b := metricspec.OneTwoFiveBuckets(n)
		if got := b[len(b)-1]; got != last {
			t.Errorf("max_model_len %d: last bucket %v, spec says %v", n, got, last)
		}
	}
}

// TestLeOnTheWire checks the le strings a scraper sees, which must be
// Python's (vLLM's) and not client_golang's.
func TestLeOnTheWire(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 2_000_000
	_, reg := newTestMetrics(t, cfg)
	text := scrape(t, reg)
	tests := []struct {
		family string
		want   []string
	}{
		{"vllm:time_to_first_token_seconds", []string{"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08",
			"0.1", "0.25", "0.5", "0.75", "1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0",
			"160.0", "640.0", "2560.0", "+Inf"}},
		{"vllm:request_prompt_tokens", []string{"1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0",
			"200.0", "500.0", "1000.0", "2000.0", "5000.0", "10000.0", "20000.0", "50000.0", "100000.0",
			"200000.0", "500000.0", "1e+06", "2e+06", "+Inf"}},
		{"vllm:request_params_n", []string{"1.0", "2.0", "5.0", "10.0", "20.0", "+Inf"}},
		{"glassbox_engine_step_duration_seconds", []string{"0.0001", "0.00025", "0.0005", "0.001", "0.0025",
			"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf"}},
	}
	le := regexp.MustCompile(`le="([^"]*)"`)
	for _, tt := range tests {
		var got []string
		for line := range strings.Lines(text) {
			if strings.HasPrefix(line, tt.family+"_bucket{") {
				got = append(got, le.FindStringSubmatch(line)[1])
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s le values (-want +got):\n%s", tt.family, diff)
		}
	}
}

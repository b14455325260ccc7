package metrics

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// TestNamesMatchRegistry checks that metricspec's table is exactly the set
// of families New registers, with the same types and HELP, so that queries
// written against its names cannot drift from the definitions.
func TestNamesMatchRegistry(t *testing.T) {
	cfg := testConfig()
	cfg.MaxLoRAs = 2             // lora_requests_info exists only with LoRA
	cfg.NumSpeculativeTokens = 3 // the spec-decode families exist only with speculation
	cfg.Offload = true           // the offload connector's only with an offload tier
	cfg.KVCacheMetrics = true    // the residency histograms only with --kv-cache-metrics
	m, reg := newTestMetrics(t, cfg)
	// The HTTP vectors have no children, and so gather nothing, until a
	// request has been served.
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
		if f, ok := metricspec.Lookup(mf.GetName()); ok {
			if f.Help != mf.GetHelp() || !strings.EqualFold(f.Kind.String(), mf.GetType().String()) {
				t.Errorf("%s registered as %s %q, metricspec says %s %q", f.Name, mf.GetType(), mf.GetHelp(), f.Kind, f.Help)
			}
		}
	}
	for _, f := range metricspec.Families() {
		want = append(want, f.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metricspec families vs registered families (-metricspec +registry):\n%s", diff)
	}
}

func TestBucketLabel(t *testing.T) {
	// The le values a scrape of glassbox carries for these bounds.
	_, reg := newTestMetrics(t, testConfig())
	text := scrape(t, reg)
	for _, tt := range []struct {
		v    float64
		want string
	}{{0.5, "0.5"}, {10, "10.0"}, {0.001, "0.001"}, {math.Inf(1), "+Inf"}} {
		got := metricspec.BucketLabel(tt.v)
		if got != tt.want {
			t.Errorf("BucketLabel(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if !strings.Contains(text, `le="`+got+`"`) {
			t.Errorf("no bucket with le=%q in the exposition", got)
		}
	}
	for _, b := range slices.Concat(metricspec.TTFTBuckets(), metricspec.TokenStepBuckets(), metricspec.RequestLatencyBuckets()) {
		if !strings.Contains(text, `le="`+metricspec.BucketLabel(b)+`"`) {
			t.Errorf("exported bucket bound %v is not an le value of the exposition", b)
		}
	}
}

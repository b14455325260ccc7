package metrics

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNamesMatchRegistry checks that FamilyNames is exactly the set of
// families New registers, so that queries written against the constants
// cannot drift from the definitions.
func TestNamesMatchRegistry(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	// The HTTP vectors have no children, and so gather nothing, until a
	// request has been served.
	m.InstrumentHTTP("/v1/completions", http.NotFoundHandler()).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	want := FamilyNames()
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FamilyNames() vs registered families (-names.go +registry):\n%s", diff)
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
		got := BucketLabel(tt.v)
		if got != tt.want {
			t.Errorf("BucketLabel(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if !strings.Contains(text, `le="`+got+`"`) {
			t.Errorf("no bucket with le=%q in the exposition", got)
		}
	}
	for _, b := range slices.Concat(TTFTBuckets(), InterTokenLatencyBuckets(), RequestLatencyBuckets()) {
		if !strings.Contains(text, `le="`+BucketLabel(b)+`"`) {
			t.Errorf("exported bucket bound %v is not an le value of the exposition", b)
		}
	}
}

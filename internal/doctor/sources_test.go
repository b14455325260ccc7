package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// exposition renders a snapshot as Prometheus text, as a server would
// expose it, so the direct source's parser is what reads it back.
func exposition(s Snapshot, info map[string]map[string]string) string {
	var b strings.Builder
	hist := map[string]bool{}
	for _, f := range histogramFamilies() {
		hist[f+"_sum"], hist[f+"_count"] = true, true
	}
	keys := make([]string, 0, len(s.Values))
	for k := range s.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	typed := map[string]bool{}
	for _, k := range keys {
		v := s.Values[k]
		switch {
		case hist[k] || k == keyAborts:
		case strings.Contains(k, "{"): // one labelled series of a family (the keys sort a family's series together)
			name, labels, _ := strings.Cut(strings.TrimSuffix(k, "}"), "{")
			if !typed[name] {
				typed[name] = true
				kind := "gauge"
				if strings.HasSuffix(name, "_total") {
					kind = "counter"
				}
				fmt.Fprintf(&b, "# TYPE %s %s\n", name, kind)
			}
			fmt.Fprintf(&b, "%s{model_name=\"m\",%s} %g\n", name, labels, v)
		case k == metricspec.RequestSuccess:
			fmt.Fprintf(&b, "# TYPE %s counter\n%s{finished_reason=\"abort\"} %g\n%s{finished_reason=\"stop\"} %g\n", k, k, s.Values[keyAborts], k, v-s.Values[keyAborts])
		case strings.HasSuffix(k, "_total"):
			fmt.Fprintf(&b, "# TYPE %s counter\n%s{model_name=\"m\"} %g\n", k, k, v)
		default:
			fmt.Fprintf(&b, "# TYPE %s gauge\n%s{model_name=\"m\"} %g\n", k, k, v)
		}
	}
	for _, f := range histogramFamilies() {
		if _, ok := s.Values[f+"_count"]; !ok {
			continue
		}
		fmt.Fprintf(&b, "# TYPE %s histogram\n", f)
		bs := s.Buckets[f]
		les := make([]float64, 0, len(bs))
		for le := range bs {
			les = append(les, le)
		}
		sort.Float64s(les)
		for _, le := range les {
			if !math.IsInf(le, 1) {
				fmt.Fprintf(&b, "%s_bucket{le=\"%g\"} %g\n", f, le, bs[le])
			}
		}
		fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %g\n%s_sum %g\n%s_count %g\n", f, s.Values[f+"_count"], f, s.Values[f+"_sum"], f, s.Values[f+"_count"])
	}
	for f, labels := range info {
		var ls []string
		for k, v := range labels {
			ls = append(ls, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(ls)
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{%s} 1\n", f, f, strings.Join(ls, ","))
	}
	return b.String()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// directWindow samples the synthetic target's expositions through the
// direct source, one per second of fake time.
func directWindow(t *testing.T, w *Window) *Window {
	t.Helper()
	var got *Window
	synctest.Test(t, func(t *testing.T) {
		i := 0
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body := exposition(w.Snapshots[min(i, len(w.Snapshots)-1)], w.Info)
			i++
			return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}}, nil
		})}
		var err error
		got, err = Collect(context.Background(), Config{MetricsURL: "http://test:8000/metrics", Duration: time.Duration(len(w.Snapshots)-1) * time.Second,
			Interval: time.Second, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
	})
	return got
}

// fakePrometheus answers the doctor's range queries from a synthetic
// window, one sample per snapshot.
func fakePrometheus(t *testing.T, w *Window, matchers string) *httptest.Server {
	answers := map[string][]promSeries{}
	for _, spec := range scalarSeries() {
		var ps promSeries
		for _, s := range w.Snapshots {
			if v, ok := s.Values[spec.key]; ok {
				ps.Values = append(ps.Values, promPoint{s.T.UnixMilli(), v})
			}
		}
		if len(ps.Values) > 0 {
			answers[seriesQuery(spec, matchers)] = []promSeries{ps}
		}
	}
	for _, f := range quantileFamilies() {
		byLE := map[float64]*promSeries{}
		for _, s := range w.Snapshots {
			for le, c := range s.Buckets[f] {
				if byLE[le] == nil {
					byLE[le] = &promSeries{Metric: map[string]string{"le": strconv.FormatFloat(le, 'g', -1, 64)}}
				}
				byLE[le].Values = append(byLE[le].Values, promPoint{s.T.UnixMilli(), c})
			}
		}
		var out []promSeries
		for _, ps := range byLE {
			out = append(out, *ps)
		}
		answers[bucketQuery(f, matchers)] = out
	}
	for f, labels := range w.Info {
		m := map[string]string{"__name__": f}
		for k, v := range labels {
			m[k] = v
		}
		answers[sel(f, matchers)] = []promSeries{{Metric: m, Values: []promPoint{{w.Snapshots[0].T.UnixMilli(), 1}}}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.URL.Path != "/api/v1/query_range" {
			http.Error(rw, "bad request", http.StatusBadRequest)
			return
		}
		type series struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		result := []series{}
		for _, ps := range answers[r.Form.Get("query")] {
			s := series{Metric: ps.Metric, Values: [][2]any{}}
			for _, p := range ps.Values {
				s.Values = append(s.Values, [2]any{float64(p.ms) / 1000, strconv.FormatFloat(p.v, 'g', -1, 64)})
			}
			result = append(result, s)
		}
		json.NewEncoder(rw).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func promWindow(t *testing.T, w *Window) *Window {
	t.Helper()
	srv := fakePrometheus(t, w, `instance="test:8000"`)
	n := len(w.Snapshots)
	got, err := Collect(context.Background(), Config{PrometheusURL: srv.URL, Selector: `{instance="test:8000"}`,
		Since: time.Duration(n-1) * time.Second, Interval: time.Second, End: w.Snapshots[n-1].T})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSourcesAgree: every synthetic case reads the same through the
// direct source and through Prometheus, and the rules say the same.
func TestSourcesAgree(t *testing.T) {
	for _, tc := range ruleCases() {
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			l := healthy()
			tc.modify(&l)
			w := l.window()
			want := Diagnose(w, nil).Names()
			direct, prom := directWindow(t, w), promWindow(t, w)
			if d := cmp.Diff(want, Diagnose(direct, nil).Names()); d != "" {
				t.Errorf("direct scrapes (-synthetic +direct):\n%s", d)
			}
			if d := cmp.Diff(want, Diagnose(prom, nil).Names()); d != "" {
				t.Errorf("prometheus (-synthetic +prometheus):\n%s", d)
			}
			if len(direct.Snapshots) != len(w.Snapshots) || len(prom.Snapshots) != len(w.Snapshots) {
				t.Errorf("readings: direct %d, prometheus %d, want %d", len(direct.Snapshots), len(prom.Snapshots), len(w.Snapshots))
			}
		})
	}
}

// TestRunReadsOneWindow: doctor.Run through a Prometheus that is
// restarting (its first answer a 503) reads every query over the window
// it fixed when it started, not one that moves on by however long
// Prometheus took to come back (Run applied its defaults twice: the
// instances over one window, the target's series over a later one, whose
// steps then missed the series the first one saw).
func TestRunReadsOneWindow(t *testing.T) {
	w := healthy().window()
	n := len(w.Snapshots)
	fake := fakePrometheus(t, w, `instance="test:8000"`)
	var mu sync.Mutex
	ends := map[string]bool{}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		r.ParseForm()
		ends[r.Form.Get("end")] = true
		mu.Unlock()
		if first {
			http.Error(rw, "starting", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.PostForm(fake.URL+r.URL.Path, r.Form)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(rw, resp.Body)
	}))
	defer srv.Close()
	// The clock: the window's end is the last snapshot when Run starts;
	// every later reading of the clock is ten seconds on.
	now := w.Snapshots[n-1].T.Add(time.Second)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := now
		now = now.Add(10 * time.Second)
		return t
	}
	rep, err := Run(context.Background(), Config{PrometheusURL: srv.URL, Selector: `{instance="test:8000"}`,
		Since: time.Duration(n-1) * time.Second, Interval: time.Second, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 1 || rep.Readings != n || !rep.End.Equal(w.Snapshots[n-1].T) {
		t.Errorf("queries ended at %v; report %v to %v with %d readings; want one end, %v, and %d readings", slices.Sorted(maps.Keys(ends)), rep.Start, rep.End, rep.Readings, w.Snapshots[n-1].T, n)
	}
}

func TestDirectSourceCountsFailedScrapes(t *testing.T) {
	w := healthy().window()
	synctest.Test(t, func(t *testing.T) {
		i := 0
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			i++
			if i%2 == 0 {
				return nil, fmt.Errorf("connection refused")
			}
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(exposition(w.Snapshots[i], w.Info)))}, nil
		})}
		got, err := Collect(context.Background(), Config{MetricsURL: "http://test:8000/metrics", Duration: 9 * time.Second, Interval: time.Second, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		rep := Diagnose(got, nil)
		if got.Missed != 5 || !slices.Contains(rep.Names(), "metrics-stale") || rep.ExitCode() != 2 {
			t.Errorf("missed %d, findings %v, exit %d; want 5 missed, a critical metrics-stale", got.Missed, rep.Names(), rep.ExitCode())
		}
	})
}

func TestCollectFailsWithoutTwoReadings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return nil, fmt.Errorf("connection refused")
		})}
		_, err := Collect(context.Background(), Config{MetricsURL: "http://test:8000/metrics", Duration: 3 * time.Second, Interval: time.Second, HTTPClient: client})
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want the scrape error", err)
		}
	})
}

func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{
		{},
		{MetricsURL: "http://a/metrics", PrometheusURL: "http://b"},
		{MetricsURL: "ftp://a/metrics"},
		{MetricsURL: "http://a/metrics", Duration: time.Second, Interval: 5 * time.Second},
		{PrometheusURL: "http://b", Since: 24 * time.Hour, Interval: time.Second},
	} {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if _, err := ParseSelector(`{a="b"}[5m]`); err == nil {
		t.Error("a range selector was accepted as a label selector")
	}
}

func TestPromQLOfEvidence(t *testing.T) {
	w := healthy().window()
	p := newPromQL(w, time.Second)
	want := `sum(rate(vllm:num_preemptions_total{instance="test:8000"}[19s]))`
	if got := p.rate(metricspec.NumPreemptions); got != want {
		t.Errorf("rate = %s, want %s", got, want)
	}
	if got, want := p.quantile(0.9, metricspec.TimeToFirstToken), `histogram_quantile(0.9, sum by (le) (increase(vllm:time_to_first_token_seconds_bucket{instance="test:8000"}[19s])))`; got != want {
		t.Errorf("quantile = %s, want %s", got, want)
	}
}

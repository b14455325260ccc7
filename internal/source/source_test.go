package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

var defaults = doctor.NewDiagnoser(doctor.DefaultThresholds(), doctor.Hints{})

// recorded are the corpus's recorded windows (a simulated scenario of
// every class, read in full clothes: glassbox's series and DCGM's).
func recorded(t *testing.T) map[string]*doctor.Window {
	t.Helper()
	files, err := filepath.Glob("../corpus/testdata/*.window.json.gz")
	if err != nil || len(files) < 10 {
		t.Fatalf("the corpus's recorded windows: %d files, %v", len(files), err)
	}
	out := map[string]*doctor.Window{}
	for _, f := range files {
		w, err := corpus.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".window.json.gz")] = w
	}
	return out
}

// exposition renders a reading as Prometheus text, as a server would
// expose it, so that Append is what reads it back: each family of the
// doctor's schema once, a labelled key as that series, the rest of a
// family's sum as one more series.
func exposition(s doctor.Snapshot, info map[string]map[string]string) string {
	var b strings.Builder
	byFamily := map[string][]doctor.Series{}
	for _, sp := range doctor.ScalarSeries() {
		byFamily[sp.Family] = append(byFamily[sp.Family], sp)
	}
	histogram := func(f string) (string, bool) {
		base, ok := strings.CutSuffix(f, "_sum")
		return base, ok && slices.ContainsFunc(byFamily[base+"_count"], func(sp doctor.Series) bool { return sp.Key == base+"_count" })
	}
	for _, f := range slices.Sorted(maps.Keys(byFamily)) {
		if base, ok := histogram(f); ok {
			sum, okS := s.Values[f]
			count, okC := s.Values[base+"_count"]
			if !okS || !okC {
				continue
			}
			fmt.Fprintf(&b, "# TYPE %s histogram\n", base)
			bs := s.Buckets[base]
			for _, le := range slices.Sorted(maps.Keys(bs)) {
				if !math.IsInf(le, 1) {
					fmt.Fprintf(&b, "%s_bucket{le=\"%g\"} %g\n", base, le, bs[le])
				}
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %g\n%s_sum %g\n%s_count %g\n", base, count, base, sum, base, count)
			continue
		}
		if base, ok := strings.CutSuffix(f, "_count"); ok {
			if _, hist := histogram(base + "_sum"); hist {
				continue // written with its histogram
			}
		}
		kind := "gauge"
		if strings.HasSuffix(f, "_total") {
			kind = "counter"
		}
		var lines []string
		rest, whole := 0.0, false
		label := ""
		for _, sp := range byFamily[f] {
			v, ok := s.Values[sp.Key]
			switch {
			case !ok:
			case sp.Label == "":
				rest, whole = rest+v, true
			default:
				label = sp.Label
				rest -= v
				lines = append(lines, fmt.Sprintf("%s{model_name=\"m\",%s=%q} %g", f, sp.Label, sp.Value, v))
			}
		}
		switch {
		case whole && label != "":
			lines = append(lines, fmt.Sprintf("%s{model_name=\"m\",%s=\"other\"} %g", f, label, rest))
		case whole && f == metricspec.DCGMGREngineActive:
			lines = append(lines, fmt.Sprintf("%s{gpu=\"0\",modelName=%q} %g", f, info[doctor.InfoDCGM]["modelName"], rest))
		case whole && f == metricspec.NumRequestsRunning:
			// One series per engine rank, as vLLM's data-parallel ranks
			// export theirs: the first holds the sum.
			n, _ := strconv.Atoi(info[doctor.InfoEngines]["count"])
			for e := range max(n, 1) {
				lines = append(lines, fmt.Sprintf("%s{engine=\"%d\",model_name=\"m\"} %g", f, e, map[bool]float64{true: rest}[e == 0]))
			}
		case whole:
			lines = append(lines, fmt.Sprintf("%s{model_name=\"m\"} %g", f, rest))
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "# TYPE %s %s\n%s\n", f, kind, strings.Join(lines, "\n"))
		}
	}
	for _, f := range doctor.InfoFamilies() {
		labels, ok := info[f]
		if !ok {
			continue
		}
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

// answer is a 200 with body.
func answer(body string) *http.Response {
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}}
}

// step is a window's time between readings.
func step(w *doctor.Window) time.Duration { return w.Snapshots[1].T.Sub(w.Snapshots[0].T) }

// scraped samples w's readings, one exposition per scrape, through
// Scrape in fake time.
func scraped(t *testing.T, w *doctor.Window) *doctor.Window {
	t.Helper()
	var got *doctor.Window
	synctest.Test(t, func(t *testing.T) {
		i := 0
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body := exposition(w.Snapshots[min(i, len(w.Snapshots)-1)], w.Info)
			i++
			return answer(body), nil
		})}
		ms, err := Scrape{URL: "http://test:8000/metrics", Duration: time.Duration(len(w.Snapshots)-1) * step(w), Interval: step(w), Client: client}.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Instance != "test:8000" {
			t.Fatalf("a scrape's members: %+v", ms)
		}
		got = ms[0].Window
	})
	return got
}

// promAnswers are a fake Prometheus's answers to the queries a window
// of w under matchers takes, by query.
func promAnswers(w *doctor.Window, matchers string, answers map[string][]promSeries) {
	for _, sp := range doctor.ScalarSeries() {
		var ps promSeries
		for _, s := range w.Snapshots {
			if v, ok := s.Values[sp.Key]; ok {
				ps.Values = append(ps.Values, promPoint{s.T.UnixMilli(), v})
			}
		}
		m := matchers
		if sp.DCGM {
			m = doctor.WithoutJob(matchers)
		}
		if len(ps.Values) > 0 {
			answers[seriesQuery(sp, m)] = []promSeries{ps}
		}
	}
	for _, f := range doctor.BucketFamilies() {
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
		q := doctor.SeriesSelector(f, matchers)
		switch f {
		case doctor.InfoDCGM:
			q = "count by (modelName) (" + doctor.SeriesSelector(metricspec.DCGMGREngineActive, doctor.WithoutJob(matchers)) + ")"
		case doctor.InfoEngines:
			n, _ := strconv.Atoi(labels["count"])
			for e := range n {
				answers[engineQuery(matchers)] = append(answers[engineQuery(matchers)], promSeries{Metric: map[string]string{"engine": strconv.Itoa(e)}, Values: []promPoint{{w.Snapshots[0].T.UnixMilli(), 1}}})
			}
			continue
		}
		answers[q] = []promSeries{{Metric: m, Values: []promPoint{{w.Snapshots[0].T.UnixMilli(), 1}}}}
	}
}

// fakePrometheus answers range queries from answers (nothing for any
// other query) as Prometheus does: at each step, a series' latest sample
// at or before it, within five minutes.
func fakePrometheus(t *testing.T, answers map[string][]promSeries) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.URL.Path != "/api/v1/query_range" {
			http.Error(rw, "bad request", http.StatusBadRequest)
			return
		}
		num := func(k string) int64 {
			f, _ := strconv.ParseFloat(r.Form.Get(k), 64)
			return int64(math.Round(f * 1000))
		}
		start, end, st := num("start"), num("end"), num("step")
		type series struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		result := []series{}
		for _, ps := range answers[r.Form.Get("query")] {
			s := series{Metric: ps.Metric, Values: [][2]any{}}
			for at := start; at <= end; at += st {
				i := sort.Search(len(ps.Values), func(i int) bool { return ps.Values[i].ms > at }) - 1
				if i >= 0 && at-ps.Values[i].ms <= 5*60*1000 {
					s.Values = append(s.Values, [2]any{float64(at) / 1000, strconv.FormatFloat(ps.Values[i].v, 'g', -1, 64)})
				}
			}
			result = append(result, s)
		}
		json.NewEncoder(rw).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// end is the end of w's window on its step's grid: a simulation's last
// reading may come early.
func end(w *doctor.Window) time.Time {
	return w.Snapshots[0].T.Add(time.Duration(len(w.Snapshots)-1) * step(w))
}

// queried reads w back through Prometheus.
func queried(t *testing.T, w *doctor.Window) *doctor.Window {
	t.Helper()
	answers := map[string][]promSeries{}
	promAnswers(w, `instance="test:8000"`, answers)
	srv := fakePrometheus(t, answers)
	n := len(w.Snapshots)
	ms, err := Prometheus{URL: srv.URL, Selector: `{instance="test:8000"}`, Since: time.Duration(n-1) * step(w), Step: step(w), End: end(w)}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Window.Selector != `{instance="test:8000"}` {
		t.Fatalf("one target's members: %+v", ms)
	}
	return ms[0].Window
}

// TestSourcesAgree: every recorded corpus window, exposed as a server
// would, reads the same through a direct scrape and through Prometheus,
// and the doctor says the same of all three.
func TestSourcesAgree(t *testing.T) {
	for name, w := range recorded(t) {
		t.Run(name, func(t *testing.T) {
			want := defaults.Diagnose(w, nil)
			direct, prom := scraped(t, w), queried(t, w)
			for src, got := range map[string]*doctor.Window{"direct": direct, "prometheus": prom} {
				if len(got.Snapshots) != len(w.Snapshots) || got.Missed != 0 {
					t.Errorf("%s: %d readings, %d missed; want %d, none", src, len(got.Snapshots), got.Missed, len(w.Snapshots))
				}
				rep := defaults.Diagnose(got, nil)
				if d := cmp.Diff(want.Names(), rep.Names()); d != "" {
					t.Errorf("%s (-recorded +%s):\n%s", src, src, d)
				}
				if d := cmp.Diff(answers(want), answers(rep)); d != "" {
					t.Errorf("%s: the three answers (-recorded +%s):\n%s", src, src, d)
				}
			}
		})
	}
}

// answers are a report's three answers and their kinds.
func answers(r *doctor.Report) []string {
	var out []string
	for _, q := range r.Questions.List() {
		out = append(out, q.A.Answer+" "+q.A.Kind)
	}
	return out
}

// TestPrometheusReadsOneWindow: a Prometheus that is restarting (its
// first answer a 503) is read over the window fixed when Collect started,
// not one that moves on by however long Prometheus took to come back.
func TestPrometheusReadsOneWindow(t *testing.T) {
	var w *doctor.Window
	for _, r := range recorded(t) {
		w = r
		break
	}
	n := len(w.Snapshots)
	answers := map[string][]promSeries{}
	promAnswers(w, `instance="test:8000"`, answers)
	fake := fakePrometheus(t, answers)
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
	// The clock: the window's end is the last reading when Collect starts;
	// every later reading of the clock is ten steps on.
	now := end(w).Add(step(w))
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := now
		now = now.Add(10 * step(w))
		return t
	}
	ms, err := Prometheus{URL: srv.URL, Selector: `{instance="test:8000"}`, Since: time.Duration(n-1) * step(w), Step: step(w), Now: clock}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := ms[0].Window
	if len(ends) != 1 || len(got.Snapshots) != n || !got.Snapshots[n-1].T.Equal(end(w)) {
		t.Errorf("queries ended at %v; %d readings to %v; want one end, %d readings to %v", slices.Sorted(maps.Keys(ends)), len(got.Snapshots), got.Snapshots[len(got.Snapshots)-1].T, n, end(w))
	}
}

// TestPrometheusFleet: a selector matching two instances reads each one's
// series alone, over the same window, as one member each with its model.
func TestPrometheusFleet(t *testing.T) {
	var ws []*doctor.Window
	for _, name := range []string{"healthy_h100_llama-3.1-8b_chat", "kv-capacity_h100_llama-3.1-8b_long-generations"} {
		w, err := corpus.ReadFile("../corpus/testdata/" + name + ".window.json.gz")
		if err != nil {
			t.Skipf("the corpus no longer records %s: %v", name, err)
		}
		ws = append(ws, w)
	}
	answers := map[string][]promSeries{}
	var running []promSeries
	for i, w := range ws {
		in := fmt.Sprintf("10.0.0.%d:8000", i+1)
		promAnswers(w, fmt.Sprintf(`job="vllm", instance=%q`, in), answers)
		running = append(running, promSeries{Metric: map[string]string{"instance": in, "model_name": "m"}, Values: []promPoint{{w.Snapshots[0].T.UnixMilli(), 1}}})
	}
	answers["count by (instance, model_name) ("+doctor.SeriesSelector(metricspec.NumRequestsRunning, `job="vllm"`)+")"] = running
	srv := fakePrometheus(t, answers)
	w := ws[0]
	n := len(w.Snapshots)
	ms, err := Prometheus{URL: srv.URL, Selector: `{job="vllm"}`, Since: time.Duration(n-1) * step(w), Step: step(w), End: end(w)}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Instance != "10.0.0.1:8000" || ms[1].ModelName != "m" || ms[1].Window.Selector != `{job="vllm", instance="10.0.0.2:8000"}` {
		t.Fatalf("members %+v", ms)
	}
	for i, m := range ms {
		if d := cmp.Diff(defaults.Diagnose(ws[i], nil).Names(), defaults.Diagnose(m.Window, nil).Names()); d != "" {
			t.Errorf("%s (-recorded +read):\n%s", m.Instance, d)
		}
	}
}

func TestScrapeCountsFailedScrapes(t *testing.T) {
	var w *doctor.Window
	for _, r := range recorded(t) {
		w = r
		break
	}
	synctest.Test(t, func(t *testing.T) {
		i := 0
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			i++
			if i%2 == 0 {
				return nil, fmt.Errorf("connection refused")
			}
			return answer(exposition(w.Snapshots[i], w.Info)), nil
		})}
		ms, err := Scrape{URL: "http://test:8000/metrics", Duration: 9 * time.Second, Interval: time.Second, Client: client}.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := ms[0].Window
		rep := defaults.Diagnose(got, nil)
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
		_, err := Scrape{URL: "http://test:8000/metrics", Duration: 3 * time.Second, Interval: time.Second, Client: client}.Collect(context.Background())
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want the scrape error", err)
		}
	})
}

func TestConfigChecks(t *testing.T) {
	for _, s := range []Source{
		Scrape{},
		Scrape{URL: "ftp://a/metrics"},
		Scrape{URL: "http://a/metrics", DCGMURL: "a:9400"},
		Scrape{URL: "http://a/metrics", Duration: time.Second, Interval: 5 * time.Second},
		Prometheus{URL: "b:9090"},
		Prometheus{URL: "http://b", Since: 24 * time.Hour, Step: time.Second},
		Prometheus{URL: "http://b", Selector: `{a="b"}[5m]`},
		File{Path: "no-such-file"},
	} {
		if _, err := s.Collect(context.Background()); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// TestEngineRanks: a target's data-parallel ranks are counted from vLLM's
// engine label on its running gauge, by a direct scrape and through
// Prometheus alike, and the window says how many (the doctor reads the
// ranks' own time per rank).
func TestEngineRanks(t *testing.T) {
	var w *doctor.Window
	for _, r := range recorded(t) {
		w = r
		break
	}
	w.Info[doctor.InfoEngines] = map[string]string{"count": "2"}
	for src, got := range map[string]*doctor.Window{"direct": scraped(t, w), "prometheus": queried(t, w)} {
		if n := got.Info[doctor.InfoEngines]["count"]; n != "2" {
			t.Errorf("%s: engines %q, want 2", src, n)
		}
	}
	one := &doctor.Window{Info: map[string]map[string]string{}, Present: map[string]bool{}}
	sc, err := promtext.Parse(strings.NewReader("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	Append(one, time.Unix(0, 0), sc)
	if n := one.Info[doctor.InfoEngines]["count"]; n != "1" {
		t.Errorf("a running gauge without an engine label: engines %q, want 1", n)
	}
}

// TestFleetSelector: a Prometheus source names its fleet by its selector
// in braces, however given; sources of one target name none.
func TestFleetSelector(t *testing.T) {
	for sel, want := range map[string]string{`job="vllm"`: `{job="vllm"}`, ` { job="vllm", model_name="m" } `: `{job="vllm", model_name="m"}`, "": "{}"} {
		if got := (Prometheus{URL: "http://p:9090", Selector: sel}).FleetSelector(); got != want {
			t.Errorf("selector %q: fleet %q, want %q", sel, got, want)
		}
	}
	for _, s := range []Source{Scrape{URL: "http://t:8000/metrics"}, File{Path: "m.txt"}} {
		if got := s.FleetSelector(); got != "" {
			t.Errorf("%T: fleet %q", s, got)
		}
	}
}

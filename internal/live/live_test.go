package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// capture is a real vLLM 0.30 scrape, with its counters moved on by step
// so that readings differ.
func capture(t testing.TB) func(step int) []byte {
	b, err := os.ReadFile(reftest.Path(t, "compat", "vllm-0.30-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	return func(step int) []byte {
		// vllm:generation_tokens_total{…} 0.0 → step×100
		return []byte(strings.Replace(text, `vllm:generation_tokens_total{engine="0",model_name="qwen38"} 32144.0`,
			`vllm:generation_tokens_total{engine="0",model_name="qwen38"} `+strconv.Itoa(step*100), 1))
	}
}

func newPage(t testing.TB, now *time.Time, history time.Duration) (*Page, *int) {
	t.Helper()
	step := 0
	read := capture(t)
	p, err := New(Config{Interval: time.Second, History: history, Now: func() time.Time { return *now },
		Targets: []Target{{Name: "vllm", Read: func(context.Context) ([]byte, error) { step++; return read(step), nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	return p, &step
}

// TestHistoryIsBounded: however long the page samples, it keeps History.
func TestHistoryIsBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(t, &now, time.Minute)
	for range 600 {
		p.Sample(context.Background())
		now = now.Add(time.Second)
	}
	if n := len(p.inst[0].window.Snapshots); n < 59 || n > 62 {
		t.Errorf("%d readings kept over a minute of history at 1 s", n)
	}
}

// TestStateSince: the page asks for what is new, and gets only that; rates
// come from the counters' increase.
func TestStateSince(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(t, &now, time.Hour)
	for range 5 {
		p.Sample(context.Background())
		now = now.Add(time.Second)
	}
	get := func(since float64) State {
		rec := httptest.NewRecorder()
		p.Handler("/dashboard").ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/api/state?since="+strconv.FormatFloat(since, 'f', -1, 64), nil))
		var st State
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%v: %s", err, rec.Body.String())
		}
		return st
	}
	all := get(0)
	s := all.Items[0].Series
	if len(s.T) != 4 || all.Items[0].Engine != "vllm" {
		t.Fatalf("%d points from 5 readings, engine %s", len(s.T), all.Items[0].Engine)
	}
	if float64(s.GenTPS[3]) != 100 {
		t.Errorf("generation rate %v, want 100 tokens/s", s.GenTPS[3])
	}
	if newer := get(float64(s.T[2])); len(newer.Items[0].Series.T) != 1 || newer.Items[0].Series.T[0] != s.T[3] {
		t.Errorf("since the third point: %v", newer.Items[0].Series.T)
	}
}

// BenchmarkSample is one reading of a real vLLM scrape: parse, keep, and
// the doctor over the findings window.
func BenchmarkSample(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(b, &now, 15*time.Minute)
	for range 450 { // a full history at 2 s
		p.Sample(context.Background())
		now = now.Add(2 * time.Second)
	}
	for b.Loop() {
		p.Sample(context.Background())
		now = now.Add(2 * time.Second)
	}
}

// BenchmarkStateFull and BenchmarkStateIncremental are a page's first
// fetch of a full 15-minute history and a refresh's; BenchmarkStateFullFresh
// the first fetch after a new reading, which evaluates the history's
// signals (once a reading, and only when a page asks).
func BenchmarkStateFull(b *testing.B)        { benchState(b, false, false) }
func BenchmarkStateFullFresh(b *testing.B)   { benchState(b, false, true) }
func BenchmarkStateIncremental(b *testing.B) { benchState(b, true, false) }

func benchState(b *testing.B, incremental, fresh bool) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(b, &now, 15*time.Minute)
	for range 450 {
		p.Sample(context.Background())
		now = now.Add(2 * time.Second)
	}
	since := "0"
	if incremental {
		since = "1800000896" // the last point but one
	}
	h := p.Handler("/dashboard")
	var size int
	for b.Loop() {
		if fresh {
			p.inst[0].full = nil
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/api/state?since="+since, nil))
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/refresh")
}

// TestQuantileAcrossAReset: a server restarted between two readings has
// smaller bucket counts than before; the interval's quantile counts the
// restart from zero (as the doctor and Prometheus do) instead of drawing
// negative counts.
// defaults is the doctor a page has without thresholds or hints.
var defaults = doctor.NewDiagnoser(doctor.DefaultThresholds(), doctor.Hints{})

func TestQuantileAcrossAReset(t *testing.T) {
	const f = "vllm:time_to_first_token_seconds"
	t0 := time.Unix(1_800_000_000, 0)
	snap := func(sec int, b map[float64]float64) doctor.Snapshot {
		return doctor.Snapshot{T: t0.Add(time.Duration(sec) * time.Second), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{f: b}}
	}
	a := snap(0, map[float64]float64{0.1: 50, 1: 90, math.Inf(1): 100})
	b := snap(2, map[float64]float64{0.1: 0, 1: 4, math.Inf(1): 4})
	c := snap(4, map[float64]float64{0.1: 0, 1: 4, math.Inf(1): 4})
	w := doctor.NewWindow("live", "t")
	w.Snapshots = []doctor.Snapshot{a, b, c}
	s := derive(defaults.Evaluate(w), w, time.Time{}, time.Time{})
	if got := float64(s.Latency["ttft_p50"][0]); !(got > 0.1 && got <= 1) {
		t.Errorf("p50 across a reset = %v, want within the (0.1, 1] bucket that holds the new observations", got)
	}
	if got := float64(s.Latency["ttft_p50"][1]); !math.IsNaN(got) {
		t.Errorf("p50 with nothing observed = %v, want NaN", got)
	}
}

// TestBadQueriesGetErrorBodies: malformed parameters are a 400 with
// OpenAI's error body, not a silent default; a vLLM target has no engine
// state (404).
func TestBadQueriesGetErrorBodies(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(t, &now, time.Hour)
	for path, want := range map[string]int{
		"/dashboard/api/state?since=yesterday": 400, "/dashboard/api/engine?instance=abc": 400,
		"/dashboard/api/state?range=soon": 400, "/dashboard/api/state?range=-5m": 400, "/dashboard/api/state?range=2400h": 400,
		"/dashboard/api/state?from=1800000000": 400, "/dashboard/api/state?from=1800000100&to=1800000000": 400,
		"/dashboard/api/state?range=5m&from=1800000000&to=1800000100": 400, "/dashboard/api/state?from=NaN&to=1": 400,
		"/dashboard/api/engine?instance=0": 404, "/dashboard/api/engine?instance=7": 404,
	} {
		rec := httptest.NewRecorder()
		p.Handler("/dashboard").ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var body struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != want || body.Error.Code != want || body.Error.Message == "" ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %s, want %d with an error body", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
		}
	}
}

// state asks the page for path's state.
func state(t *testing.T, p *Page, query string) State {
	t.Helper()
	rec := httptest.NewRecorder()
	p.Handler("/dashboard").ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/api/state?"+query, nil))
	var st State
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != 200 {
		t.Fatalf("%d %v: %s", rec.Code, err, rec.Body.String())
	}
	return st
}

// TestLiveWindow: a live window ends now and spans its range, but starts
// no earlier than the first reading (at least a minute, so that one
// reading has an axis); the answers read the last FindingsWindow.
func TestLiveWindow(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	p, _ := newPage(t, &now, time.Hour)
	p.Sample(context.Background())
	st := state(t, p, "")
	if w := st.Window; !w.Live || w.To != 1_800_000_000 || w.From != w.To-60 || w.Range != 900 || st.Items[0].Readings != 1 {
		t.Errorf("at one reading: window %+v, %d readings; want the minute up to it", w, st.Items[0].Readings)
	}
	for range 200 {
		now = now.Add(time.Second)
		p.Sample(context.Background())
	}
	st = state(t, p, "")
	if w := st.Window; w.From != 1_800_000_000 || w.To != 1_800_000_200 || len(st.Items[0].Series.T) != 200 {
		t.Errorf("after 200 s: window %+v with %d intervals; want since the first reading", w, len(st.Items[0].Series.T))
	}
	if st.Items[0].Readings != 201 {
		t.Errorf("%d readings in the window, want 201", st.Items[0].Readings)
	}
	if a := st.Items[0].Answered; a == nil || a.To != 1_800_000_200 || a.From != 1_800_000_080 {
		t.Errorf("the answers read %+v, want the last 2 minutes", a)
	}
	st = state(t, p, "range=1m")
	if w := st.Window; w.From != 1_800_000_140 || w.Range != 60 || len(st.Items[0].Series.T) != 60 {
		t.Errorf("the last minute: window %+v with %d intervals", w, len(st.Items[0].Series.T))
	}
	// A refresh gets what is new, from the recent signals.
	if st = state(t, p, "range=1m&since=1800000199"); len(st.Items[0].Series.T) != 1 || float64(st.Items[0].Series.T[0]) != 1_800_000_200 || st.Items[0].Readings != 61 {
		t.Errorf("a refresh got %v with %d readings in the window", st.Items[0].Series.T, st.Items[0].Readings)
	}
}

// TestFixedWindow: a window from–to in the past is read as the doctor
// reads it: its intervals only, and the answers over its readings.
func TestFixedWindow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p, _ := newPage(t, &now, time.Hour)
	for range 120 {
		p.Sample(context.Background())
		now = now.Add(time.Second)
	}
	st := state(t, p, "from=1800000050&to=1800000100")
	in := st.Items[0]
	if st.Window.Live || len(in.Series.T) != 50 || float64(in.Series.T[0]) != 1_800_000_051 || float64(in.Series.T[49]) != 1_800_000_100 || in.Readings != 51 {
		t.Errorf("window %+v: %d intervals %v…, %d readings", st.Window, len(in.Series.T), in.Series.T[:1], in.Readings)
	}
	if a := in.Answered; a == nil || a.From != 1_800_000_050 || a.To != 1_800_000_100 || in.Questions == nil {
		t.Errorf("the answers read %+v (%v), want the window", a, in.Questions)
	}
}

// TestFailingTarget: a target whose reading fails is shown with the
// error, after those the doctor ranked, and loses nothing it had.
func TestFailingTarget(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	read := capture(t)
	step := 0
	p, err := New(Config{Interval: time.Second, Now: func() time.Time { return now }, Targets: []Target{
		{Name: "down", Read: func(context.Context) ([]byte, error) { return nil, errors.New("connection refused") }},
		{Name: "up", Read: func(context.Context) ([]byte, error) { step++; return read(step), nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p.Sample(context.Background())
		now = now.Add(time.Second)
	}
	for _, q := range []string{"", "since=1800000003", "from=1800000001&to=1800000004"} {
		st := state(t, p, q)
		if len(st.Items) != 2 || st.Items[0].Name != "up" || st.Items[0].Questions == nil || st.Items[1].Problem != "connection refused" ||
			st.Items[1].Questions != nil || st.Items[1].ID != 0 || st.Items[1].Readings != 0 {
			t.Errorf("%s: instances %+v", q, st.Items)
		}
	}
}

// TestThin: six hours sampled every 2 s keep every reading of the last 15
// minutes and one a minute before, none older; the counters' increase
// over the kept readings is the increase over all of them.
func TestThin(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var s []doctor.Snapshot
	var total float64
	for i := range 7 * 1800 { // seven hours
		at := t0.Add(time.Duration(i) * 2 * time.Second)
		s = append(s, doctor.Snapshot{T: at, Values: map[string]float64{"c": float64(i * 3)}})
		s = thin(s, at, 15*time.Minute, 6*time.Hour)
		total = float64(i * 3)
	}
	now := s[len(s)-1].T
	if n := len(s); n < 450+340 || n > 451+345 {
		t.Errorf("%d readings kept", n)
	}
	for i := 1; i < len(s); i++ {
		age, gap := now.Sub(s[i].T), s[i].T.Sub(s[i-1].T)
		if now.Sub(s[i-1].T) <= 15*time.Minute && gap != 2*time.Second || age > 15*time.Minute && gap < time.Minute {
			t.Fatalf("reading %d, %v old, %v after the one before", i, age, gap)
		}
	}
	if now.Sub(s[0].T) > 6*time.Hour {
		t.Errorf("the oldest reading is %v old", now.Sub(s[0].T))
	}
	w := doctor.NewWindow("live", "t")
	w.Snapshots = s
	if inc, want := w.Increase("c"), total-s[0].Values["c"]; inc != want {
		t.Errorf("the counter rose %v over the kept readings, %v over all", inc, want)
	}
}

func TestStepFor(t *testing.T) {
	for _, tc := range []struct{ d, finest, want time.Duration }{
		{4 * time.Minute, 10 * time.Second, 10 * time.Second},
		{4 * time.Minute, 7 * time.Second, 7 * time.Second}, // the user's step, when it fits
		{6 * time.Hour, 15 * time.Second, 30 * time.Second},
		{24 * time.Hour, 15 * time.Second, 2 * time.Minute},
		{90 * 24 * time.Hour, 15 * time.Second, 3 * time.Hour},
	} {
		if got := stepFor(tc.d, tc.finest); got != tc.want || tc.d/got > maxPoints {
			t.Errorf("stepFor(%v, %v) = %v, want %v", tc.d, tc.finest, got, tc.want)
		}
	}
}

// TestDoctorCommand: the command a Prometheus page names reads its window.
func TestDoctorCommand(t *testing.T) {
	th := doctor.DefaultThresholds()
	th.KVWatermark = 0.85
	p, err := New(Config{Prometheus: &Prometheus{URL: "http://p:9090"}, Hints: doctor.Hints{GPU: "h100"}, Thresholds: th})
	if err != nil {
		t.Fatal(err)
	}
	src := source.Prometheus{URL: "http://p:9090", Selector: `{instance="a:8000"}`, Since: 4 * time.Minute, Step: 10 * time.Second, End: time.Date(2026, 1, 1, 0, 5, 30, 0, time.UTC)}
	want := `glassbox doctor --prometheus-url http://p:9090 --selector '{instance="a:8000"}' --since 4m --end 2026-01-01T00:05:30Z --interval 10s --gpu h100 --threshold kv_watermark=0.85`
	if got := p.doctorCommand(src); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for d, want := range map[time.Duration]string{time.Hour: "1h", 90 * time.Second: "1m30s", 6 * time.Hour: "6h", 10 * time.Second: "10s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestPrometheusDown: a Prometheus that does not answer is the state's
// problem, named, not an empty page.
func TestPrometheusDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	p, err := New(Config{Prometheus: &Prometheus{URL: srv.URL, Selector: `{job="vllm"}`}})
	if err != nil {
		t.Fatal(err)
	}
	st := state(t, p, "range=5m")
	if st.Mode != "prometheus" || !strings.Contains(st.Problem, "query prometheus") || len(st.Items) != 0 || !st.Window.Live || st.Window.Step != 15 {
		t.Errorf("state %+v", st)
	}
	if !strings.Contains(st.Doctor, "--since 5m") {
		t.Errorf("doctor command %q", st.Doctor)
	}
	if _, err := New(Config{Prometheus: &Prometheus{URL: srv.URL, Selector: "rate(x[5m])"}}); err == nil {
		t.Error("a selector that is not label matchers was accepted")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("a page with nothing to show was accepted")
	}
}

// FuzzParseQuery: any query gives a window or an error, never a panic,
// and an accepted window is ordered and bounded.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "range=15m", "since=1800000000.5", "from=1&to=2", "from=2&to=1", "range=1h&since=5", "range=0s", "from=1e300&to=1e301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parseQuery(v)
		if err != nil {
			return
		}
		if q.fixed() && (!q.to.After(q.from) || q.to.Sub(q.from) > longest) || q.rng < 0 || q.rng > longest || q.fixed() && q.rng != 0 {
			t.Errorf("%q accepted as %+v", raw, q)
		}
	})
}

// TestSampleWhileServing: readings and pages at once (run with -race):
// the state is drawn from the history under the page's lock.
func TestSampleWhileServing(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	read := capture(t)
	step := 0
	p, err := New(Config{Interval: time.Second, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Targets: []Target{{Name: "vllm", Read: func(context.Context) ([]byte, error) { step++; return read(step), nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Sample(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 40 {
			mu.Lock()
			now = now.Add(time.Second)
			mu.Unlock()
			p.Sample(context.Background())
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			if st := state(t, p, ""); len(st.Items[0].Series.T) != 40 {
				t.Errorf("%d intervals after 41 readings", len(st.Items[0].Series.T))
			}
			return
		default:
		}
		state(t, p, []string{"", "since=1800000010", "from=1800000001&to=1800000030"}[i%3])
	}
}

// TestSpeculationSeries: the page's speculative decoding series are the
// doctor's signals over each interval (acceptance: accepted over draft
// tokens; tokens per pass: 1 + accepted over passes), and NaN (drawn as a
// gap) where nothing speculates.
func TestSpeculationSeries(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	snap := func(sec int, drafts, draftTok, acc float64) doctor.Snapshot {
		v := map[string]float64{}
		if drafts >= 0 {
			v[metricspec.SpecDecodeDrafts], v[metricspec.SpecDecodeDraftTokens], v[metricspec.SpecDecodeAcceptedTokens] = drafts, draftTok, acc
		}
		return doctor.Snapshot{T: t0.Add(time.Duration(sec) * time.Second), Values: v, Buckets: map[string]map[float64]float64{}}
	}
	w := doctor.NewWindow("live", "t")
	w.Snapshots = []doctor.Snapshot{snap(0, 0, 0, 0), snap(2, 100, 400, 100), snap(4, 300, 1200, 500)}
	s := derive(defaults.Evaluate(w), w, time.Time{}, time.Time{})
	if len(s.SpecAcceptance) != 2 || float64(s.SpecAcceptance[0]) != 0.25 || float64(s.SpecAcceptance[1]) != 0.5 {
		t.Errorf("acceptance %v, want [0.25 0.5]", s.SpecAcceptance)
	}
	if float64(s.SpecTokensPerPass[0]) != 2 || float64(s.SpecTokensPerPass[1]) != 3 {
		t.Errorf("tokens per pass %v, want [2 3]", s.SpecTokensPerPass)
	}
	w.Snapshots = []doctor.Snapshot{snap(0, -1, 0, 0), snap(2, -1, 0, 0)}
	if s := derive(defaults.Evaluate(w), w, time.Time{}, time.Time{}); !math.IsNaN(float64(s.SpecAcceptance[0])) {
		t.Errorf("acceptance without speculation %v, want NaN", s.SpecAcceptance)
	}
}

// kvAt is a vLLM target whose KV cache sits at kv with four requests
// waiting behind eight running, its counters moving on by step.
func kvAt(kv float64, step int) []byte {
	return []byte(fmt.Sprintf(`vllm:num_requests_running{model_name="m"} 8
vllm:num_requests_waiting{model_name="m"} 4
vllm:kv_cache_usage_perc{model_name="m"} %g
vllm:generation_tokens_total{model_name="m"} %d
vllm:request_success_total{finished_reason="stop",model_name="m"} %d
`, kv, 100*step, step))
}

// TestThresholdsMoveThePage: the page's doctor has the thresholds it is
// given: a KV cache at 0.85 with a queue is KV-capacity bound under a
// kv_watermark of 0.8 and not under the default 0.9, and the watermark
// the queue chart draws moves with it.
func TestThresholdsMoveThePage(t *testing.T) {
	moved := doctor.DefaultThresholds()
	moved.KVWatermark = 0.8
	for _, tc := range []struct {
		th        doctor.Thresholds
		watermark float64
		fires     bool
	}{{doctor.Thresholds{}, 0.9, false}, {moved, 0.8, true}} {
		now := time.Unix(1_800_000_000, 0)
		step := 0
		p, err := New(Config{Interval: time.Second, Thresholds: tc.th, Now: func() time.Time { return now },
			Targets: []Target{{Name: "t", Read: func(context.Context) ([]byte, error) { step++; return kvAt(0.85, step), nil }}}})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			p.Sample(context.Background())
			now = now.Add(time.Second)
		}
		rec := httptest.NewRecorder()
		p.Handler("/dashboard").ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/api/state", nil))
		var st State
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range st.Items[0].Findings {
			names = append(names, f.Name)
		}
		if fired := slices.Contains(names, "kv-capacity-bound"); fired != tc.fires || st.KVWatermark != tc.watermark {
			t.Errorf("watermark %g: findings %v, the state's line at %g; want kv-capacity-bound %v and the line at %g", tc.watermark, names, st.KVWatermark, tc.fires, tc.watermark)
		}
	}
	bad := doctor.DefaultThresholds()
	bad.KVWatermark = 2
	if _, err := New(Config{Thresholds: bad, Targets: []Target{{Name: "t"}}}); err == nil {
		t.Error("a page with a KV watermark of 2 was made")
	}
}

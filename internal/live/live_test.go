package live

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/reftest"
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
// fetch of a full 15-minute history and a refresh's.
func BenchmarkStateFull(b *testing.B)        { benchState(b, false) }
func BenchmarkStateIncremental(b *testing.B) { benchState(b, true) }

func benchState(b *testing.B, incremental bool) {
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
	s := derive(nil, w, 0)
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

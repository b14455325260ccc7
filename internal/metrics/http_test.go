package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestInstrumentHTTPStatus(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string // status label
	}{
		{"ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "{}") }, "2xx"},
		{"no body", func(http.ResponseWriter, *http.Request) {}, "2xx"},
		{"early hints then 400", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusBadRequest)
		}, "4xx"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "4xx"},
		{"overloaded", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, "5xx"},
		{"panic", func(http.ResponseWriter, *http.Request) { panic("handler bug") }, "5xx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reg := newTestMetrics(t, testConfig())
			h := m.InstrumentHTTP("/v1/chat/completions", tt.handler)
			func() {
				defer func() { _ = recover() }()
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
			}()
			checkSeries(t, seriesValues(t, reg), map[string]float64{
				`http_requests_total{handler="/v1/chat/completions",method="POST",status="` + tt.want + `"}`: 1,
				`http_request_duration_seconds_count{handler="/v1/chat/completions",method="POST"}`:          1,
				"http_request_duration_highr_seconds_count":                                                  1,
			})
		})
	}
}

func TestInstrumentHTTPExcludesProbes(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	for _, route := range []string{"/metrics", "/health", "/load", "/ping", "/version", "/server_info"} {
		m.InstrumentHTTP(route, http.NotFoundHandler()).ServeHTTP(
			httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, route, nil))
	}
	for k := range seriesValues(t, reg) {
		if strings.HasPrefix(k, "http_requests_total") || strings.HasPrefix(k, "http_request_duration_seconds") {
			t.Errorf("excluded route produced series %s", k)
		}
	}
}

// TestInstrumentHTTPKeepsFlusher streams like the SSE writer does: the
// wrapped writer must still be an http.Flusher and reach the real one.
func TestInstrumentHTTPKeepsFlusher(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	var sawFlusher bool
	h := m.InstrumentHTTP("/v1/completions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		sawFlusher = ok
		for range 3 {
			io.WriteString(w, "data: {}\n\n")
			if ok {
				f.Flush()
			}
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("ResponseController.Flush through the wrapper: %v", err)
		}
	}))
	rec := httptest.NewRecorder()
	body := strings.NewReader(`{"prompt":"hi"}`)
	req := httptest.NewRequest(http.MethodPost, "/v1/completions", body)
	h.ServeHTTP(rec, req)
	if !sawFlusher || !rec.Flushed {
		t.Errorf("handler saw a Flusher: %v; recorder flushed: %v", sawFlusher, rec.Flushed)
	}
	checkSeries(t, seriesValues(t, reg), map[string]float64{
		`http_request_size_bytes_sum{handler="/v1/completions"}`:  15,
		`http_response_size_bytes_sum{handler="/v1/completions"}`: 30,
	})
}

// TestInstrumentHTTPDuration uses synctest's clock: the handler takes
// exactly 300 ms, so the sample lands between the 0.1 and 0.5 buckets.
func TestInstrumentHTTPDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newTestMetrics(t, testConfig())
		h := m.InstrumentHTTP("/v1/models", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(300 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/models", nil))
		checkSeries(t, seriesValues(t, reg), map[string]float64{
			`http_request_duration_seconds_bucket{handler="/v1/models",method="GET",le="0.1"}`: 0,
			`http_request_duration_seconds_bucket{handler="/v1/models",method="GET",le="0.5"}`: 1,
			`http_request_duration_seconds_sum{handler="/v1/models",method="GET"}`:             0.3,
			`http_request_duration_highr_seconds_bucket{le="0.25"}`:                            0,
			`http_request_duration_highr_seconds_bucket{le="0.5"}`:                             1,
		})
	})
}

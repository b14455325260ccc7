package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// httpSeries mirrors prometheus-fastapi-instrumentator's default families,
// which vLLM's API server exports next to the engine's.
type httpSeries struct {
	requests *prometheus.CounterVec   // method, status, handler
	duration *prometheus.HistogramVec // method, handler
	highRes  prometheus.Histogram     // no labels
	reqSize  *prometheus.SummaryVec   // handler
	respSize *prometheus.SummaryVec   // handler
}

func newHTTPSeries(b *builder) httpSeries {
	opts := func(name string) (string, string, []string) {
		f := metricspec.Must(name)
		return f.Name, f.Help, f.Labels
	}
	name, help, labels := opts(metricspec.HTTPRequests)
	s := httpSeries{requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)}
	name, help, labels = opts(metricspec.HTTPRequestDuration)
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help,
		Buckets: metricspec.HTTPDurationBuckets()}, labels)
	name, help, _ = opts(metricspec.HTTPRequestDurationHighR)
	s.highRes = prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: metricspec.HTTPHighResBuckets()})
	name, help, labels = opts(metricspec.HTTPRequestSize)
	s.reqSize = prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help}, labels)
	name, help, labels = opts(metricspec.HTTPResponseSize)
	s.respSize = prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help}, labels)
	for _, c := range []prometheus.Collector{s.requests, s.duration, s.highRes, s.reqSize, s.respSize} {
		b.register(c)
	}
	return s
}

// excludedHandler reports the routes vLLM's instrumentator leaves out, so
// that scrapes and probes do not drown the API traffic.
func excludedHandler(name string) bool {
	switch name {
	case "/metrics", "/health", "/load", "/ping", "/version", "/server_info":
		return true
	}
	return false
}

// InstrumentHTTP wraps h, served under the route pattern handlerName (e.g.
// "/v1/chat/completions"; "none" for unmatched paths, as the instrumentator
// does), so that each request counts in the http_* families. Routes vLLM
// excludes come back unwrapped. The wrapper keeps http.Flusher working for
// SSE and exposes Unwrap for http.ResponseController.
func (m *Metrics) InstrumentHTTP(handlerName string, h http.Handler) http.Handler {
	if excludedHandler(handlerName) || m.http.reqSize == nil { // nil: NoFrontend, a rank with no API server of its own
		return h
	}
	s := &m.http
	reqSize := s.reqSize.WithLabelValues(handlerName)
	respSize := s.respSize.WithLabelValues(handlerName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &responseWriter{ResponseWriter: w}
		completed := false
		defer func() {
			status := rw.status
			if !completed && status == 0 {
				status = http.StatusInternalServerError // the handler panicked before answering
			}
			d := time.Since(start).Seconds()
			s.requests.With(prometheus.Labels{"method": r.Method, "status": statusClass(status), "handler": handlerName}).Inc()
			s.duration.With(prometheus.Labels{"method": r.Method, "handler": handlerName}).Observe(d)
			s.highRes.Observe(d)
			reqSize.Observe(float64(max(r.ContentLength, 0)))
			respSize.Observe(float64(rw.contentLength()))
		}()
		h.ServeHTTP(rw, r)
		completed = true
	})
}

// statusClass groups codes as the instrumentator does: 200 → "2xx". A
// handler that never wrote anything answered 200.
func statusClass(code int) string {
	if code == 0 {
		code = http.StatusOK
	}
	return strconv.Itoa(code/100) + "xx"
}

// responseWriter records the final status and the body size.
type responseWriter struct {
	http.ResponseWriter
	status  int
	written int64
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx responses are not final
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	return n, err
}

// contentLength is what the instrumentator records: the response's
// Content-Length, which a buffered response has (the body written) and a
// stream of server-sent events does not (0).
func (w *responseWriter) contentLength() int64 {
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return 0
	}
	return w.written
}

// Flush implements http.Flusher, which the SSE writer asserts on; an
// underlying writer that cannot flush makes it a no-op.
func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// hijacking) through the wrapper.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// GuardConfig bounds what one client can hold of the server.
type GuardConfig struct {
	// ReadTimeout is how long a request's body may take to arrive (its
	// headers have ReadHeaderTimeout): a client that trickles its body is
	// answered 408 and its connection closed. Zero means none.
	ReadTimeout time.Duration
	// LimitConcurrency, as uvicorn's --limit-concurrency, is the most
	// requests handled at once; beyond it a request is refused at once with
	// 503 and Retry-After. Probes and /metrics are never refused: a loaded
	// server must stay observable. Zero means no limit.
	LimitConcurrency int
	// Rejected, when set, hears of every request refused for the limit.
	Rejected func()
}

// Guard wraps the API's handler with the body read deadline and the
// concurrency limit.
func Guard(cfg GuardConfig, next http.Handler) http.Handler {
	var slots chan struct{}
	if cfg.LimitConcurrency > 0 {
		slots = make(chan struct{}, cfg.LimitConcurrency)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slots != nil && !exempt(r.URL.Path) {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				if cfg.Rejected != nil {
					cfg.Rejected()
				}
				openai.WriteError(w, &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServiceUnavailable, RetryAfter: 1,
					Message: fmt.Sprintf("The server is handling its limit of %d requests at once (--limit-concurrency). Retry later.", cfg.LimitConcurrency)})
				return
			}
		}
		if cfg.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			if !readBody(w, r, cfg.ReadTimeout) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// exempt are the routes a full server still answers: probes and metrics.
func exempt(path string) bool {
	return path == "/health" || path == "/ready" || path == "/metrics" || strings.HasPrefix(path, "/metrics/")
}

// readBody reads the whole body under the deadline, then lifts it before
// the handler runs: a deadline left on the connection would cut a long
// stream (net/http cancels a request whose connection read fails). The body
// is bounded as the handlers bound it; false when it has answered.
func readBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) bool {
	if r.ContentLength > maxBodyBytes {
		// Declared too large: refused before a byte of it is read (reading
		// 32 MiB first could outlast the read timeout and answer 408).
		w.Header().Set("Connection", "close")
		openai.WriteError(w, &http.MaxBytesError{Limit: maxBodyBytes})
		return false
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return true // not a connection that takes deadlines (a test recorder): read as it comes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	_ = r.Body.Close()
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		openai.WriteError(w, &openai.Error{Status: http.StatusRequestTimeout, Type: openai.TypeBadRequest,
			Message: fmt.Sprintf("the request body did not arrive within %v (--request-read-timeout)", timeout), Err: err})
		return false
	case err != nil:
		w.Header().Set("Connection", "close")
		openai.WriteError(w, openai.BadRequest("", "read request body: %v", err))
		return false
	case len(body) > maxBodyBytes:
		openai.WriteError(w, &http.MaxBytesError{Limit: maxBodyBytes})
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

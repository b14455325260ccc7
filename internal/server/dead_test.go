package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// dyingExec serves as alphabetExec until a step holds two sequences that
// have both generated tokens (two requests in flight, whatever order
// they came in), then dies as how says: a sticky device fault, a step that
// never returns (until release), or a panicking kernel.
type dyingExec struct {
	alphabetExec
	how     string // "fault", "hang" or "panic"
	release chan struct{}
}

func (x *dyingExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	generating := 0
	for _, s := range b.Seqs {
		if s.Pos+len(s.Tokens)-s.NumPrompt >= 2 {
			generating++
		}
	}
	if generating < 2 {
		return x.alphabetExec.Execute(b, r)
	}
	switch x.how {
	case "fault":
		return fmt.Errorf("execute: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): %w", engine.ErrExecutorDead)
	case "hang":
		<-x.release
		return errors.New("released")
	}
	panic("kernel: index out of range [4096] with length 4096")
}

// deadEnv is a server over an engine whose executor will die, driven by
// ServeHTTP inside a synctest bubble (so the watchdog's minute passes in
// no time).
type deadEnv struct {
	h        http.Handler
	mu       sync.Mutex
	rejected []string
}

func newDeadEnv(t *testing.T, x engine.Executor) *deadEnv {
	ecfg := engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 4096, MaxModelLen: 256, BlockSize: 16,
		NumBlocks: 256, MaxWaiting: 64, EOS: []int{eosID}, StepTimeout: time.Minute}
	eng, err := engine.New(ecfg, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { eng.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
	env := &deadEnv{}
	env.h = New(Config{ServedModelNames: []string{modelName}, Rejected: func(reason string) {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.rejected = append(env.rejected, reason)
	}}, eng, byteModel{}).Handler()
	return env
}

// do serves one request and returns its response.
func (env *deadEnv) do(method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	env.h.ServeHTTP(rec, req)
	return rec
}

// start serves a request on its own goroutine; the recorder is read once
// done is closed.
func (env *deadEnv) start(method, path, body string) (rec *httptest.ResponseRecorder, done chan struct{}) {
	done = make(chan struct{})
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	go func() { env.h.ServeHTTP(rec, req); close(done) }()
	return rec, done
}

// errorBody decodes an error response of status 503 naming reason.
func errorBody(t *testing.T, what string, rec *httptest.ResponseRecorder, reason engine.DeathReason) {
	t.Helper()
	var body openai.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("%s: %d %s (%v), want 503 with OpenAI's error body", what, rec.Code, rec.Body, err)
	}
	if body.Error.Code != 503 || body.Error.Type != openai.TypeServiceUnavailable || !strings.Contains(body.Error.Message, "engine is dead ("+string(reason)+")") {
		t.Errorf("%s: error %+v, want a 503 naming %s", what, body.Error, reason)
	}
	if ra := rec.Header().Get("Retry-After"); ra != "" {
		t.Errorf("%s: Retry-After %q: a dead engine does not come back", what, ra)
	}
}

// TestDeadExecutorThroughTheServer: when the executor dies (a sticky
// fault, a hung step, a panic) /health and /ready answer 503 naming the
// reason, an in-flight streaming request ends with an error event, an
// in-flight non-streaming one gets the 503, and a new request is refused
// with it and counted once as a rejection; while a step hangs, /health
// still answers at once.
func TestDeadExecutorThroughTheServer(t *testing.T) {
	for how, reason := range map[string]engine.DeathReason{
		"fault": engine.DeathExecutorError, "hang": engine.DeathStepTimeout, "panic": engine.DeathPanic,
	} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The first request's steps wait past its second token
				// until the second request has been submitted.
				x := &dyingExec{how: how, release: make(chan struct{}), alphabetExec: alphabetExec{hold: make(chan struct{}), holdAfter: 2}}
				defer close(x.release) // the hung call returns at last: its goroutine ends
				env := newDeadEnv(t, x)
				if rec := env.do("GET", "/health", ""); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
					t.Fatalf("/health before: %d %q, want 200 and no body", rec.Code, rec.Body)
				}
				stream, streamDone := env.start("POST", "/v1/chat/completions",
					`{"messages":[{"role":"user","content":"c"}],"max_tokens":50,"stream":true}`)
				whole, wholeDone := env.start("POST", "/v1/completions", `{"prompt":"c","max_tokens":50}`)
				synctest.Wait()
				close(x.hold)
				if how == "hang" {
					synctest.Wait() // the step hangs; the watchdog's minute has not passed
					if rec := env.do("GET", "/health", ""); rec.Code != http.StatusOK {
						t.Errorf("/health during a hung step: %d, want 200 at once", rec.Code)
					}
				}
				<-streamDone
				<-wholeDone

				events := readEvents(t, stream.Body)
				n := len(events)
				if stream.Code != http.StatusOK || n < 3 || !strings.Contains(events[n-3], `"content":"`) || events[n-1] != "[DONE]" {
					t.Fatalf("streaming request: %d, events %q; want content, then an error event and [DONE]", stream.Code, events)
				}
				var ev openai.ErrorBody
				if err := json.Unmarshal([]byte(events[n-2]), &ev); err != nil || ev.Error.Code != 503 || !strings.Contains(ev.Error.Message, string(reason)) {
					t.Errorf("streaming request's last event %q (%v): want a 503 error naming %s", events[n-2], err, reason)
				}
				errorBody(t, "in-flight non-streaming request", whole, reason)
				errorBody(t, "/health after", env.do("GET", "/health", ""), reason)
				errorBody(t, "/ready after", env.do("GET", "/ready", ""), reason)
				errorBody(t, "new request", env.do("POST", "/v1/completions", `{"prompt":"c","max_tokens":5}`), reason)
				// The --metrics-port answers its /health as the API does.
				side := MetricsRoutes(http.NotFoundHandler(), nil, nil, env.h)
				rec := httptest.NewRecorder()
				side.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
				errorBody(t, "the metrics port's /health", rec, reason)
				env.mu.Lock()
				if !slices.Equal(env.rejected, []string{"shutdown"}) {
					t.Errorf("admission rejections %q: want the new request's only", env.rejected)
				}
				env.mu.Unlock()
			})
		})
	}
}

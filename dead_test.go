package glassbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestStepTimeoutKillsTheEngine: a step of the simulated GPU (a few
// simulated milliseconds, waited out in the bubble's time) past a 1 ms
// StepTimeout kills the engine: Generate fails with ErrEngineDead naming
// the reason, Health says it, Handler's /health answers 503, and later
// calls fail the same way; Close still returns.
func TestStepTimeoutKillsTheEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l, err := Open(ctx, Options{Sim: &SimOptions{TimeScale: 1}, StepTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := l.Health(); err != nil {
			t.Fatalf("Health before any step: %v", err)
		}
		_, err = l.Generate(ctx, []string{"Once upon a time"}, SamplingParams{MaxTokens: 8})
		if !errors.Is(err, ErrEngineDead) || !strings.Contains(err.Error(), "step_timeout") {
			t.Fatalf("Generate: %v, want ErrEngineDead naming step_timeout", err)
		}
		if err := l.Health(); !errors.Is(err, ErrEngineDead) {
			t.Errorf("Health: %v, want ErrEngineDead", err)
		}
		rec := httptest.NewRecorder()
		l.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "step_timeout") {
			t.Errorf("/health: %d %s, want 503 naming step_timeout", rec.Code, rec.Body)
		}
		if _, err := l.Generate(ctx, []string{"again"}, SamplingParams{MaxTokens: 2}); !errors.Is(err, ErrEngineDead) {
			t.Errorf("a later Generate: %v, want ErrEngineDead", err)
		}
		l.Close()
		time.Sleep(time.Second) // the abandoned step's simulated time passes: its goroutine ends
	})
}

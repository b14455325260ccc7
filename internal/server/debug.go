package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// Profiler is what /start_profile and /stop_profile drive. Both calls
// return once the profile has started or its files are written; a second
// Start while recording, or a Stop while idle, does nothing (as vLLM).
type Profiler interface {
	Start() error
	Stop() error
}

// snapshotTimeout bounds how long /debug/engine waits for the engine to
// reach the gap between two steps; a longer wait means a stuck step.
const snapshotTimeout = 5 * time.Second

// handleHealth answers 200 while the engine can serve and 503 once its
// executor died, as vLLM's /health does on EngineDeadError (a liveness
// probe then restarts the process); the body is OpenAI's error object
// naming the reason (vLLM's is empty). It never waits for the engine
// goroutine, so it answers during a hung step too.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.Health(); err != nil {
		s.fail(w, r, err)
	}
}

// handleReady answers 200 while the engine accepts requests and 503 once it
// is shutting down or dead, so a load balancer stops routing before the
// drain ends.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.Health(); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.eng.Closed() {
		s.fail(w, r, engine.ErrClosed)
	}
}

// handleDebugEngine serves GET /debug/engine: a snapshot of the scheduler's
// queues, every request's progress and the block pool, built by the engine
// goroutine between two steps.
func (s *Server) handleDebugEngine(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	snap, err := s.eng.Snapshot(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServiceUnavailable, Err: err,
			Message: "the engine did not reach the end of its current step within " + snapshotTimeout.String()}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, r, snap)
}

// handleStartProfile and handleStopProfile answer 200 with an empty body,
// as vLLM's endpoints do.
func (s *Server) handleStartProfile(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Profiler.Start(); err != nil {
		s.fail(w, r, err)
	}
}

func (s *Server) handleStopProfile(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Profiler.Stop(); err != nil {
		s.fail(w, r, err)
	}
}

package cuda

import (
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// How the device fails, as the executor tells it apart: a call that
// fails on its own (a launch refused for resources, memory short) leaves
// the context usable; a fault in a kernel is sticky and a kernel that
// never ends hangs every later wait: either way the context is lost
// (internal/cuda's ContextLost, the one list of sticky CUresults).

// dead reports whether the device can take no more work after err.
func dead(err error) bool { return cuda.ContextLost(err) }

// within runs f (which waits on the device) and gives up waiting after
// limit: a kernel that never ends must not hang the caller. On time out
// f's goroutine stays blocked in the driver with the device's thread; the
// device is unusable from then on, and the process should end.
func within(limit time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s: waited %v: %w", what, limit, cuda.ErrHung)
	}
}

// stepError is Execute's error for a failed device call. One that loses
// the GPU's context (a sticky fault such as CUDA_ERROR_ILLEGAL_ADDRESS,
// a hung call) wraps engine.ErrExecutorDead: every later step would fail
// the same way, so the engine stops and /health answers 503. Any other
// (out of memory or resources for one launch) fails only the step.
func stepError(err error) error {
	if cuda.ContextLost(err) {
		return fmt.Errorf("execute: %w: the GPU's context is lost, only a new process recovers it (%w)", err, engine.ErrExecutorDead)
	}
	return fmt.Errorf("execute: %w", err)
}

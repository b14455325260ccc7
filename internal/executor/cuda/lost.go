package cuda

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

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

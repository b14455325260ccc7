package cuda

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// faultyDevice is a fake GPU: good steps sample token 5, then every step
// fails with the CUresult code, through Execute's own error path.
type faultyDevice struct {
	code        int
	name        string
	good, steps int
}

func (x *faultyDevice) Execute(b *engine.Batch, r *engine.StepResult) error {
	if x.steps++; x.steps > x.good {
		return stepError(&cuda.Error{Call: "cuStreamSynchronize", Code: x.code, Name: x.name})
	}
	for i, s := range b.Seqs {
		if s.Sample {
			r.Samples[i] = sampling.Result{Token: 5}
		}
	}
	return nil
}

// TestStickyFaultKillsTheEngine: a fake device's sticky fault
// (CUDA_ERROR_ILLEGAL_ADDRESS, the out-of-bounds sampling read's) kills
// the engine with executor_error naming the CUresult; an error of one
// launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) fails the step's request
// and the engine serves on.
func TestStickyFaultKillsTheEngine(t *testing.T) {
	for _, c := range []struct {
		code int
		name string
		dies bool
	}{{700, "CUDA_ERROR_ILLEGAL_ADDRESS", true}, {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, &faultyDevice{code: c.code, name: c.name, good: 2}, 64)
				p := sampling.Defaults()
				p.MaxTokens = 10
				s, err := e.Submit(&engine.Request{ID: "a", Prompt: []int{1, 2, 3}, Params: p})
				if err != nil {
					t.Fatal(err)
				}
				var last engine.Output
				for o, ok := s.Next(context.Background()); ok; o, ok = s.Next(context.Background()) {
					last = o
				}
				var d *engine.DeadError
				dead := errors.As(last.Err, &d)
				if dead != c.dies || last.FinishReason != engine.FinishError || !strings.Contains(last.Err.Error(), c.name) {
					t.Fatalf("request ended %q with %v: want an error naming %s, the engine dead: %v", last.FinishReason, last.Err, c.name, c.dies)
				}
				if dead && d.Reason != engine.DeathExecutorError {
					t.Errorf("died of %s, want executor_error", d.Reason)
				}
				if health := e.Health(); (health != nil) != c.dies {
					t.Errorf("Health() = %v; want the engine dead: %v", health, c.dies)
				}
			})
		})
	}
}

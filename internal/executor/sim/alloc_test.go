//go:build !race

// The race detector allocates on its own account, so the allocation check
// runs only in normal builds.

package sim

import (
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

func TestExecuteDoesNotAllocate(t *testing.T) {
	e := newExec(t, Config{})
	batch := decodeStep(t, e, 64)
	var r engine.StepResult
	if err := e.Execute(batch, &r); err != nil { // sizes the buffers
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := e.Execute(batch, &r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Execute allocates %v times per step in steady state", n)
	}
}

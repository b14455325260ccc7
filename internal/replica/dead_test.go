package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// TestStepTimeoutDefaults: the watchdog is vLLM's 60 s on the simulator
// (and a GPU) by default, off on a caller's (virtual) clock unless asked
// for, off when asked with a negative value, and as asked otherwise.
func TestStepTimeoutDefaults(t *testing.T) {
	for _, c := range []struct {
		asked   time.Duration
		virtual bool
		want    time.Duration
	}{
		{0, false, DefaultStepTimeout},
		{0, true, 0},
		{-1, false, 0},
		{5 * time.Second, false, 5 * time.Second},
		{5 * time.Second, true, 5 * time.Second},
	} {
		cfg := Config{Sim: sim.Config{Hardware: "h200", Model: "llama-3.1-8b"}, BlockSize: DefaultBlockSize,
			MaxQueuedRequests: DefaultMaxQueuedRequests, StepTimeout: c.asked}
		if c.virtual {
			cfg.Clock = engine.WallClock() // any clock of the caller's
		}
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.EngineConfig.StepTimeout; got != c.want {
			t.Errorf("StepTimeout %s (caller's clock %v): the engine's watchdog is %s, want %s", c.asked, c.virtual, got, c.want)
		}
		r.Close()
	}
	if DefaultCPUStepTimeout <= DefaultStepTimeout {
		t.Errorf("the CPU's default %s is not longer than the GPU's %s", DefaultCPUStepTimeout, DefaultStepTimeout)
	}
}

// stuckExec serves nothing: its first step faults (sticky) or hangs until
// release.
type stuckExec struct {
	hang    bool
	release chan struct{}
}

func (x *stuckExec) Execute(*engine.Batch, *engine.StepResult) error {
	if x.hang {
		<-x.release
	}
	return fmt.Errorf("execute: CUDA_ERROR_LAUNCH_FAILED (719): %w", engine.ErrExecutorDead)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCloseLeavesAHungExecutor: after a step hung past the watchdog,
// Close returns without closing the executor (its call may yet touch
// what closing frees, and a GPU context's Close would wait for it) and
// says so; after any other death it closes it as usual.
func TestCloseLeavesAHungExecutor(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(fmt.Sprint("hang ", hang), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				x := &stuckExec{hang: hang, release: make(chan struct{})}
				defer close(x.release)
				eng, err := engine.New(engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 64, BlockSize: 16,
					NumBlocks: 16, MaxWaiting: 4, StepTimeout: time.Minute}, x, nil)
				if err != nil {
					t.Fatal(err)
				}
				var log lockedBuffer
				life := &fakeLifecycle{}
				r := &Replica{Engine: eng, Ranks: []*engine.Engine{eng}, life: life, log: slog.New(slog.NewTextHandler(&log, nil))}
				r.Start()
				p := sampling.Defaults()
				p.MaxTokens = 4
				s, err := eng.Submit(&engine.Request{ID: "a", Prompt: []int{1, 2, 3}, Params: p})
				if err != nil {
					t.Fatal(err)
				}
				for o, ok := s.Next(context.Background()); ok; o, ok = s.Next(context.Background()) {
					if o.Finished && !errors.Is(o.Err, engine.ErrEngineDead) {
						t.Fatalf("request ended with %v, want a dead engine", o.Err)
					}
				}
				r.Close()
				if closed := life.closed > 0; closed == hang {
					t.Errorf("executor closed: %v after a death with the step hung: %v", closed, hang)
				}
				if said := strings.Contains(log.String(), "step is still hung"); said != hang {
					t.Errorf("log %q: says the executor was left: %v, want %v", log.String(), said, hang)
				}
			})
		})
	}
}

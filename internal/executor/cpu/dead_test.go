package cpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// panickyConstraint is a structured-output matcher with a bug: FillMask,
// which the executor calls on whichever compute thread samples the
// sequence, panics. It waits until two threads are inside it first, so
// that one of them is a compute goroutine of the executor's pool, where an
// unrecovered panic ends the process.
type panickyConstraint struct{ b *barrier }

type barrier struct {
	n    atomic.Int32
	both chan struct{}
}

func (c panickyConstraint) FillMask([]uint64) {
	if c.b.n.Add(1) == 2 {
		close(c.b.both)
	}
	<-c.b.both
	panic("matcher bug: state 7 has no transitions")
}

func (panickyConstraint) Accept(int) bool { return true }

// lockedBuffer is a log destination written by the engine goroutine and
// read by the test.
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

// TestPanickingKernelKillsTheEngine: a panic inside the CPU executor's
// step, on the caller's thread or on one of its compute goroutines
// (where it would end the process), reaches the engine's seam and stops
// the engine with executor_panic: every request fails with the reason,
// Health says it, the log has the panic's stack, and Run returns.
func TestPanickingKernelKillsTheEngine(t *testing.T) {
	x, err := New(stories(t), Config{NumBlocks: 64, BlockSize: 16, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var log lockedBuffer
	e, err := engine.New(engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 256, MaxModelLen: 512, BlockSize: 16,
		NumBlocks: 64, MaxWaiting: 100, EOS: []int{2}, Logger: slog.New(slog.NewTextHandler(&log, nil))}, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { e.Run(context.Background()); close(ran) }()
	var streams []*engine.Stream
	b := &barrier{both: make(chan struct{})}
	for i := range 4 { // several sequences to sample: the compute goroutine takes some
		p := sampling.Defaults()
		p.Temperature, p.MaxTokens = 0, 8
		s, err := e.Submit(&engine.Request{ID: fmt.Sprint(i), Prompt: []int{1, 403, 407, 261 + i}, Params: p, Constraint: panickyConstraint{b}})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	for _, s := range streams {
		var last engine.Output
		for o, ok := s.Next(context.Background()); ok; o, ok = s.Next(context.Background()) {
			last = o
		}
		var d *engine.DeadError
		if !errors.As(last.Err, &d) || d.Reason != engine.DeathPanic || !strings.Contains(d.Error(), "matcher bug") {
			t.Errorf("request %s ended %q with %v, want a dead engine (executor_panic) naming the panic", s.ID(), last.FinishReason, last.Err)
		}
	}
	<-ran // Run returns by itself once the engine is dead
	if err := e.Health(); !errors.Is(err, engine.ErrEngineDead) {
		t.Errorf("Health() = %v, want the engine dead", err)
	}
	if out := log.String(); !strings.Contains(out, "engine dead") || !strings.Contains(out, "panickyConstraint.FillMask") {
		t.Errorf("the log does not say the engine died with the panic's stack:\n%s", out)
	}
}

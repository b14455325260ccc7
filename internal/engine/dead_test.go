package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The executors a dead engine is tested with: each runs good steps as
// countExec does, then fails in its own way at every later step.

// faultExec returns a sticky device fault after good steps, as the CUDA
// executor wraps CUDA_ERROR_ILLEGAL_ADDRESS.
type faultExec struct {
	countExec
	good, steps int
}

var errIllegalAddress = errors.New("cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)")

func (x *faultExec) Execute(b *Batch, r *StepResult) error {
	if x.steps++; x.steps > x.good {
		return fmt.Errorf("execute: %w (%w)", errIllegalAddress, ErrExecutorDead)
	}
	return x.countExec.Execute(b, r)
}

// hangExec never returns from the step after good ones, until release is
// closed: a hung kernel.
type hangExec struct {
	countExec
	good, steps int
	release     chan struct{}
	hungAt      chan time.Time // when the step hung (buffered)
}

func (x *hangExec) Execute(b *Batch, r *StepResult) error {
	if x.steps++; x.steps > x.good {
		x.hungAt <- time.Now()
		<-x.release
		return errors.New("released")
	}
	return x.countExec.Execute(b, r)
}

// panicExec panics in the step after good ones, as a kernel indexing out
// of range does; with stack set, with a value that carries its own stack
// (a panic raised again from another thread).
type panicExec struct {
	countExec
	good, steps int
	stack       []byte
}

type stackedPanic struct{ stack []byte }

func (p stackedPanic) PanicStack() []byte { return p.stack }
func (p stackedPanic) String() string     { return "a compute thread panicked" }

func (x *panicExec) Execute(b *Batch, r *StepResult) error {
	if x.steps++; x.steps > x.good {
		if x.stack != nil {
			panic(stackedPanic{x.stack})
		}
		var table []int
		_ = table[b.NumTokens] // index out of range
	}
	return x.countExec.Execute(b, r)
}

// logRecorder keeps the engine's log records.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// matching is the records whose message starts with prefix, each with its
// attributes as key=value.
func (l *logRecorder) matching(prefix string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.records {
		if !strings.HasPrefix(r.Message, prefix) {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

// deadEngine runs an engine of cfg on x in the bubble with two requests:
// one running and one waiting (max-num-seqs 1), and returns what each
// stream ended with once the executor died, and the engine's log.
func deadEngine(t *testing.T, cfg Config, x Executor) (*Engine, []Output, *logRecorder, *recorder) {
	t.Helper()
	logs := &logRecorder{}
	cfg.Logger = slog.New(logs)
	cfg.MaxNumSeqs = 1
	rec := &recorder{}
	e, err := New(cfg, x, rec)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { e.Run(context.Background()); close(ran) }() // returns by itself when the executor dies
	var lasts []Output
	var streams []*Stream
	for i := range 2 {
		s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(5, 0), Params: params(50)})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	for _, s := range streams {
		toks, last := collect(s)
		if s.ID() == "0" && len(toks) == 0 {
			t.Errorf("request 0 ended before any token: the good steps should have served it")
		}
		lasts = append(lasts, last)
	}
	<-ran
	return e, lasts, logs, rec
}

// checkDead checks that the engine died of reason and says so everywhere:
// in each request's end, Health, Stats, a new Submit, and once in the log.
func checkDead(t *testing.T, e *Engine, lasts []Output, logs *logRecorder, rec *recorder, reason DeathReason) *DeadError {
	t.Helper()
	var d *DeadError
	for i, last := range lasts {
		if !last.Finished || last.FinishReason != FinishError || !errors.As(last.Err, &d) || d.Reason != reason || !errors.Is(last.Err, ErrEngineDead) {
			t.Fatalf("request %d ended with %+v (err %v), want finish reason error and a %s DeadError", i, last, last.Err, reason)
		}
	}
	if err := e.Health(); !errors.Is(err, ErrEngineDead) || err != error(d) {
		t.Errorf("Health() = %v, want the requests' DeadError %v", err, d)
	}
	if _, err := e.Submit(&Request{ID: "late", Prompt: prompt(3, 0), Params: params(2)}); err != error(d) {
		t.Errorf("Submit after death: %v, want the DeadError", err)
	}
	if err := e.AwaitRoom(context.Background(), 1); err != error(d) {
		t.Errorf("AwaitRoom after death: %v, want the DeadError", err)
	}
	if _, err := e.Snapshot(context.Background()); err != error(d) {
		t.Errorf("Snapshot after death: %v, want the DeadError", err)
	}
	if st := e.Stats(); st.Dead != reason || st.Running != 0 || st.Waiting != 0 || st.KVUsage != 0 || st.KVFree != st.KVBlocks {
		t.Errorf("stats after death %+v: want dead of %s, nothing running or waiting, every KV block free", st, reason)
	}
	if got := logs.matching("engine dead"); len(got) != 1 || got[0]["reason"] != string(reason) {
		t.Errorf("log records of the death: %v, want one with reason %s", got, reason)
	}
	if rec.finished[FinishError] != 2 || len(rec.finished) != 1 {
		t.Errorf("observed finishes %v, want both requests as error", rec.finished)
	}
	return d
}

// TestStickyErrorKillsEngine: an Execute error wrapping ErrExecutorDead
// stops the engine: the running and the waiting request fail with the
// reason, Health and Stats say it, new requests are refused with it, the
// KV blocks are back in the pool and Run returns.
func TestStickyErrorKillsEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, lasts, logs, rec := deadEngine(t, testConfig(), &faultExec{good: 3})
		d := checkDead(t, e, lasts, logs, rec, DeathExecutorError)
		if !errors.Is(d, errIllegalAddress) || !errors.Is(d, ErrExecutorDead) {
			t.Errorf("DeadError %v does not carry the executor's error", d)
		}
	})
}

// TestPlainErrorFailsOnlyTheStep: an Execute error that is not the
// executor's death fails the step's requests and nothing more.
func TestPlainErrorFailsOnlyTheStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := &flakyExec{failStep: 2}
		e, stop := start(t, testConfig(), x, nil)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(5, 0), Params: params(10)})
		if err != nil {
			t.Fatal(err)
		}
		if _, last := collect(s); last.FinishReason != FinishError || errors.Is(last.Err, ErrEngineDead) {
			t.Errorf("request in the failed step ended %q with %v, want error, not a dead engine", last.FinishReason, last.Err)
		}
		if err := e.Health(); err != nil {
			t.Errorf("Health after a plain step error: %v", err)
		}
		s, err = e.Submit(&Request{ID: "b", Prompt: prompt(5, 0), Params: params(10)})
		if err != nil {
			t.Fatal(err)
		}
		if toks, last := collect(s); len(toks) != 10 || last.FinishReason != FinishLength {
			t.Errorf("the next request got %d tokens, %q: want the engine serving on", len(toks), last.FinishReason)
		}
	})
}

// flakyExec fails one step with a plain error.
type flakyExec struct {
	countExec
	failStep, steps int
}

func (x *flakyExec) Execute(b *Batch, r *StepResult) error {
	if x.steps++; x.steps == x.failStep {
		return errors.New("execute: token 7 is out of this model's vocabulary")
	}
	return x.countExec.Execute(b, r)
}

// TestHungStepKillsEngine: a step that has not returned after
// StepTimeout kills the engine at that moment; steps slower than the
// timeout's every other step do not; the hung call's goroutine ends when
// the call finally returns (synctest fails the test if it does not).
func TestHungStepKillsEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.StepTimeout = time.Minute
		x := &hangExec{good: 3, release: make(chan struct{}), hungAt: make(chan time.Time, 1)}
		e, lasts, logs, rec := deadEngine(t, cfg, x)
		if waited := time.Since(<-x.hungAt); waited != time.Minute {
			t.Errorf("the engine died %s after the step hung, want the step timeout (1m)", waited)
		}
		d := checkDead(t, e, lasts, logs, rec, DeathStepTimeout)
		if !strings.Contains(d.Error(), "1m0s") {
			t.Errorf("DeadError %q does not name the timeout", d)
		}
		close(x.release) // the hung call returns at last: its goroutine must end
		synctest.Wait()
	})
}

// slowExec takes just under the step timeout for every step.
type slowExec struct{ countExec }

func (x *slowExec) Execute(b *Batch, r *StepResult) error {
	time.Sleep(time.Minute - time.Millisecond)
	return x.countExec.sample(b, r)
}

// TestSlowStepsUnderTheTimeoutServe: steps just shorter than the watchdog
// are served, and stopping the engine ends its executor goroutine.
func TestSlowStepsUnderTheTimeoutServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.StepTimeout = time.Minute
		e, stop := start(t, cfg, &slowExec{}, nil)
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(5, 0), Params: params(4)})
		if err != nil {
			t.Fatal(err)
		}
		if toks, last := collect(s); len(toks) != 4 || last.Err != nil {
			t.Errorf("slow steps: %d tokens, err %v; want 4, none", len(toks), last.Err)
		}
		if err := e.Health(); err != nil {
			t.Errorf("Health: %v", err)
		}
		stop()
		synctest.Wait() // the executor goroutine is gone, or the bubble fails
	})
}

// TestPanicKillsEngine: a panic inside Execute is recovered at the
// engine's seam and kills it, with the panic's stack in the log; a panic
// value that carries its own stack (one raised again from a compute
// thread) is logged with that one.
func TestPanicKillsEngine(t *testing.T) {
	for _, watchdog := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint("step timeout ", watchdog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig()
				cfg.StepTimeout = watchdog
				e, lasts, logs, rec := deadEngine(t, cfg, &panicExec{good: 2})
				d := checkDead(t, e, lasts, logs, rec, DeathPanic)
				if !strings.Contains(d.Error(), "index out of range") {
					t.Errorf("DeadError %q does not say what panicked", d)
				}
				if stack := logs.matching("engine dead")[0]["stack"]; !strings.Contains(stack, "(*panicExec).Execute") {
					t.Errorf("logged stack does not show the panicking function:\n%s", stack)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		own := []byte("goroutine 7 [running]:\ntensor.(*Pool).loop(...)")
		e, lasts, logs, rec := deadEngine(t, testConfig(), &panicExec{good: 2, stack: own})
		checkDead(t, e, lasts, logs, rec, DeathPanic)
		if stack := logs.matching("engine dead")[0]["stack"]; stack != string(own) {
			t.Errorf("logged stack %q, want the panic value's own %q", stack, own)
		}
	})
}

// TestAdvanceStopsWhenDead: an Advance-driven engine reports no more work
// once its executor died, and Stop after it is harmless.
func TestAdvanceStopsWhenDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := New(testConfig(), &faultExec{good: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(5, 0), Params: params(10)})
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		for e.Advance() {
			steps++
		}
		e.Stop()
		if _, last := collect(s); steps != 1 || !errors.Is(last.Err, ErrEngineDead) {
			t.Errorf("after %d busy steps the request ended with %v, want 1 step and a dead engine", steps, last.Err)
		}
	})
}

// TestValidateStepTimeout: a negative watchdog is refused by name.
func TestValidateStepTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.StepTimeout = -time.Second
	if _, err := New(cfg, &countExec{}, nil); err == nil || !strings.Contains(err.Error(), "step timeout") {
		t.Errorf("New with a negative step timeout: %v", err)
	}
}

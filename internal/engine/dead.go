package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// A dead executor stops the engine. Three things kill it: an Execute
// error that wraps ErrExecutorDead (a sticky device fault: every later
// step would fail the same way), a step that runs past Config.StepTimeout
// (a hung kernel or a deadlock), and a panic inside Execute (a CPU
// kernel's, an executor bug's). Any other Execute error fails only the
// step's requests, and the engine carries on.
//
// Once dead, the engine ends every request it holds with FinishError and
// the *DeadError, refuses new ones with it (Submit, Group.Add, AwaitRoom),
// reports it from Health and in Stats.Dead, logs it once, and its Run
// returns. vLLM does the same with EngineDeadError: in-flight and new
// requests fail, and /health answers 503.

// Errors of a dead engine.
var (
	// ErrExecutorDead is what an executor wraps in an Execute error after
	// which no step can succeed: a sticky device fault (the CUDA context
	// is lost), a hung device call. The engine dies of it.
	ErrExecutorDead = errors.New("the executor cannot run another step")
	// ErrEngineDead matches (errors.Is) every *DeadError.
	ErrEngineDead = errors.New("engine is dead")
)

// DeathReason names what killed the engine: the reason label of
// glassbox_engine_dead.
type DeathReason string

const (
	DeathExecutorError DeathReason = "executor_error" // Execute returned an error wrapping ErrExecutorDead
	DeathStepTimeout   DeathReason = "step_timeout"   // a step ran past Config.StepTimeout
	DeathPanic         DeathReason = "executor_panic" // Execute panicked
)

// DeathReasons lists every reason, in the order metrics pre-create them.
var DeathReasons = []DeathReason{DeathExecutorError, DeathStepTimeout, DeathPanic}

// DeadError is why the engine stopped. Every request it held ends with it
// (Output.Err) and every later submission fails with it.
type DeadError struct {
	Reason DeathReason
	Err    error // the executor's error, the panic, or the timeout
}

func (e *DeadError) Error() string { return fmt.Sprintf("engine is dead (%s): %v", e.Reason, e.Err) }

func (e *DeadError) Unwrap() error { return e.Err }

// Is makes every DeadError match ErrEngineDead.
func (e *DeadError) Is(target error) bool { return target == ErrEngineDead }

// Health is nil while the engine can serve, and the *DeadError that
// stopped it once its executor died (an engine shut down on purpose is
// not unhealthy: see Closed). It never blocks on the engine goroutine, so
// a probe gets an answer during a hung step too.
func (e *Engine) Health() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead == nil {
		return nil
	}
	return e.dead
}

// closedErr is what a caller gets once the engine no longer takes
// requests: the *DeadError when it died, else ErrClosed. Callers hold mu.
func (e *Engine) closedErr() error {
	if e.dead != nil {
		return e.dead
	}
	return ErrClosed
}

// panicStacker is a panic value that carries the stack it was raised on:
// a panic on one of an executor's own threads, raised again on the
// engine's (tensor.Pool's). Its stack is logged instead of the engine's.
type panicStacker interface {
	PanicStack() []byte
}

// execResult is how one call of Execute ended.
type execResult struct {
	err      error
	panicked bool
	value    any    // the panic's value
	stack    []byte // where it panicked
	hung     bool   // it ran past Config.StepTimeout: still running
}

// execute runs the step's Execute. Without a step timeout it calls it on
// the engine goroutine; with one, on the executor goroutine, and waits at
// most the timeout for it. A hung call cannot be cancelled: its goroutine
// (and the OS thread or device call it is in) stays where it is, holding
// the batch, until the call returns, if it ever does; the engine never
// touches the batch or the result again.
func (e *Engine) execute() execResult {
	if e.cfg.StepTimeout <= 0 {
		return e.callExecutor()
	}
	if e.calls == nil {
		e.startExecutor() // an Advance-driven engine's first step
	}
	e.watchdog.Reset(e.cfg.StepTimeout)
	e.calls <- struct{}{}
	select {
	case r := <-e.results:
		e.watchdog.Stop()
		return r
	case <-e.watchdog.C:
		return execResult{hung: true}
	}
}

// startExecutor starts the executor goroutine, under a step timeout only:
// Run starts it with itself, and stop ends it (closing calls).
func (e *Engine) startExecutor() {
	e.calls, e.results = make(chan struct{}), make(chan execResult, 1)
	e.watchdog = time.NewTimer(e.cfg.StepTimeout)
	e.watchdog.Stop()
	go e.executorLoop(e.calls, e.results)
}

// executorLoop is the executor goroutine: one Execute per token on calls,
// its result on results (buffered: an abandoned call's result is
// dropped there, never blocks).
func (e *Engine) executorLoop(calls <-chan struct{}, results chan<- execResult) {
	for range calls {
		results <- e.callExecutor()
	}
}

// callExecutor calls Execute, turning a panic into a result.
func (e *Engine) callExecutor() (r execResult) {
	defer func() {
		if v := recover(); v != nil {
			r = execResult{panicked: true, value: v, stack: debug.Stack()}
			if s, ok := v.(panicStacker); ok {
				r.stack = s.PanicStack()
			}
		}
	}()
	return execResult{err: e.exec.Execute(&e.batch, &e.result)}
}

// deathOf is the DeadError a step's execution ends the engine with, or nil
// when it may carry on (a plain error fails only the step's requests).
func (e *Engine) deathOf(r *execResult, seqs int) *DeadError {
	switch {
	case r.hung:
		return &DeadError{Reason: DeathStepTimeout,
			Err: fmt.Errorf("a step of %d sequences ran for more than the step timeout (%s) and has not returned", seqs, e.cfg.StepTimeout)}
	case r.panicked:
		return &DeadError{Reason: DeathPanic, Err: fmt.Errorf("the executor panicked: %v", r.value)}
	case errors.Is(r.err, ErrExecutorDead):
		return &DeadError{Reason: DeathExecutorError, Err: r.err}
	}
	return nil
}

// die stops the engine for good: it logs why, once, then ends every request
// as stop does. Engine goroutine only.
func (e *Engine) die(d *DeadError, stack []byte) {
	attrs := []any{"reason", string(d.Reason), "err", d.Err, "running", e.sched.NumRunning(), "waiting", e.sched.NumWaiting()}
	if stack != nil {
		attrs = append(attrs, "stack", string(stack))
	}
	e.log.Error("engine dead: in-flight and new requests fail, /health answers 503", attrs...)
	e.stop(FinishError, d)
}

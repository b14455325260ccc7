// Package profiler records on-demand profiles of the engine: between
// POST /start_profile and /stop_profile (or until a step or time cap), it
// keeps every engine step and request event and writes them as a gzipped
// Chrome/Perfetto trace (open it in ui.perfetto.dev), with a Go CPU profile
// (runtime/pprof) of the same window beside it.
//
// The Profiler is an engine.Observer. While idle its observer methods cost
// one atomic load; while recording they append to in-memory buffers under a
// mutex. Files are written by the recording's own goroutine, never on the
// engine goroutine. It must not import server, metrics, tracing or an
// executor.
package profiler

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// Config is the profiler's configuration, filled from flags in cmd/.
type Config struct {
	Dir         string        // --profiler-dir: where profiles are written
	MaxSteps    int           // --profiler-max-steps: a recording stops itself after this many steps (default 2000)
	MaxDuration time.Duration // --profiler-max-duration: ... or after this long (default 30 s)
	Version     string        // stamped into the trace's metadata
	Logger      *slog.Logger
}

// Profiler drives recordings. Start and Stop are safe from any goroutine;
// the observer methods are called by the engine goroutine.
type Profiler struct {
	cfg Config
	log *slog.Logger

	ctl sync.Mutex // serialises Start, Stop and Close
	cur *session   // the recording started last, until Stop collects it

	active atomic.Bool // a recording accepts events
	mu     sync.Mutex  // guards rec
	rec    *recording
}

// session is one recording's control: stop asks it to end; done is closed
// once its files are written (err says how that went).
type session struct {
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error
	trace    string
	cpu      string
}

// New checks cfg and creates the directory.
func New(cfg Config) (*Profiler, error) {
	if cfg.Dir == "" {
		return nil, errors.New("create profiler: no directory")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 2000
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create profiler directory: %w", err)
	}
	return &Profiler{cfg: cfg, log: cfg.Logger}, nil
}

// Start begins a recording. While one is in progress it does nothing, as
// vLLM's /start_profile. It fails when the Go CPU profiler is already in
// use (for example by /debug/pprof/profile).
func (p *Profiler) Start() error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	if s := p.cur; s != nil {
		select {
		case <-s.done: // it stopped itself at a cap: a new one may start
		default:
			return nil
		}
	}
	now := time.Now()
	base := filepath.Join(p.cfg.Dir, fmt.Sprintf("glassbox.%d", now.UnixNano()))
	s := &session{stop: make(chan struct{}), done: make(chan struct{}), trace: base + ".trace.json.gz", cpu: base + ".cpu.pprof"}
	cpu, err := os.Create(s.cpu)
	if err != nil {
		return fmt.Errorf("start profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		os.Remove(s.cpu)
		return fmt.Errorf("start CPU profile: %w", err)
	}
	rec := &recording{start: now, full: make(chan struct{}), maxSteps: p.cfg.MaxSteps}
	p.mu.Lock()
	p.rec = rec
	p.mu.Unlock()
	p.active.Store(true)
	p.cur = s
	go p.record(s, rec, cpu)
	p.log.Info("profiling started", "trace", s.trace, "cpu_profile", s.cpu, "max_steps", p.cfg.MaxSteps, "max_duration", p.cfg.MaxDuration)
	return nil
}

// record waits for the end of the window, then writes both files.
func (p *Profiler) record(s *session, rec *recording, cpu *os.File) {
	defer close(s.done)
	timer := time.NewTimer(p.cfg.MaxDuration)
	defer timer.Stop()
	why := "stopped"
	select {
	case <-s.stop:
	case <-rec.full:
		why = "step limit reached"
	case <-timer.C:
		why = "time limit reached"
	}
	p.active.Store(false)
	p.mu.Lock()
	p.rec = nil
	p.mu.Unlock()
	pprof.StopCPUProfile()
	err := cpu.Close()
	rec.end = time.Now()
	if werr := writeTrace(s.trace, rec, p.cfg); werr != nil {
		err = errors.Join(err, werr)
	}
	s.err = err
	p.log.Info("profile written", "why", why, "steps", len(rec.steps), "trace", s.trace, "cpu_profile", s.cpu, "err", err)
}

// Stop ends the recording and returns once its files are written. Without
// a recording it does nothing.
func (p *Profiler) Stop() error {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	s := p.cur
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	p.cur = nil
	return s.err
}

// Close stops a recording in progress, writing its files.
func (p *Profiler) Close() error { return p.Stop() }

// Recording reports whether a recording accepts steps: the engine's
// Config.Profiling, so that an executor times its kernels meanwhile.
func (p *Profiler) Recording() bool { return p.active.Load() }

// ObserveStep records a step while a recording is active.
func (p *Profiler) ObserveStep(ev *engine.StepEvent) {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec == nil || p.rec.isFull() {
		return
	}
	p.rec.addStep(ev)
	if p.rec.isFull() {
		p.active.Store(false)
		close(p.rec.full)
	}
}

// ObserveFinished records a request's end while a recording is active.
func (p *Profiler) ObserveFinished(f *engine.FinishedEvent) {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec != nil {
		p.rec.addFinished(f)
	}
}

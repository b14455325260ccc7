package engine

import (
	"context"
	"slices"
	"sync"
)

// Stream is one request's output channel. The engine never blocks on it:
// when the reader falls behind, pending outputs are merged into one.
type Stream struct {
	id string
	mu sync.Mutex
	// unlocked: the engine's driver pushes and reads it on one goroutine
	// (Engine.Drive), so mu is not taken.
	unlocked bool
	ready    chan struct{} // holds a token while pending is non-empty
	out      Output        // pending, filled by the engine
	has      bool
	closed   bool // the final output has been queued
	done     bool // the reader has taken the final output
}

func newStream(id string) *Stream {
	return &Stream{id: id, ready: make(chan struct{}, 1)}
}

// ID is the request id the stream belongs to.
func (s *Stream) ID() string { return s.id }

// push merges o into the pending output and wakes the reader. Called by the
// engine goroutine only.
func (s *Stream) push(o *Output) {
	s.lock()
	if s.closed {
		s.unlock()
		return
	}
	p := &s.out
	p.Tokens = append(p.Tokens, o.Tokens...)
	p.Logprobs = append(p.Logprobs, o.Logprobs...)
	p.Text += o.Text // take left it empty
	p.Finished, p.FinishReason, p.StopToken, p.Err = o.Finished, o.FinishReason, o.StopToken, o.Err
	p.PromptTokens, p.CachedTokens, p.Timing = o.PromptTokens, o.CachedTokens, o.Timing
	if o.Embedding != nil {
		p.Embedding = o.Embedding
	}
	s.has = true
	s.closed = o.Finished
	s.unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// TryNext returns the pending output without waiting, or false when there
// is none: for a driver that owns the engine loop (Advance) and reads
// every stream between steps.
func (s *Stream) TryNext() (Output, bool) {
	s.lock()
	defer s.unlock()
	if !s.has {
		return Output{}, false
	}
	return s.take(), true
}

// TryNextInto is TryNext into the caller's o, for a driver that reads every
// stream after every step: the pending tokens and logprobs are copied into
// o's own slices, reused from its last call, so that reading a step's
// token allocates nothing; the rest of o is replaced. It reports false,
// leaving o as it was, when nothing is pending.
func (s *Stream) TryNextInto(o *Output) bool {
	s.lock()
	defer s.unlock()
	if !s.has {
		return false
	}
	toks, lps := o.Tokens[:0], o.Logprobs[:0]
	*o = s.out
	o.Tokens = append(toks, s.out.Tokens...)
	o.Logprobs = append(lps, s.out.Logprobs...)
	s.out = Output{Tokens: s.out.Tokens[:0], Logprobs: s.out.Logprobs[:0]}
	s.has, s.done = false, o.Finished
	return true
}

// take hands the pending output over, its slices copied for the caller to
// own, and keeps the pending buffers for the engine to fill again: the
// copy is made on the reader's goroutine, so the engine's loop does not
// allocate per stream and step. The caller holds mu and has seen s.has.
func (s *Stream) take() Output {
	o := s.out
	o.Tokens = slices.Clone(s.out.Tokens)
	o.Logprobs = slices.Clone(s.out.Logprobs)
	s.out = Output{Tokens: s.out.Tokens[:0], Logprobs: s.out.Logprobs[:0]}
	s.has, s.done = false, o.Finished
	return o
}

func (s *Stream) lock() {
	if !s.unlocked {
		s.mu.Lock()
	}
}

func (s *Stream) unlock() {
	if !s.unlocked {
		s.mu.Unlock()
	}
}

// Next waits for the next output. It returns false when the final output
// has already been returned or ctx is done. The caller owns the Output:
// the engine starts a new one for what comes after.
func (s *Stream) Next(ctx context.Context) (Output, bool) {
	for {
		s.mu.Lock()
		if s.has {
			o := s.take()
			s.mu.Unlock()
			return o, true
		}
		done := s.done
		s.mu.Unlock()
		if done {
			return Output{}, false
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Output{}, false
		}
	}
}

package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fakeContext is a Context whose thread runs calls as run does, without a
// driver: Do, DoWithin and Close are exercised on it as on a GPU's.
func fakeContext() *Context {
	c := &Context{work: make(chan func()), closed: make(chan struct{})}
	go func() {
		for f := range c.work {
			f()
		}
		close(c.closed)
	}()
	return c
}

func TestStickyErrors(t *testing.T) {
	for code, sticky := range map[int]bool{
		700: true, 719: true, 715: true, 716: true, 718: true, 710: true, 214: true, // faults: the context is lost
		1: false, 2: false, 701: false, 600: false, 999: false, // a bad value, out of memory, out of resources for one launch, not ready, unknown
	} {
		err := fmt.Errorf("execute: %w", &Error{Call: "cuStreamSynchronize", Code: code})
		if got := ContextLost(err); got != sticky {
			t.Errorf("CUresult %d: ContextLost %v, want %v", code, got, sticky)
		}
	}
	if !ContextLost(fmt.Errorf("execute: %w", ErrHung)) || ContextLost(errors.New("plan: 70000 tokens")) {
		t.Error("ContextLost: a hung call is lost, a plain error is not")
	}
}

// TestDoWithinGivesUpOnAHungCall: a call past its deadline returns
// ErrHung at the deadline; the context is hung from then on (Do fails at
// once, without queueing behind the call); Close does not wait for it;
// the thread ends when the call returns at last.
func TestDoWithinGivesUpOnAHungCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeContext()
		if err := c.DoWithin(time.Minute, func() error { return errIllegal }); err != errIllegal {
			t.Fatalf("a call within its deadline: %v, want its own error", err)
		}
		release := make(chan struct{})
		start := time.Now()
		err := c.DoWithin(time.Minute, func() error { <-release; return nil })
		if !errors.Is(err, ErrHung) || time.Since(start) != time.Minute || !strings.Contains(err.Error(), "ran for more than 1m0s") {
			t.Fatalf("hung call: %v after %s, want ErrHung after 1m", err, time.Since(start))
		}
		ran := false
		if err := c.Do(func() error { ran = true; return nil }); !errors.Is(err, ErrHung) || ran {
			t.Errorf("Do on a hung context: %v (ran %v), want ErrHung at once", err, ran)
		}
		c.Close() // returns: the thread is still in the call
		close(release)
		synctest.Wait() // the thread ends (the bubble fails the test if not)
		select {
		case <-c.closed:
		default:
			t.Error("the thread did not end after its hung call returned")
		}
	})
}

var errIllegal = &Error{Call: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}

// TestDoWithinBehindAHungCall: a call that cannot get the thread, busy in
// another call past the deadline, gives up the same way.
func TestDoWithinBehindAHungCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeContext()
		release := make(chan struct{})
		go c.Do(func() error { <-release; return nil })
		synctest.Wait()
		if err := c.DoWithin(time.Second, func() error { return nil }); !errors.Is(err, ErrHung) || !strings.Contains(err.Error(), "another call") {
			t.Errorf("a call behind a hung one: %v, want ErrHung", err)
		}
		close(release)
		synctest.Wait()
		c.Close()
	})
}

// TestDoPanicReachesTheCaller: a panic inside a call on the thread (Go
// code of a step: it would end the process there) is raised again on
// Do's caller as a *ThreadPanic with the thread's stack, and the thread
// serves on; Do after Close is ErrClosed.
func TestDoPanicReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeContext()
		v := func() (v any) {
			defer func() { v = recover() }()
			_ = c.Do(func() error { panic("index out of range [9] with length 9") })
			return nil
		}()
		p, ok := v.(*ThreadPanic)
		if !ok || !strings.Contains(p.Error(), "index out of range") || !strings.Contains(string(p.PanicStack()), "TestDoPanicReachesTheCaller") {
			t.Fatalf("Do of a panicking call raised %#v, want a *ThreadPanic with the call's stack", v)
		}
		if err := c.Do(func() error { return nil }); err != nil {
			t.Errorf("Do after a panic: %v, want the thread serving", err)
		}
		c.Close()
		if err := c.Do(func() error { return nil }); err != ErrClosed {
			t.Errorf("Do after Close: %v, want ErrClosed", err)
		}
	})
}

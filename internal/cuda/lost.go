package cuda

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// stickyCodes are the CUresults after which the context is lost: the
// driver documents each as leaving "the process in an inconsistent state"
// where "any further CUDA work will return the same error" (or the
// context "cannot be used anymore"). Only a new process recovers.
var stickyCodes = map[int]bool{
	214: true, // CUDA_ERROR_ECC_UNCORRECTABLE
	700: true, // CUDA_ERROR_ILLEGAL_ADDRESS
	702: true, // CUDA_ERROR_LAUNCH_TIMEOUT
	709: true, // CUDA_ERROR_CONTEXT_IS_DESTROYED
	710: true, // CUDA_ERROR_ASSERT
	714: true, // CUDA_ERROR_HARDWARE_STACK_ERROR
	715: true, // CUDA_ERROR_ILLEGAL_INSTRUCTION
	716: true, // CUDA_ERROR_MISALIGNED_ADDRESS
	717: true, // CUDA_ERROR_INVALID_ADDRESS_SPACE
	718: true, // CUDA_ERROR_INVALID_PC
	719: true, // CUDA_ERROR_LAUNCH_FAILED
	721: true, // CUDA_ERROR_TENSOR_MEMORY_LEAK
}

// Sticky reports whether the error leaves the context unusable (a kernel
// that faulted, a device exception), as opposed to a failure of this call
// alone (out of memory, out of resources for one launch, a bad argument).
func (e *Error) Sticky() bool { return stickyCodes[e.Code] }

// ErrHung is returned by DoWithin when its call ran past the deadline,
// and by every call on the context after that.
var ErrHung = errors.New("a call on the cuda context's thread did not return")

// ContextLost reports whether err means no later call on the context can
// succeed: a sticky error, or a hung call.
func ContextLost(err error) bool {
	var e *Error
	return errors.Is(err, ErrHung) || errors.As(err, &e) && e.Sticky()
}

// DoWithin runs f on the context's thread as Do does, but waits at most d
// (0: for ever) for the thread to take it and finish it. A call cannot be
// cancelled: past d, the thread stays inside it (and with it whatever the
// driver is waiting for), the context is marked hung, and this and every
// later Do or DoWithin fail at once with ErrHung instead of queueing
// behind it; Close then leaves the thread to the process's exit.
func (c *Context) DoWithin(d time.Duration, f func() error) error {
	if err := c.hungErr(); err != nil {
		return err
	}
	done := make(chan result, 1) // the call may finish after we gave up on it
	call := func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{panicked: &ThreadPanic{Value: v, Stack: debug.Stack()}}
			}
		}()
		done <- result{err: f()}
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	switch taken, err := c.hand(call, timeout); {
	case err != nil:
		return err
	case !taken:
		return c.giveUp(fmt.Errorf("%w: %s's thread has been in another call for more than %s", ErrHung, c.name(), d))
	}
	select {
	case r := <-done:
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.err
	case <-timeout:
		return c.giveUp(fmt.Errorf("%w: a call on %s's thread ran for more than %s", ErrHung, c.name(), d))
	}
}

// hand gives call to the thread, or reports that timeout came first; after
// Close it fails with ErrClosed.
func (c *Context) hand(call func(), timeout <-chan time.Time) (taken bool, err error) {
	defer func() {
		if recover() != nil { // a send on the closed work channel
			taken, err = false, ErrClosed
		}
	}()
	select {
	case c.work <- call:
		return true, nil
	case <-timeout:
		return false, nil
	}
}

// result is how a call on the thread ended.
type result struct {
	err      error
	panicked *ThreadPanic
}

// ThreadPanic is a panic of a call on the context's thread, raised again by
// Do on its caller, whose recover (the engine's) can reach it: on the
// thread it would end the process. The thread serves on.
type ThreadPanic struct {
	Value any
	Stack []byte // where it panicked
}

func (p *ThreadPanic) Error() string {
	return fmt.Sprintf("a call on the cuda context's thread panicked: %v", p.Value)
}

// PanicStack is where the call panicked.
func (p *ThreadPanic) PanicStack() []byte { return p.Stack }

// giveUp marks the context hung with err (the first one stays) and
// returns it.
func (c *Context) giveUp(err error) error {
	c.mu.Lock()
	if c.hung == nil {
		c.hung = err
	}
	c.mu.Unlock()
	return err
}

// hungErr is the error of the call that hung, or nil.
func (c *Context) hungErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hung
}

func (c *Context) name() string {
	if c.Device == nil {
		return "the GPU"
	}
	return c.Device.Name
}

package cuda

import (
	"errors"
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// How the device fails, as the executor tells it apart: a call that
// fails on its own (a launch refused for resources, memory short) leaves
// the context usable; a fault in a kernel is sticky (every later call on
// the context returns it: the context is dead until the process ends);
// a kernel that never ends hangs every later wait on the stream.

// stickyCodes are the CUresults after which the context is unusable.
var stickyCodes = map[int]bool{
	214: true, // ECC_UNCORRECTABLE
	700: true, // ILLEGAL_ADDRESS
	702: true, // LAUNCH_TIMEOUT
	710: true, // ASSERT
	714: true, // HARDWARE_STACK_ERROR
	715: true, // ILLEGAL_INSTRUCTION
	716: true, // MISALIGNED_ADDRESS
	717: true, // INVALID_ADDRESS_SPACE
	718: true, // INVALID_PC
	719: true, // LAUNCH_FAILED
}

// sticky reports whether err is a fault that left the context dead.
func sticky(err error) bool {
	var e *cuda.Error
	return errors.As(err, &e) && stickyCodes[e.Code]
}

// errHung is a wait on the device that did not end in time.
var errHung = errors.New("the GPU did not finish it: a kernel hangs, and the context cannot be used again")

// dead reports whether the device can take no more work after err.
func dead(err error) bool { return sticky(err) || errors.Is(err, errHung) }

// within runs f (which waits on the device) and gives up waiting after
// limit: a kernel that never ends must not hang the caller. On time out
// f's goroutine stays blocked in the driver with the device's thread; the
// device is unusable from then on, and the process should end.
func within(limit time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s: waited %v: %w", what, limit, errHung)
	}
}

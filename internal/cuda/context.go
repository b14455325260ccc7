package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Context is the device's primary context, current on one OS thread that
// a goroutine of its own keeps locked: every call that touches the device
// runs inside Do. (A context is current per thread: the driver answers
// CUDA_ERROR_INVALID_CONTEXT to a call from any other.)
type Context struct {
	d      *Driver
	Device *Device
	ctx    CUcontext
	work   chan func()
	closed chan struct{}

	mu   sync.Mutex
	hung error // set once a DoWithin gave up on a call (lost.go)
}

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("cuda context is closed")

// NewContext retains dev's primary context (the one the CUDA runtime and
// cuBLASLt share) on a new locked thread.
func (d *Driver) NewContext(dev *Device) (*Context, error) {
	c := &Context{d: d, Device: dev, work: make(chan func()), closed: make(chan struct{})}
	started := make(chan error, 1)
	go c.run(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Context) run(started chan<- error) {
	// The thread stays locked until the goroutine ends, and is then
	// destroyed with it: no other goroutine ever runs on a thread where
	// the context is current.
	runtime.LockOSThread()
	d := c.d
	if err := d.check("cuDevicePrimaryCtxRetain", d.api.PrimaryCtxRetain(&c.ctx, c.Device.handle)); err != nil {
		started <- fmt.Errorf("create a context on %s: %w", c.Device.Name, err)
		return
	}
	if err := d.check("cuCtxSetCurrent", d.api.CtxSetCurrent(c.ctx)); err != nil {
		d.api.PrimaryCtxRelease(c.Device.handle)
		started <- fmt.Errorf("create a context on %s: %w", c.Device.Name, err)
		return
	}
	started <- nil
	for f := range c.work {
		f()
	}
	d.api.CtxSynchronize()
	d.api.PrimaryCtxRelease(c.Device.handle)
	close(c.closed)
}

// Do runs f on the context's thread and returns its error, waiting as
// long as it takes (DoWithin bounds the wait). f must not call Do (it
// would wait for itself).
func (c *Context) Do(f func() error) error { return c.DoWithin(0, f) }

// Close waits for the device to finish, releases the context and ends
// its thread. Memory and modules not freed before are freed with it. On a
// hung context it does not wait: the thread ends, and the context is
// released, if its call ever returns; else the process's exit frees them.
func (c *Context) Close() {
	close(c.work)
	if c.hungErr() != nil {
		return
	}
	<-c.closed
}

// Driver is the driver the context was made by.
func (c *Context) Driver() *Driver { return c.d }

// Synchronize waits for all the context's work.
func (c *Context) Synchronize() error {
	return c.d.check("cuCtxSynchronize", c.d.api.CtxSynchronize())
}

// MemInfo is the device's free and total memory, as the driver sees it.
func (c *Context) MemInfo() (free, total int64, err error) {
	var f, t uint64
	if err := c.d.check("cuMemGetInfo", c.d.api.MemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

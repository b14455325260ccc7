package cuda

import (
	"errors"
	"maps"
	"slices"
)

// One owner for each thing on the device: the Device owns its context,
// stream, kernels, cuBLASLt and workspace; a Loaded model its weights and
// step buffers; an Executor its KV cache, graphs and events, and it
// borrows its model's weights and step buffers. Closing an owner closes
// what borrows from it first, so Close calls in any order, and twice,
// free everything once. The books of who is open are under Device.mu.

// adopt makes l one of the device's models (closed with it); on a device
// already closed it frees l and says so.
func (d *Device) adopt(l *Loaded) error {
	d.mu.Lock()
	closed := d.closed
	if !closed {
		d.loaded[l] = struct{}{}
	}
	d.mu.Unlock()
	if closed {
		l.closed = true
		_ = d.Do(func() error { l.free(); return nil })
		return errDeviceClosed
	}
	return nil
}

// Close frees the model's device memory, after closing the executors
// still started on it; a second Close does nothing.
func (l *Loaded) Close() {
	d := l.dev
	d.mu.Lock()
	if l.closed {
		d.mu.Unlock()
		return
	}
	l.closed = true
	execs := slices.Collect(maps.Keys(l.execs))
	delete(d.loaded, l)
	d.mu.Unlock()
	for _, e := range execs {
		e.Close()
	}
	_ = d.Do(func() error { l.free(); return nil })
}

// free releases the step buffers and the weights (inside Do).
func (l *Loaded) free() {
	if l.bufs != nil {
		l.bufs.free(l.dev)
	}
	if l.w != nil {
		l.w.free(l.dev)
	}
}

var (
	errDeviceClosed = errors.New("the GPU device is closed")
	errModelClosed  = errors.New("the model was closed")
)

// isClosed reads l.closed under the device's lock.
func (l *Loaded) isClosed() bool {
	l.dev.mu.Lock()
	defer l.dev.mu.Unlock()
	return l.closed
}

// startable says why no executor may start on l now: it was closed, or
// one is running on it (they would share the step buffers).
func (l *Loaded) startable() error {
	l.dev.mu.Lock()
	defer l.dev.mu.Unlock()
	return l.cannotStart()
}

// cannotStart is startable with dev.mu held.
func (l *Loaded) cannotStart() error {
	switch {
	case l.closed:
		return errModelClosed
	case len(l.execs) > 0:
		return errors.New("an executor already runs on the model (close it first)")
	}
	return nil
}

// lend registers e as borrowing l's memory; if l was closed (or another
// executor started) meanwhile, e is freed and the error says why.
func (l *Loaded) lend(e *Executor) error {
	l.dev.mu.Lock()
	err := l.cannotStart()
	if err == nil {
		l.execs[e] = struct{}{}
	} else {
		e.closed = true
	}
	l.dev.mu.Unlock()
	if err != nil {
		_ = l.dev.Do(func() error { e.free(); return nil })
	}
	return err
}

// Close releases what the executor owns: its graphs, events and KV
// cache. The weights and step buffers it borrowed stay with the Loaded
// model (Loaded.Close frees them). A second Close does nothing; Execute
// after Close fails. Call it once the engine has stopped calling Execute.
func (e *Executor) Close() {
	d := e.dev
	d.mu.Lock()
	if e.closed {
		d.mu.Unlock()
		return
	}
	e.closed = true
	delete(e.l.execs, e)
	d.mu.Unlock()
	_ = d.Do(func() error { e.free(); return nil })
}

// free releases the executor's own device objects (inside Do).
func (e *Executor) free() {
	e.gc.close()
	if e.start != nil {
		e.start.Destroy()
		e.start = nil
	}
	if e.end != nil {
		e.end.Destroy()
		e.end = nil
	}
	if e.events != nil {
		e.events.destroy()
		e.events = nil
	}
	e.dev.ctx.Free(e.kv)
	e.kv = 0
}

package cuda

import "fmt"

// Stream is a queue of device work.
type Stream struct {
	c *Context
	h uintptr
}

const streamNonBlocking = 1 // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0

// NewStream makes a stream that does not wait for the legacy default one.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	if err := c.d.check("cuStreamCreate", call(c.d.fn.streamCreate, ptr(&s.h), streamNonBlocking)); err != nil {
		return nil, fmt.Errorf("create a stream: %w", err)
	}
	return s, nil
}

// Destroy releases the stream once its work is done.
func (s *Stream) Destroy() { call(s.c.d.fn.streamDestroy, s.h) }

// Synchronize waits for everything queued on s.
func (s *Stream) Synchronize() error {
	return s.c.d.check("cuStreamSynchronize", call(s.c.d.fn.streamSynchronize, s.h))
}

// Event marks a point in a stream, for timing and waiting.
type Event struct {
	c *Context
	h uintptr
}

// NewEvent makes an event that records time.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	if err := c.d.check("cuEventCreate", call(c.d.fn.eventCreate, ptr(&e.h), 0)); err != nil {
		return nil, fmt.Errorf("create an event: %w", err)
	}
	return e, nil
}

// Destroy releases the event.
func (e *Event) Destroy() { call(e.c.d.fn.eventDestroy, e.h) }

// Record marks the point s has reached in its queue.
func (e *Event) Record(s *Stream) error {
	return e.c.d.check("cuEventRecord", call(e.c.d.fn.eventRecord, e.h, s.h))
}

// Synchronize waits until the stream has passed the event.
func (e *Event) Synchronize() error {
	return e.c.d.check("cuEventSynchronize", call(e.c.d.fn.eventSynchronize, e.h))
}

// Elapsed is the GPU time from start to e, in milliseconds; both must
// have completed.
func (e *Event) Elapsed(start *Event) (float32, error) {
	var ms float32
	if err := e.c.d.check("cuEventElapsedTime", call(e.c.d.fn.eventElapsedTime, ptr(&ms), start.h, e.h)); err != nil {
		return 0, err
	}
	return ms, nil
}

// Graph is an instantiated CUDA graph: a captured sequence of work that
// replays with one launch.
type Graph struct {
	c    *Context
	g, x uintptr
}

const captureThreadLocal = 1 // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

// BeginCapture starts recording s's work into a graph instead of running
// it; EndCapture finishes it.
func (s *Stream) BeginCapture() error {
	return s.c.d.check("cuStreamBeginCapture", call(s.c.d.fn.streamBeginCapture, s.h, captureThreadLocal))
}

// EndCapture ends a capture and instantiates what was recorded.
func (s *Stream) EndCapture() (*Graph, error) {
	g := &Graph{c: s.c}
	if err := s.c.d.check("cuStreamEndCapture", call(s.c.d.fn.streamEndCapture, s.h, ptr(&g.g))); err != nil {
		return nil, fmt.Errorf("capture a graph: %w", err)
	}
	if err := s.c.d.check("cuGraphInstantiateWithFlags", call(s.c.d.fn.graphInstantiate, ptr(&g.x), g.g, 0)); err != nil {
		call(s.c.d.fn.graphDestroy, g.g)
		return nil, fmt.Errorf("instantiate a graph: %w", err)
	}
	return g, nil
}

// Launch queues a replay of the graph on s.
func (g *Graph) Launch(s *Stream) error {
	return g.c.d.check("cuGraphLaunch", call(g.c.d.fn.graphLaunch, g.x, s.h))
}

// Destroy releases the graph.
func (g *Graph) Destroy() {
	call(g.c.d.fn.graphExecDestroy, g.x)
	call(g.c.d.fn.graphDestroy, g.g)
}

package cuda

import "fmt"

// Stream is a queue of device work.
type Stream struct {
	c *Context
	h CUstream
}

const streamNonBlocking = 1 // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0

// NewStream makes a stream that does not wait for the legacy default one.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	if err := c.d.check("cuStreamCreate", c.d.api.StreamCreate(&s.h, streamNonBlocking)); err != nil {
		return nil, fmt.Errorf("create a stream: %w", err)
	}
	return s, nil
}

// Destroy releases the stream once its work is done.
func (s *Stream) Destroy() { s.c.d.api.StreamDestroy(s.h) }

// Synchronize waits for everything queued on s.
func (s *Stream) Synchronize() error {
	return s.c.d.check("cuStreamSynchronize", s.c.d.api.StreamSynchronize(s.h))
}

// Event marks a point in a stream, for timing and waiting.
type Event struct {
	c *Context
	h CUevent
}

// NewEvent makes an event that records time.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	if err := c.d.check("cuEventCreate", c.d.api.EventCreate(&e.h, 0)); err != nil {
		return nil, fmt.Errorf("create an event: %w", err)
	}
	return e, nil
}

// Destroy releases the event.
func (e *Event) Destroy() { e.c.d.api.EventDestroy(e.h) }

// Record marks the point s has reached in its queue.
func (e *Event) Record(s *Stream) error {
	return e.c.d.check("cuEventRecord", e.c.d.api.EventRecord(e.h, s.h))
}

// Synchronize waits until the stream has passed the event.
func (e *Event) Synchronize() error {
	return e.c.d.check("cuEventSynchronize", e.c.d.api.EventSynchronize(e.h))
}

// Elapsed is the GPU time from start to e, in milliseconds; both must
// have completed.
func (e *Event) Elapsed(start *Event) (float32, error) {
	var ms float32
	if err := e.c.d.check("cuEventElapsedTime", e.c.d.api.EventElapsedTime(&ms, start.h, e.h)); err != nil {
		return 0, err
	}
	return ms, nil
}

// Graph is an instantiated CUDA graph: a captured sequence of work that
// replays with one launch.
type Graph struct {
	c *Context
	g CUgraph
	x CUgraphExec
}

const captureThreadLocal = 1 // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

// BeginCapture starts recording s's work into a graph instead of running
// it; EndCapture finishes it.
func (s *Stream) BeginCapture() error {
	return s.c.d.check("cuStreamBeginCapture", s.c.d.api.StreamBeginCapture(s.h, captureThreadLocal))
}

// EndCapture ends a capture and instantiates what was recorded.
func (s *Stream) EndCapture() (*Graph, error) {
	g := &Graph{c: s.c}
	if err := s.c.d.check("cuStreamEndCapture", s.c.d.api.StreamEndCapture(s.h, &g.g)); err != nil {
		return nil, fmt.Errorf("capture a graph: %w", err)
	}
	if err := s.c.d.check("cuGraphInstantiateWithFlags", s.c.d.api.GraphInstantiate(&g.x, g.g, 0)); err != nil {
		s.c.d.api.GraphDestroy(g.g)
		return nil, fmt.Errorf("instantiate a graph: %w", err)
	}
	return g, nil
}

// Launch queues a replay of the graph on s.
func (g *Graph) Launch(s *Stream) error {
	return g.c.d.check("cuGraphLaunch", g.c.d.api.GraphLaunch(g.x, s.h))
}

// Destroy releases the graph.
func (g *Graph) Destroy() {
	g.c.d.api.GraphExecDestroy(g.x)
	g.c.d.api.GraphDestroy(g.g)
}

package cuda

import (
	"fmt"
	"log/slog"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// Decode steps replay CUDA graphs, one a batch-size bucket, as vLLM's
// do. A bucket's first step runs eagerly, which warms it up (the first
// cublasLtMatmul of each of its shapes, the GEMM plans, every kernel's
// first launch happen outside any capture) and computes that step; the
// graph is captured after it, for the bucket's later steps. A capture
// that fails leaves its bucket eager for good: logged once, never tried
// again. The graphs' memory is set aside before the KV cache is sized
// (graphBytes).

// graph is a captured decode step (a *cuda.Graph, or a test's fake).
type graph interface{ Destroy() }

// graphDevice is what the graph cache needs of the executor: the
// bucket's padded decode step run eagerly, the same captured into a
// graph, and a graph's replay (each on the device's thread).
type graphDevice interface {
	eager(size int) error
	capture(size int) (graph, error)
	replay(g graph) error
}

// graphCache holds each bucket's graph, or nil where its capture failed.
type graphCache struct {
	byBucket map[int]graph
	log      *slog.Logger
}

func newGraphCache(log *slog.Logger) *graphCache {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &graphCache{byBucket: map[int]graph{}, log: log}
}

// eagerFor reports whether bucket size's capture failed: its steps run
// eagerly, unpadded.
func (c *graphCache) eagerFor(size int) bool {
	if c == nil {
		return false
	}
	g, ok := c.byBucket[size]
	return ok && g == nil
}

// step runs one decode step of bucket size through dev: the graph's
// replay, or on the bucket's first step the eager warm-up then the
// capture.
func (c *graphCache) step(size int, dev graphDevice) error {
	if g, ok := c.byBucket[size]; ok {
		if g == nil {
			return dev.eager(size)
		}
		return dev.replay(g)
	}
	if err := dev.eager(size); err != nil {
		return err
	}
	g, err := dev.capture(size)
	if err != nil {
		if dead(err) {
			return err
		}
		c.byBucket[size] = nil
		c.log.Warn("CUDA graph capture failed: decode steps of this batch size run eagerly from now on", "batch_size", size, "err", err)
		return nil
	}
	c.byBucket[size] = g
	return nil
}

// close destroys the graphs (on the device's thread).
func (c *graphCache) close() {
	for size, g := range c.byBucket {
		if g != nil {
			g.Destroy()
		}
		delete(c.byBucket, size)
	}
}

// What a graph may take of the device's memory: an upper estimate of an
// executable graph's bookkeeping and its kernel nodes' parameters (the
// step's own buffers are the executor's, shared by every graph).
// scripts/gpu-check.sh measures the real figure against it
// (TestGraphMemoryWithinReserve).
const (
	graphBase          = 1 << 20  // a graph
	graphNodeBytes     = 16 << 10 // a node
	graphNodesPerLayer = 16       // 9 or 10 launches and 4 GEMMs (cuBLASLt's may take 2 kernels)
	graphNodesOutside  = 8        // the embedding, the final norm, the LM head, sampling
)

// graphBytes is the memory the decode graphs of buckets batch sizes set
// aside for a model of layers layers.
func graphBytes(layers, buckets int) int64 {
	nodes := int64(layers*graphNodesPerLayer + graphNodesOutside)
	return int64(buckets) * (graphBase + nodes*graphNodeBytes)
}

// execGraphs is the executor as a graphDevice, for the step planned in
// e.p.
type execGraphs struct{ e *Executor }

func (x execGraphs) eager(size int) error {
	p := &x.e.p
	return x.e.forward(size, size, size, 0, p.splits, p.lay)
}

func (x execGraphs) capture(size int) (graph, error) {
	s := x.e.dev.stream
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	ferr := x.eager(size)
	g, err := s.EndCapture() // ends the capture whatever happened in it
	if ferr != nil {
		if g != nil {
			g.Destroy()
		}
		return nil, fmt.Errorf("capture the decode graph for %d sequences: %w", size, ferr)
	}
	if err != nil {
		return nil, fmt.Errorf("capture the decode graph for %d sequences: %w", size, err)
	}
	return g, nil
}

func (x execGraphs) replay(g graph) error { return g.(*cuda.Graph).Launch(x.e.dev.stream) }

package cuda

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// fakeGraphs records what the graph cache asks of the device; capture
// fails with captureErr when set.
type fakeGraphs struct {
	calls      []string
	captureErr error
	destroyed  int
}

type fakeGraph struct {
	f    *fakeGraphs
	size int
}

func (g fakeGraph) Destroy() { g.f.destroyed++ }

func (f *fakeGraphs) eager(size int) error {
	f.calls = append(f.calls, fmt.Sprint("eager ", size))
	return nil
}
func (f *fakeGraphs) capture(size int) (graph, error) {
	f.calls = append(f.calls, fmt.Sprint("capture ", size))
	if f.captureErr != nil {
		return nil, f.captureErr
	}
	return fakeGraph{f, size}, nil
}
func (f *fakeGraphs) replay(g graph) error {
	f.calls = append(f.calls, fmt.Sprint("replay ", g.(fakeGraph).size))
	return nil
}

// TestGraphBucketWarmsUpBeforeCapture: a bucket's first step runs
// eagerly (the first cublasLtMatmul of its shapes outside any capture;
// it computes that step), then its graph is captured; later steps replay
// it. It used to capture at the first step, with no warm-up.
func TestGraphBucketWarmsUpBeforeCapture(t *testing.T) {
	f := &fakeGraphs{}
	c := newGraphCache(nil)
	for _, size := range []int{8, 8, 1, 8} {
		if err := c.step(size, f); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"eager 8", "capture 8", "replay 8", "eager 1", "capture 1", "replay 8"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
	c.close()
	if f.destroyed != 2 {
		t.Errorf("%d graphs destroyed, want 2", f.destroyed)
	}
}

// TestFailedCaptureRunsEagerForGood: a capture the driver refuses leaves
// its bucket eager from then on, logged once; the step that tried is not
// lost (its warm-up computed it), and no later step tries again (it used
// to be retried, and fail, on every step).
func TestFailedCaptureRunsEagerForGood(t *testing.T) {
	var log bytes.Buffer
	f := &fakeGraphs{captureErr: &cuda.Error{Call: "cuStreamEndCapture", Code: 901, Name: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"}}
	c := newGraphCache(slog.New(slog.NewTextHandler(&log, nil)))
	for range 3 {
		if err := c.step(16, f); err != nil {
			t.Fatalf("a failed capture failed the step: %v", err)
		}
	}
	want := []string{"eager 16", "capture 16", "eager 16", "eager 16"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
	if n := strings.Count(log.String(), "CUDA graph capture failed"); n != 1 || !strings.Contains(log.String(), "batch_size=16") {
		t.Errorf("logged %d times:\n%s", n, log.String())
	}
	if !c.eagerFor(16) || c.eagerFor(8) {
		t.Errorf("eager for 16: %v, for 8: %v", c.eagerFor(16), c.eagerFor(8))
	}
	// The plan then runs that bucket's steps unpadded, kernel by kernel.
	e := planExecutor(true)
	e.gc = c
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	b := &engine.Batch{}
	for i := range 9 { // bucket 16
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1}, Pos: 3, BlockTable: []int{i}, Sample: true, Params: &greedy})
	}
	if err := e.plan(b); err != nil {
		t.Fatal(err)
	}
	if e.p.bucket != 0 {
		t.Errorf("9 sequences planned into bucket %d after its capture failed", e.p.bucket)
	}
	b.Seqs = b.Seqs[:5] // bucket 8: still a graph
	if err := e.plan(b); err != nil || e.p.bucket != 8 {
		t.Errorf("5 sequences: bucket %d, %v", e.p.bucket, err)
	}
}

// TestStickyFaultInCaptureFailsTheStep: a capture that fails because the
// context is dead is the step's error, not a fallback.
func TestStickyFaultInCaptureFailsTheStep(t *testing.T) {
	f := &fakeGraphs{captureErr: &cuda.Error{Call: "cuStreamEndCapture", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}}
	c := newGraphCache(nil)
	if err := c.step(4, f); !dead(err) {
		t.Errorf("err %v", err)
	}
	if c.eagerFor(4) {
		t.Error("a dead context marked the bucket eager")
	}
}

// TestGraphMemoryKeptBeforeKV: with graphs, the KV cache is sized after
// setting aside what every bucket's graph may take, so that the cache,
// the graphs and everything in use stay within --gpu-memory-utilization
// (the cache took all of it before, and the graphs came on top); eager
// executors keep nothing; a --kv-cache-memory-bytes that leaves no room
// for them is refused naming them.
func TestGraphMemoryKeptBeforeKV(t *testing.T) {
	const total, used = int64(80 << 30), int64(3 << 30)
	per := int64(16 * 24 * 2 * 128 * 2 * 2) // Qwen2.5-0.5B: 16 tokens, 24 layers, K and V of 2 heads of 64
	graphs := graphBytes(24, len(graphBuckets(512)))
	if graphs < 100<<20 {
		t.Errorf("%d MiB for 67 graphs of 24 layers", graphs>>20)
	}
	for _, eager := range []bool{false, true} {
		m := Memory{Total: total}
		if !eager {
			m.Graphs = graphs
		}
		n, err := kvBlocks(0.9, 0, total, total-used, per, &m)
		if err != nil {
			t.Fatal(err)
		}
		if inAll := used + int64(n+1)*per + m.Graphs; inAll > int64(0.9*float64(total)) || inAll < int64(0.9*float64(total))-per {
			t.Errorf("eager %v: %d blocks: %.3f GiB in all, want at most and within a block of 0.9 of %d GiB", eager, n, gib(inAll), total>>30)
		}
	}
	m := Memory{Total: total, Graphs: graphs}
	if _, err := kvBlocks(0.9, total-used-per, total, total-used, per, &m); err == nil || !strings.Contains(err.Error(), "CUDA graphs") {
		t.Errorf("a cache of all the free memory: %v", err)
	}
}

package cuda_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/fakecuda"
)

// The bindings above the C functions, run against a fake driver and
// cuBLASLt (internal/fakecuda): what they pass and read, without a GPU.

// fakeContext opens the fake board's device 0 and its context.
func fakeContext(t *testing.T, cfg fakecuda.Config) (*cuda.Context, *fakecuda.GPU) {
	t.Helper()
	gpu := fakecuda.New(cfg)
	c, err := gpu.Context()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if f := gpu.Faults(); len(f) > 0 {
			t.Errorf("the fake driver saw misuses: %s", strings.Join(f, "; "))
		}
	})
	return c, gpu
}

// TestGEMMWorkspaceFromTheHeuristic: the scratch memory a GEMM's
// algorithm needs is cublasLtMatmulHeuristicResult_t's workspaceSize,
// the size_t at byte 64, after the 64-byte algorithm (issue 42's defect
// 6: it was read as the algorithm's byte 8).
func TestGEMMWorkspaceFromTheHeuristic(t *testing.T) {
	const need = 12<<20 + 4096 // 12 MiB and a page: wider than a byte
	c, gpu := fakeContext(t, fakecuda.Config{WorkspaceSize: need})
	err := c.Do(func() error {
		b, err := cuda.NewBLASLt(c, gpu.BLASLt(), "fake")
		if err != nil {
			return err
		}
		defer b.Close()
		g, err := b.Plan(cuda.BF16, cuda.F32, 4, 64, 128, 32<<20)
		if err != nil {
			return err
		}
		defer g.Destroy()
		if got := g.Workspace(); got != need {
			t.Errorf("Workspace() = %d, want the heuristic's workspaceSize %d", got, need)
		}
		// An algorithm needing more than the plan allows is refused,
		// not run with too little scratch.
		if g, err := b.Plan(cuda.BF16, cuda.F32, 4, 64, 128, need-1); err == nil {
			g.Destroy()
			t.Errorf("a plan allowing %d bytes took an algorithm needing %d", need-1, need)
		} else if !strings.Contains(err.Error(), "workspace") {
			t.Errorf("refusal %q does not say why", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopiesAreStreamWork: every copy and memset is queued on the
// stream it is given, the synchronous ones waiting for that stream: none
// goes to the legacy default stream, which the executor's non-blocking
// stream does not order itself with (issue 42's defect 8).
func TestCopiesAreStreamWork(t *testing.T) {
	c, gpu := fakeContext(t, fakecuda.Config{})
	in := []float32{1, 2, 3, 4}
	out := make([]float32, 4)
	var streamOps []fakecuda.Op
	err := c.Do(func() error {
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		p, err := c.Alloc(16)
		if err != nil {
			return err
		}
		defer c.Free(p)
		for _, step := range []func() error{
			func() error { return cuda.CopyIn(s, p, in) },
			func() error { return s.Zero(p, 4) },
			func() error { return s.Fill32(p.Add(4), 0x40400000, 1) }, // 3.0
			func() error { return s.CopyAsync(p.Add(8), p.Add(4), 4) },
			func() error { return cuda.CopyOut(s, out, p) },
		} {
			if err := step(); err != nil {
				return err
			}
		}
		streamOps = gpu.Ops()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 3, 3, 4}; !slices.Equal(out, want) {
		t.Errorf("copied back %v, want %v", out, want)
	}
	var calls []string
	for _, op := range streamOps {
		if op.Stream == 0 {
			t.Errorf("%s on the legacy default stream", op.Call)
		}
		calls = append(calls, op.Call)
	}
	want := []string{"cuMemcpyHtoDAsync_v2", "cuStreamSynchronize", "cuMemsetD8Async", "cuMemsetD32Async", "cuMemcpyDtoDAsync_v2",
		"cuMemcpyDtoHAsync_v2", "cuStreamSynchronize"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
}

// TestDriverTableComplete: a table missing a function is refused by the
// function's C name before anything is called.
func TestDriverTableComplete(t *testing.T) {
	api := fakecuda.New(fakecuda.Config{}).Driver()
	api.MemcpyHtoDAsync = nil
	_, err := cuda.NewDriver(api)
	if err == nil || !strings.Contains(err.Error(), "cuMemcpyHtoDAsync_v2") {
		t.Errorf("NewDriver without cuMemcpyHtoDAsync_v2: %v", err)
	}
	lt := fakecuda.New(fakecuda.Config{}).BLASLt()
	lt.Matmul = nil
	c, _ := fakeContext(t, fakecuda.Config{})
	if _, err := cuda.NewBLASLt(c, lt, "fake"); err == nil || !strings.Contains(err.Error(), "cublasLtMatmul") {
		t.Errorf("NewBLASLt without cublasLtMatmul: %v", err)
	}
}

// TestFreedEverything: a context's whole life on the fake leaves nothing
// allocated or created.
func TestFreedEverything(t *testing.T) {
	gpu := fakecuda.New(fakecuda.Config{})
	c, err := gpu.Context()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Do(func() error {
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		e, err := c.NewEvent()
		if err != nil {
			return err
		}
		h, err := c.HostAlloc(64)
		if err != nil {
			return err
		}
		c.FreeHost(h)
		e.Destroy()
		s.Destroy()
		return nil
	})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if live := gpu.Live(); len(live) > 0 {
		t.Errorf("left on the board: %v", live)
	}
}

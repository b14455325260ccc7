package fakecuda

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

const ptx = `.version 7.0
.target sm_80
.address_size 64

.visible .entry scale(
	.param .u64 scale_param_0,
	.param .u32 scale_param_1,
	.param .f32 scale_param_2
)
.maxntid 256, 1, 1
{
	ret;
}

.visible .entry touch(
	.param .u64 touch_param_0
)
{
	ret;
}
`

func TestPTXEntries(t *testing.T) {
	got := ptxEntries(ptx)
	if !slices.Equal(got["scale"], []int{8, 4, 4}) || !slices.Equal(got["touch"], []int{8}) || len(got) != 2 {
		t.Errorf("entries %v", got)
	}
}

// TestFreedMemoryIsCaught: a launch, or a graph replaying one, whose
// pointer argument is freed memory is a fault; so is a second free.
func TestFreedMemoryIsCaught(t *testing.T) {
	g := New(Config{})
	c, err := g.Context()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Do(func() error {
		m, err := c.LoadPTX([]byte(ptx))
		if err != nil {
			return err
		}
		defer m.Unload()
		f, err := m.Function("touch")
		if err != nil {
			return err
		}
		if _, err := m.Function("absent"); err == nil {
			t.Error("a kernel the PTX lacks was found")
		}
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		p, err := c.Alloc(64)
		if err != nil {
			return err
		}
		var a cuda.Args
		if err := f.Launch(s, cuda.Dim{X: 1}, cuda.Dim{X: 32}, 0, a.Reset().Ptr(p)); err != nil {
			return err
		}
		if err := s.BeginCapture(); err != nil {
			return err
		}
		if err := f.Launch(s, cuda.Dim{X: 1}, cuda.Dim{X: 32}, 0, a.Reset().Ptr(p)); err != nil {
			return err
		}
		graph, err := s.EndCapture()
		if err != nil {
			return err
		}
		defer graph.Destroy()
		if len(g.Faults()) > 0 {
			t.Errorf("faults before anything was freed: %v", g.Faults())
		}
		c.Free(p)
		if err := graph.Launch(s); err != nil {
			return err
		}
		if err := f.Launch(s, cuda.Dim{X: 1}, cuda.Dim{X: 32}, 0, a.Reset().Ptr(p)); err != nil {
			return err
		}
		c.Free(p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	faults := strings.Join(g.Faults(), "\n")
	for _, want := range []string{"cuGraphLaunch: touch, parameter 0", "cuLaunchKernel: touch, parameter 0", "cuMemFree_v2 of"} {
		if !strings.Contains(faults, want) {
			t.Errorf("no fault %q among:\n%s", want, faults)
		}
	}
}

// TestHugeCopyIsAFault: a copy or memset whose length runs past the end
// of the address space from inside an allocation is a fault the test
// reads, not a panic of the fake (the bounds' sum wrapped around).
func TestHugeCopyIsAFault(t *testing.T) {
	g := New(Config{Memory: 1 << 20})
	var p cuda.Ptr
	if r := g.memAlloc(&p, 64); r != success {
		t.Fatalf("cuMemAlloc: %d", r)
	}
	var b [8]byte
	huge := ^uint64(0) - 7
	if r := g.copyIn(p+8, unsafe.Pointer(&b[0]), huge, 0); r != invalidValue {
		t.Errorf("a copy of %d bytes into a 64-byte allocation: %d, want CUDA_ERROR_INVALID_VALUE", huge, r)
	}
	if r := g.memset("cuMemsetD8Async", p+8, []byte{0}, huge, 0); r != invalidValue {
		t.Errorf("a memset of %d bytes in a 64-byte allocation: %d, want CUDA_ERROR_INVALID_VALUE", huge, r)
	}
	if f := g.Faults(); len(f) != 2 || !strings.Contains(f[0], "outside every live allocation") {
		t.Errorf("faults %q, want the two copies' named", f)
	}
}

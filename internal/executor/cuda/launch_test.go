package cuda

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// launchRec is one launch a recording device took.
type launchRec struct {
	name          string
	grid, block   cuda.Dim
	shared, bound int
}

// recordingDevice is a Device without a GPU whose launches are recorded:
// its kernels are the PTX's names with the PTX's launch bounds.
func recordingDevice(t *testing.T, info *cuda.Device) (*Device, *[]launchRec) {
	t.Helper()
	bounds, err := launchBounds(kernelsPTX)
	if err != nil {
		t.Fatal(err)
	}
	k, err := newKernels(func(name string) (*cuda.Function, error) { return &cuda.Function{Name: name}, nil }, bounds)
	if err != nil {
		t.Fatal(err)
	}
	var recs []launchRec
	d := &Device{Info: info, k: k}
	d.record = func(k *kernel, grid, block cuda.Dim, shared int) error {
		recs = append(recs, launchRec{k.Name, grid, block, shared, k.maxThreads})
		return nil
	}
	return d, &recs
}

// h100 and sm86 are the limits of an H100 and of an RTX 3090 / A10
// (compute capability 8.6: 99 KiB of shared memory a block).
var (
	h100 = &cuda.Device{Name: "NVIDIA H100", Major: 9, SMs: 132, SharedOptin: 227 << 10, TotalMemory: 80 << 30}
	sm86 = &cuda.Device{Name: "NVIDIA A10", Major: 8, Minor: 6, SMs: 72, SharedOptin: 99 << 10, TotalMemory: 24 << 30}
)

// TestEveryKernelHasLaunchBounds: every kernel of the committed PTX
// declares the most threads a block of it has (.maxntid: without it the
// driver's compiler may give a 1024-thread launch more than 64 registers
// a thread, and every such launch fails with LAUNCH_OUT_OF_RESOURCES),
// and the executor looks up every kernel the PTX has.
func TestEveryKernelHasLaunchBounds(t *testing.T) {
	ptx, err := os.ReadFile("kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	bounds, err := launchBounds(ptx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(ptx), ".entry "); got != len(bounds) {
		t.Errorf("%d kernels in the PTX, %d read with their bounds", got, len(bounds))
	}
	var looked []string
	if _, err := newKernels(func(name string) (*cuda.Function, error) {
		looked = append(looked, name)
		return &cuda.Function{Name: name}, nil
	}, bounds); err != nil {
		t.Fatal(err)
	}
	for name := range bounds {
		if !slices.Contains(looked, name) {
			t.Errorf("kernel %s is in the PTX but the executor never looks it up", name)
		}
	}
	if _, err := launchBounds([]byte(".visible .entry f(\n\t.param .u64 f_param_0\n)\n{\n}\n")); err == nil {
		t.Error("a kernel without .maxntid passed")
	}
}

// TestLaunchesWithinBounds drives every launch of ops.go at the largest
// shapes it takes and checks each block against its kernel's launch
// bounds in the PTX (launch refuses one past them), and that every kernel
// of the PTX is launched by some op.
func TestLaunchesWithinBounds(t *testing.T) {
	d, recs := recordingDevice(t, h100)
	var p cuda.Ptr = 1 << 20
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		for _, H := range []int{64, 896, 8192} {
			mustLaunch(t, "embed", d.embed(dt, p, p, p, 4096, H))
			mustLaunch(t, "rmsnorm", d.rmsnorm(dt, p, p, p, p, p, p, 4096, H, 1e-6, true))
		}
		mustLaunch(t, "silu_mul", d.siluMul(dt, p, p, p, 4096, 28672))
		for _, s := range []attnShape{{heads: 32, kvHeads: 8, headDim: 128, blockSize: 16}, {heads: 14, kvHeads: 2, headDim: 64, blockSize: 16}} {
			for _, fast := range []bool{false, true} {
				ks := kernelsFor(h100, s)
				ks.tiled, ks.flash = fast, fast
				for _, splits := range []int{1, 8} {
					mustLaunch(t, "decode", d.decode(ks, dt, s, decodeArgs{nseq: 256, splits: splits}))
				}
				mustLaunch(t, "prefill", d.prefill(ks, dt, s, p, 0, p, p, 64, 128, p, p, p))
			}
		}
		s8 := attnShape{heads: 8, kvHeads: 4, headDim: 8, blockSize: 16}
		mustLaunch(t, "prefill at head dim 8", d.prefill(kernelsFor(h100, s8), dt, s8, p, 0, p, p, 64, 128, p, p, p))
	}
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		for _, hd := range []int{8, 64, 128, 256, 1024} {
			mustLaunch(t, "qkv_rope", d.qkvRope(dt, ropeArgs{heads: 8, kvHeads: 8, headDim: hd, ropeDims: hd, blockSize: 16}, p, p, p, p, p, p, p, p, p, 4096))
		}
	}
	mustLaunch(t, "sample", d.sample(sampleArgs{vocab: 151936, m: 1024}))
	mustLaunch(t, "dequant_q8_0", d.dequantQ80(p, p, 1<<30))
	mustLaunch(t, "convert", d.convert(p, cuda.BF16, p, cuda.F16, 1<<30))
	mustLaunch(t, "fill_random", d.fillRandom(p, cuda.BF16, 1<<30, 1, 1))
	launched := map[string]bool{}
	for _, r := range *recs {
		launched[r.name] = true
		if n := r.block.X * max(r.block.Y, 1) * max(r.block.Z, 1); n > r.bound || n%32 != 0 {
			t.Errorf("%s launched with %d threads a block: its bounds are %d, and a block is whole warps", r.name, n, r.bound)
		}
	}
	bounds, _ := launchBounds(kernelsPTX)
	for name := range bounds {
		if !launched[name] {
			t.Errorf("no op launched %s: its launches are unchecked", name)
		}
	}
	t.Logf("%d launches of %d kernels within their bounds", len(*recs), len(launched))
}

func mustLaunch(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

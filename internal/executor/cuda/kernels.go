package cuda

import (
	_ "embed"
	"fmt"
	"regexp"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

//go:embed kernels.ptx
var kernelsPTX []byte

// kernel is a function of the module with its launch bounds: the most
// threads a block of it may have (.maxntid in the PTX: the driver's
// compiler keeps its registers within what that many threads leave
// each, so every launch within it has the registers it needs).
type kernel struct {
	*cuda.Function
	maxThreads int
}

// kernels are the module's functions, looked up once.
type kernels struct {
	mod                                     *cuda.Module // nil for a recording device (tests)
	embed, rmsnorm, siluMul, qkvRope        map[cuda.DType]*kernel
	decode64, decode128, combine, prefill   map[cuda.DType]*kernel
	flash64, flash128                       map[cuda.DType]*kernel
	tdecode64, tdecode128                   map[cuda.DType]*kernel
	dequantQ80, sample, convert, fillRandom *kernel
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\([^)]*\)\s*(?:\.maxntid (\d+), (\d+), (\d+))?`)

// launchBounds reads every kernel's launch bounds (threads a block) from
// PTX; a kernel without them is an error: its launches could fail for
// want of registers on a GPU whose compiler gives it more than a full
// block leaves.
func launchBounds(ptx []byte) (map[string]int, error) {
	bounds := map[string]int{}
	var missing []string
	for _, m := range entryRE.FindAllSubmatch(ptx, -1) {
		name := string(m[1])
		if m[2] == nil {
			missing = append(missing, name)
			continue
		}
		n := 1
		for _, d := range m[2:] {
			v, _ := strconv.Atoi(string(d))
			n *= v
		}
		bounds[name] = n
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kernels without launch bounds (.maxntid): %v", missing)
	}
	if len(bounds) == 0 {
		return nil, fmt.Errorf("no kernels in the PTX")
	}
	return bounds, nil
}

// newKernels looks every kernel up with get and gives it its bounds.
func newKernels(get func(name string) (*cuda.Function, error), bounds map[string]int) (*kernels, error) {
	k := &kernels{}
	var errs []error
	one := func(name string) *kernel {
		f, err := get(name)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		n, ok := bounds[name]
		if !ok {
			errs = append(errs, fmt.Errorf("kernel %s: not in the PTX", name))
		}
		return &kernel{Function: f, maxThreads: n}
	}
	typed := func(prefix string) map[cuda.DType]*kernel {
		return map[cuda.DType]*kernel{cuda.F32: one(prefix + "_f32"), cuda.F16: one(prefix + "_f16"), cuda.BF16: one(prefix + "_bf16")}
	}
	k.embed, k.rmsnorm, k.siluMul, k.qkvRope = typed("embed"), typed("rmsnorm"), typed("silu_mul"), typed("qkv_rope")
	k.decode64, k.decode128, k.combine, k.prefill = typed("decode64"), typed("decode128"), typed("decode_combine"), typed("prefill")
	k.flash64, k.flash128 = typed("flash64"), typed("flash128")
	k.tdecode64, k.tdecode128 = typed("tdecode64"), typed("tdecode128")
	k.dequantQ80, k.sample, k.convert, k.fillRandom = one("dequant_q8_0"), one("sample"), one("convert"), one("fill_random")
	if len(errs) > 0 {
		return nil, fmt.Errorf("load kernels: %v", errs)
	}
	return k, nil
}

func loadKernels(c *cuda.Context) (*kernels, error) {
	bounds, err := launchBounds(kernelsPTX)
	if err != nil {
		return nil, fmt.Errorf("load kernels: %w", err)
	}
	m, err := c.LoadPTX(kernelsPTX)
	if err != nil {
		return nil, err
	}
	k, err := newKernels(m.Function, bounds)
	if err != nil {
		m.Unload()
		return nil, err
	}
	k.mod = m
	// The attention kernels with dynamic shared memory may take all a
	// block can opt into; each launch is checked against it.
	for _, fs := range []map[cuda.DType]*kernel{k.prefill, k.flash64, k.flash128} {
		for _, f := range fs {
			if err := f.SetMaxDynamicShared(c.Device.SharedOptin); err != nil {
				m.Unload()
				return nil, fmt.Errorf("load kernels: %w", err)
			}
		}
	}
	return k, nil
}

// Grid limits of every GPU the kernels run on (compute capability 3.0
// and later).
const (
	maxGridX  = 1<<31 - 1
	maxGridYZ = 65535
)

// fits checks one launch of k against its launch bounds and the GPU's
// limits (sharedLimit: the dynamic shared memory a block may opt into):
// a launch past them would fail on the device, after the step's earlier
// work was queued.
func (k *kernel) fits(grid, block cuda.Dim, shared, sharedLimit int) error {
	threads := max(block.X, 1) * max(block.Y, 1) * max(block.Z, 1)
	switch {
	case threads > k.maxThreads:
		return fmt.Errorf("BUG: launch %s: a block of %d threads, past its launch bounds (%d)", k.Name, threads, k.maxThreads)
	case grid.X > maxGridX || grid.Y > maxGridYZ || grid.Z > maxGridYZ:
		return fmt.Errorf("launch %s: a grid of %d×%d×%d blocks, past the GPU's %d×%d×%d", k.Name, grid.X, grid.Y, grid.Z, maxGridX, maxGridYZ, maxGridYZ)
	case shared > sharedLimit:
		return fmt.Errorf("launch %s: %d bytes of shared memory, past the %d a block may have", k.Name, shared, sharedLimit)
	}
	return nil
}

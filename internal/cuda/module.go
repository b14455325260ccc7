package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Module is PTX loaded (JIT-compiled by the driver for this device).
type Module struct {
	c *Context
	h CUmodule
}

// JIT options (CUjit_option) for the compiler's log.
const (
	jitErrorLogBuffer     = 5
	jitErrorLogBufferSize = 6
)

// LoadPTX compiles PTX source for the device; a compile error carries
// the JIT's log.
func (c *Context) LoadPTX(ptx []byte) (*Module, error) {
	src := append(append([]byte(nil), ptx...), 0)
	log := make([]byte, 8192)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize}
	vals := []uintptr{uintptr(unsafe.Pointer(&log[0])), uintptr(len(log))}
	var pin runtime.Pinner // vals holds a Go pointer that C reads
	pin.Pin(&log[0])
	defer pin.Unpin()
	m := &Module{c: c}
	r := c.d.api.ModuleLoadDataEx(&m.h, &src[0], uint32(len(opts)), &opts[0], &vals[0])
	if err := c.d.check("cuModuleLoadDataEx", r); err != nil {
		if msg := goString(log); msg != "" {
			return nil, fmt.Errorf("load PTX: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("load PTX: %w", err)
	}
	return m, nil
}

// Unload releases the module.
func (m *Module) Unload() { m.c.d.api.ModuleUnload(m.h) }

// Function is a kernel of a module.
type Function struct {
	c    *Context
	h    CUfunction
	Name string
}

// Function looks a kernel up by its (extern "C") name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{c: m.c, Name: name}
	if err := m.c.d.check("cuModuleGetFunction", m.c.d.api.ModuleGetFunction(&f.h, m.h, name)); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return f, nil
}

const funcMaxDynamicShared = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// SetMaxDynamicShared lets launches of f ask for up to n bytes of dynamic
// shared memory (above 48 KiB a kernel must opt in).
func (f *Function) SetMaxDynamicShared(n int) error {
	return f.c.d.check("cuFuncSetAttribute", f.c.d.api.FuncSetAttribute(f.h, funcMaxDynamicShared, int32(n)))
}

// Args holds one launch's kernel parameters. Each value takes an 8-byte
// slot and the driver reads each parameter's own size from it (little
// endian). Reuse one Args per goroutine: it is pinned for C on first use.
type Args struct {
	vals [maxKernelArgs]uint64
	ptrs [maxKernelArgs]unsafe.Pointer
	n    int
	pin  runtime.Pinner
	init bool
}

const maxKernelArgs = 32

// Reset empties a for the next launch.
func (a *Args) Reset() *Args {
	if !a.init {
		a.pin.Pin(a)
		for i := range a.ptrs {
			a.ptrs[i] = unsafe.Pointer(&a.vals[i])
		}
		a.init = true
	}
	a.n = 0
	return a
}

func (a *Args) add(v uint64) *Args {
	if a.n == maxKernelArgs {
		panic("BUG: cuda: more than 32 kernel arguments")
	}
	a.vals[a.n] = v
	a.n++
	return a
}

// Ptr adds a device address.
func (a *Args) Ptr(p Ptr) *Args { return a.add(uint64(p)) }

// Int adds a 32-bit integer.
func (a *Args) Int(v int) *Args { return a.add(uint64(uint32(int32(v)))) }

// Int64 adds a 64-bit integer.
func (a *Args) Int64(v int64) *Args { return a.add(uint64(v)) }

// Float adds a 32-bit float.
func (a *Args) Float(v float32) *Args { return a.add(uint64(math.Float32bits(v))) }

// Dim is a grid or block size.
type Dim struct{ X, Y, Z int }

// Launch queues f on s over grid blocks of block threads with shared
// bytes of dynamic shared memory. The arguments are copied at the call
// (or at capture, for a graph): a may be reused at once.
func (f *Function) Launch(s *Stream, grid, block Dim, shared int, a *Args) error {
	gx, gy, gz := max(grid.X, 1), max(grid.Y, 1), max(grid.Z, 1)
	bx, by, bz := max(block.X, 1), max(block.Y, 1), max(block.Z, 1)
	var params *unsafe.Pointer
	if a != nil && a.n > 0 {
		params = &a.ptrs[0]
	}
	r := f.c.d.api.LaunchKernel(f.h, uint32(gx), uint32(gy), uint32(gz), uint32(bx), uint32(by), uint32(bz), uint32(shared), s.h, params, nil)
	if r != 0 {
		return fmt.Errorf("launch %s: %w", f.Name, f.c.d.check("cuLaunchKernel", r))
	}
	return nil
}

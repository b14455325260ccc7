// Package cuda is the executor that runs a GGUF model on an NVIDIA GPU
// behind the same engine as the CPU executor: weights uploaded once (F32,
// F16 and BF16 as they are, Q8_0 dequantised to fp16), the paged KV cache
// in device memory, kernels of our own (kernels/, compiled to PTX by
// clang), GEMMs through cuBLASLt, sampling on the device, decode steps
// replayed from CUDA graphs. Its lifecycle (Backend, an
// executor.Lifecycle) reads the model through internal/loader, as the CPU
// executor does, and uploads it.
//
// It implements engine.Executor; it must not import net/http,
// Prometheus, OpenTelemetry, or the server, metrics or tracing packages.
package cuda

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// DeviceConfig says which GPU to open and where cuBLASLt is.
type DeviceConfig struct {
	Ordinal int
	// BLASLt is cuBLASLt's file; empty searches the usual places
	// (cuda.BLASLtCandidates), with BLASLtDirs first.
	BLASLt     string
	BLASLtDirs []string
}

// Device is a GPU opened for the executor: its context (whose thread
// every call below runs on: inside Do), one stream, the kernels,
// cuBLASLt and its workspace.
type Device struct {
	Driver        *cuda.Driver
	Info          *cuda.Device
	ctx           *cuda.Context
	stream        *cuda.Stream
	k             *kernels
	blas          *cuda.BLASLt
	ws            cuda.Ptr
	wsBytes       int64
	gemms         map[gemmKey]*cuda.GEMM
	args          cuda.Args
	driverVersion string // NVML's, "580.159.04"; empty without NVML
	// tl, while a profile records, times every launch and GEMM (set by
	// the executor around its forward pass; nil otherwise).
	tl *timeline
	// record, when set, takes every launch instead of the GPU: a device
	// without one, for the tests of what ops.go launches.
	record func(k *kernel, grid, block cuda.Dim, shared int) error

	// One owner for each thing: the device owns its context, stream,
	// kernels, cuBLASLt and workspace; a Loaded model its weights and
	// step buffers; an Executor its KV cache, graphs and events, and it
	// borrows the model's. Closing an owner closes what borrows from it
	// first, so any order of Close calls frees everything once. mu guards
	// the books of who is open (closed flags, loaded, Loaded.execs).
	mu     sync.Mutex
	closed bool
	loaded map[*Loaded]struct{} // models uploaded and not closed
}

// workspaceBytes is cuBLASLt's scratch: 32 MiB, NVIDIA's advice for
// Hopper.
const workspaceBytes = 32 << 20

// OpenDevice loads the driver, makes a context on the GPU, loads the
// kernels and cuBLASLt. Without a driver it says so in one line.
func OpenDevice(cfg DeviceConfig) (*Device, error) {
	drv, err := cuda.OpenDriver()
	if err != nil {
		return nil, err
	}
	d, err := openDevice(drv, cfg, cuda.OpenBLASLt)
	if err != nil {
		return nil, err
	}
	if n, err := cuda.OpenNVML(); err == nil { // the driver's own version, as nvidia-smi shows it
		d.driverVersion, _ = n.DriverVersion()
		n.Close()
	}
	return d, nil
}

// openDevice opens GPU cfg.Ordinal of drv with the cuBLASLt openBLAS
// opens: libcuda's and the library's (OpenDevice), or a test's fakes.
func openDevice(drv *cuda.Driver, cfg DeviceConfig, openBLAS func(c *cuda.Context, path string, dirs []string) (*cuda.BLASLt, error)) (*Device, error) {
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("count GPUs: %w", err)
	}
	if cfg.Ordinal >= n {
		return nil, fmt.Errorf("GPU %d: the driver sees %d", cfg.Ordinal, n)
	}
	info, err := drv.Device(cfg.Ordinal)
	if err != nil {
		return nil, err
	}
	if info.Major < 8 {
		return nil, fmt.Errorf("%s has compute capability %d.%d: glassbox's kernels need 8.0 (Ampere) or later", info.Name, info.Major, info.Minor)
	}
	ctx, err := drv.NewContext(info)
	if err != nil {
		return nil, err
	}
	d := &Device{Driver: drv, Info: info, ctx: ctx, gemms: map[gemmKey]*cuda.GEMM{}, loaded: map[*Loaded]struct{}{}}
	if err := ctx.Do(func() error { return d.open(cfg, openBLAS) }); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Device) open(cfg DeviceConfig, openBLAS func(c *cuda.Context, path string, dirs []string) (*cuda.BLASLt, error)) error {
	var err error
	if d.stream, err = d.ctx.NewStream(); err != nil {
		return err
	}
	if d.k, err = loadKernels(d.ctx); err != nil {
		return err
	}
	if d.blas, err = openBLAS(d.ctx, cfg.BLASLt, cfg.BLASLtDirs); err != nil {
		return err
	}
	d.wsBytes = workspaceBytes
	d.ws, err = d.ctx.Alloc(d.wsBytes)
	return err
}

// Do runs f on the device's thread.
func (d *Device) Do(f func() error) error { return d.ctx.Do(f) }

// Close releases everything the device holds: first the models still
// loaded on it (and so their executors), then its own cuBLASLt plans,
// kernels, workspace and stream, and its context. A second Close does
// nothing.
func (d *Device) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	loaded := slices.Collect(maps.Keys(d.loaded))
	d.mu.Unlock()
	for _, l := range loaded {
		l.Close()
	}
	_ = d.ctx.Do(func() error {
		for _, g := range d.gemms {
			g.Destroy()
		}
		d.gemms = nil
		if d.blas != nil {
			d.blas.Close()
		}
		if d.k != nil {
			d.k.mod.Unload()
		}
		d.ctx.Free(d.ws)
		if d.stream != nil {
			d.stream.Destroy()
		}
		return nil
	})
	d.ctx.Close()
}

// BLASLt is the cuBLASLt the device uses (for the banner).
func (d *Device) BLASLt() *cuda.BLASLt { return d.blas }

// Describe is one line naming the GPU, the driver and cuBLASLt.
func (d *Device) Describe() string {
	drv := "CUDA " + d.Driver.Version()
	if d.driverVersion != "" {
		drv = d.driverVersion + " (" + drv + ")"
	}
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %.1f GiB), driver %s, cuBLASLt %s (%s)", d.Info.Name, d.Info.Major, d.Info.Minor,
		d.Info.SMs, float64(d.Info.TotalMemory)/(1<<30), drv, d.blas.VersionString(), d.blas.Path)
}

// gemmKey names a planned GEMM: types and shape.
type gemmKey struct {
	in, out      cuda.DType
	n, in_, out_ int
}

// gemm queues y (+)= x·wᵀ for n rows (on the device's thread): w is
// outF×inF of type in, x n×inF of type in, y n×outF of type out; name is
// its role, for the kernel timeline.
func (d *Device) gemm(name string, in, out cuda.DType, n, inF, outF int, w, x, y cuda.Ptr, accumulate bool) error {
	key := gemmKey{in, out, n, inF, outF}
	g := d.gemms[key]
	if g == nil {
		var err error
		if g, err = d.blas.Plan(in, out, n, inF, outF, d.wsBytes); err != nil {
			return err
		}
		d.gemms[key] = g
	}
	d.tl.begin(name)
	defer d.tl.end()
	return g.Run(d.stream, w, x, y, accumulate, d.ws, d.wsBytes)
}

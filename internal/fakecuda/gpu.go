// Package fakecuda is an NVIDIA GPU made of Go, for the tests of what
// sits above internal/cuda: it fills cuda.DriverAPI and cuda.BLASLtAPI
// with functions that keep the books a driver keeps (device memory and
// its bytes, pinned host memory, streams, events, modules and their
// kernels' parameter lists, graphs, cuBLASLt's objects) and records, in
// order, every call that queues work, with its stream. Kernels and GEMMs
// compute nothing: a test on it checks the host side (what is allocated
// and freed, what is copied or launched, on which stream, in which
// order, and that no launch reads freed memory), never numbers.
//
// Only tests import it; it imports nothing of glassbox but internal/cuda.
package fakecuda

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// Config describes the fake board; zero fields take an H100's values
// (80 GiB is not allocated: only what is asked for is).
type Config struct {
	Name         string
	Memory       int64 // bytes of device memory
	SMs          int
	Major, Minor int // compute capability
	SharedOptin  int // the most shared memory a block may opt into
	L2Bytes      int
	// WorkspaceSize is what cublasLtMatmulAlgoGetHeuristic says its
	// algorithm needs.
	WorkspaceSize uint64
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = "Fake H100"
	}
	if c.Memory == 0 {
		c.Memory = 80 << 30
	}
	if c.SMs == 0 {
		c.SMs = 132
	}
	if c.Major == 0 {
		c.Major, c.Minor = 9, 0
	}
	if c.SharedOptin == 0 {
		c.SharedOptin = 227 << 10
	}
	if c.L2Bytes == 0 {
		c.L2Bytes = 50 << 20
	}
}

// Op is one call that queued work or changed the books, in call order.
type Op struct {
	Call     string        // the C function: "cuMemcpyHtoDAsync_v2", "cuLaunchKernel", …
	Stream   cuda.CUstream // its stream (0: the legacy default one); 0 where it has none
	Kernel   string        // a launch's kernel
	Dst, Src cuda.Ptr      // a copy's or memset's device addresses (0 for host memory)
	Bytes    uint64
	Captured bool // queued into a graph being captured, not run
}

// GPU is the fake board and its driver's books. Its methods are safe
// from any goroutine.
type GPU struct {
	mu        sync.Mutex
	cfg       Config
	next      uintptr // the last handle given out
	heapNext  cuda.Ptr
	mem       map[cuda.Ptr][]byte // live device allocations by base
	used      int64
	host      map[*byte][]byte // live pinned host allocations by base
	contexts  int              // primary context retains not yet released
	streams   map[cuda.CUstream]bool
	capturing map[cuda.CUstream]bool
	events    map[cuda.CUevent]bool
	modules   map[cuda.CUmodule]map[string][]int // kernels' parameter sizes
	funcs     map[cuda.CUfunction]kernel
	captured  map[cuda.CUstream][]use // what a capture under way will replay
	graphs    map[cuda.CUgraph][]use
	execs     map[cuda.CUgraphExec][]use
	lt        map[uintptr]string // cuBLASLt's live objects and their kinds
	ops       []Op
	faults    []string
	strings   map[cuda.CUresult][]byte // the error names handed out
}

// heapBase is where device addresses start: far from any integer a
// kernel takes, so that an argument in [heapBase, heapNext) is an
// address.
const heapBase cuda.Ptr = 0x7f00_0000_0000

// New makes a board.
func New(cfg Config) *GPU {
	cfg.defaults()
	return &GPU{cfg: cfg, heapNext: heapBase, mem: map[cuda.Ptr][]byte{}, host: map[*byte][]byte{},
		streams: map[cuda.CUstream]bool{}, capturing: map[cuda.CUstream]bool{}, events: map[cuda.CUevent]bool{},
		modules: map[cuda.CUmodule]map[string][]int{}, funcs: map[cuda.CUfunction]kernel{}, captured: map[cuda.CUstream][]use{},
		graphs: map[cuda.CUgraph][]use{}, execs: map[cuda.CUgraphExec][]use{}, lt: map[uintptr]string{}, strings: map[cuda.CUresult][]byte{}}
}

// handle gives out a new opaque handle (with g.mu held).
func (g *GPU) handle() uintptr {
	g.next += 16
	return 0x1000 + g.next
}

// fault records a misuse a real driver would punish (with g.mu held).
func (g *GPU) fault(format string, args ...any) {
	g.faults = append(g.faults, fmt.Sprintf(format, args...))
}

// record appends an op (with g.mu held).
func (g *GPU) record(op Op) {
	op.Captured = op.Stream != 0 && g.capturing[op.Stream]
	g.ops = append(g.ops, op)
}

// Context opens device 0's primary context through internal/cuda's
// bindings over this board: what a test of the code above them starts
// from.
func (g *GPU) Context() (*cuda.Context, error) {
	d, err := cuda.NewDriver(g.Driver())
	if err != nil {
		return nil, err
	}
	dev, err := d.Device(0)
	if err != nil {
		return nil, err
	}
	return d.NewContext(dev)
}

// Ops is every op so far, in call order.
func (g *GPU) Ops() []Op {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.ops)
}

// Faults lists the misuses so far: frees of memory not allocated, copies
// outside an allocation, launches whose arguments point at freed memory,
// work on destroyed streams, …; a correct host side makes none.
func (g *GPU) Faults() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.faults)
}

// DeviceBytes is the device memory allocated and not freed.
func (g *GPU) DeviceBytes() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used
}

// Live lists what is allocated or created and not yet released, one line
// a kind ("3 device allocations (1.2 MiB)", "1 stream", …): empty when
// everything was released.
func (g *GPU) Live() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	if len(g.mem) > 0 {
		out = append(out, fmt.Sprintf("%d device allocations (%d bytes)", len(g.mem), g.used))
	}
	add(len(g.host), "pinned host allocations")
	add(g.contexts, "context retains")
	add(len(g.streams), "streams")
	add(len(g.events), "events")
	add(len(g.modules), "modules")
	add(len(g.graphs), "graphs")
	add(len(g.execs), "graph instances")
	kinds := map[string]int{}
	for _, k := range g.lt {
		kinds[k]++
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		add(kinds[k], k)
	}
	return out
}

// allocation finds the live allocation holding [p, p+n) (with g.mu held).
func (g *GPU) allocation(p cuda.Ptr, n uint64) ([]byte, bool) {
	for base, b := range g.mem {
		// Compared as a length left, not as off+n, which a huge n wraps.
		if off := uint64(p - base); p >= base && off <= uint64(len(b)) && n <= uint64(len(b))-off {
			return b[off : off+n], true
		}
	}
	return nil, false
}

// use is a device address a queued kernel or GEMM reads or writes.
type use struct {
	what string // "sample, parameter 3"
	at   cuda.Ptr
}

// check faults each use that is not in live memory (with g.mu held).
func (g *GPU) check(call string, uses []use) {
	for _, u := range uses {
		if _, live := g.allocation(u.at, 1); !live {
			g.fault("%s: %s is %#x, freed device memory", call, u.what, uint64(u.at))
		}
	}
}

// queue checks the uses of work queued on s, or keeps them for the graph
// s is capturing, whose launches will check them (with g.mu held).
func (g *GPU) queue(call string, s cuda.CUstream, uses []use) {
	if g.capturing[s] {
		g.captured[s] = append(g.captured[s], uses...)
	}
	g.check(call, uses)
}

// isAddress says whether v looks like a device address this board gave
// out (live or freed).
func isAddress(v uint64, next cuda.Ptr) bool {
	return cuda.Ptr(v) >= heapBase && cuda.Ptr(v) < next
}

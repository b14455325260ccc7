package fakecuda

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// Modules, streams, events, launches and graphs.

// ptxEntries reads each kernel's parameter sizes from PTX source: its
// ".visible .entry name(" line and the ".param .u64 name_param_0," lines
// up to the ")".
func ptxEntries(src string) map[string][]int {
	const entry = ".visible .entry "
	out := map[string][]int{}
	for {
		i := strings.Index(src, entry)
		if i < 0 {
			return out
		}
		src = src[i+len(entry):]
		open, end := strings.IndexByte(src, '('), strings.IndexByte(src, ')')
		if open < 0 || end < open {
			return out
		}
		var sizes []int
		for _, line := range strings.Split(src[open+1:end], "\n") {
			f := strings.Fields(line) // ".param", ".u64", "name,"
			if len(f) < 2 || f[0] != ".param" {
				continue
			}
			bits, err := strconv.Atoi(strings.TrimLeft(f[1], ".abcdefghijklmnopqrstuvwxyz"))
			if err != nil {
				bits = 0 // an aggregate (.align .b8 x[n]): not a scalar, never checked
			}
			sizes = append(sizes, bits/8)
		}
		out[src[:open]] = sizes
		src = src[end:]
	}
}

func (g *GPU) moduleLoad(m *cuda.CUmodule, image *byte, _ uint32, _ *int32, _ *uintptr) cuda.CUresult {
	// The image is NUL-terminated PTX.
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(image), n)) != 0 {
		n++
	}
	entries := ptxEntries(string(unsafe.Slice(image, n)))
	g.mu.Lock()
	defer g.mu.Unlock()
	h := cuda.CUmodule(g.handle())
	g.modules[h] = entries
	*m = h
	return success
}

func (g *GPU) moduleUnload(m cuda.CUmodule) cuda.CUresult {
	return release(g, g.modules, m, "cuModuleUnload", "a loaded module")
}

// kernel is a function's module entry: its name and parameter sizes.
type kernel struct {
	mod    cuda.CUmodule
	name   string
	params []int
}

func (g *GPU) moduleFunction(f *cuda.CUfunction, m cuda.CUmodule, name string) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	entries, ok := g.modules[m]
	if !ok {
		return invalidHandle
	}
	if _, ok := entries[name]; !ok {
		return notFound
	}
	h := cuda.CUfunction(g.handle())
	g.funcs[h] = kernel{mod: m, name: name, params: entries[name]}
	*f = h
	return success
}

func (g *GPU) funcSetAttribute(f cuda.CUfunction, _ int32, v int32) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.funcs[f]; !ok {
		return invalidHandle
	}
	if int(v) > g.cfg.SharedOptin {
		return invalidValue
	}
	return success
}

func (g *GPU) streamCreate(s *cuda.CUstream, _ uint32) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := cuda.CUstream(g.handle())
	g.streams[h] = true
	*s = h
	return success
}

func (g *GPU) streamDestroy(s cuda.CUstream) cuda.CUresult {
	return release(g, g.streams, s, "cuStreamDestroy_v2", "a live stream")
}

func (g *GPU) streamSynchronize(s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.onStream("cuStreamSynchronize", s) {
		return invalidHandle
	}
	g.record(Op{Call: "cuStreamSynchronize", Stream: s})
	return success
}

func (g *GPU) eventCreate(e *cuda.CUevent, _ uint32) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := cuda.CUevent(g.handle())
	g.events[h] = true
	*e = h
	return success
}

func (g *GPU) eventRecord(e cuda.CUevent, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.events[e] {
		g.fault("cuEventRecord of %#x, not a live event", uint64(e))
		return invalidHandle
	}
	if !g.onStream("cuEventRecord", s) {
		return invalidHandle
	}
	g.record(Op{Call: "cuEventRecord", Stream: s})
	return success
}

func (g *GPU) eventUse(call string) func(cuda.CUevent) cuda.CUresult {
	return func(e cuda.CUevent) cuda.CUresult {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.events[e] {
			g.fault("%s of %#x, not a live event", call, uint64(e))
			return invalidHandle
		}
		return success
	}
}

func (g *GPU) eventElapsed(ms *float32, start, end cuda.CUevent) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.events[start] || !g.events[end] {
		g.fault("cuEventElapsedTime of an event that is not live")
		return invalidHandle
	}
	*ms = 0.25
	return success
}

func (g *GPU) eventDestroy(e cuda.CUevent) cuda.CUresult {
	return release(g, g.events, e, "cuEventDestroy_v2", "a live event")
}

func (g *GPU) launch(f cuda.CUfunction, gx, gy, gz, bx, by, bz, shared uint32, s cuda.CUstream, params, _ *unsafe.Pointer) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.funcs[f]
	if !ok {
		g.fault("cuLaunchKernel of %#x, not a function", uint64(f))
		return invalidHandle
	}
	if _, ok := g.modules[k.mod]; !ok {
		g.fault("cuLaunchKernel of %s after its module was unloaded", k.name)
		return invalidHandle
	}
	if !g.onStream("cuLaunchKernel "+k.name, s) {
		return invalidHandle
	}
	if gx == 0 || gy == 0 || gz == 0 || bx*by*bz == 0 || bx*by*bz > 1024 || gy > 65535 || gz > 65535 || int(shared) > g.cfg.SharedOptin {
		return invalidValue
	}
	// The driver reads each parameter's value through params[i]: a
	// pointer among them must be to live device memory, now and whenever
	// a graph replays the launch.
	var uses []use
	if len(k.params) > 0 {
		if params == nil {
			g.fault("cuLaunchKernel %s without its %d parameters", k.name, len(k.params))
			return invalidValue
		}
		vals := unsafe.Slice(params, len(k.params))
		for i, size := range k.params {
			if size != 8 {
				continue
			}
			if v := binary.LittleEndian.Uint64(unsafe.Slice((*byte)(vals[i]), 8)); isAddress(v, g.heapNext) {
				uses = append(uses, use{what: k.name + ", parameter " + strconv.Itoa(i), at: cuda.Ptr(v)})
			}
		}
	}
	g.queue("cuLaunchKernel", s, uses)
	g.record(Op{Call: "cuLaunchKernel", Stream: s, Kernel: k.name})
	return success
}

func (g *GPU) beginCapture(s cuda.CUstream, _ int32) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s == 0 || !g.streams[s] || g.capturing[s] {
		g.fault("cuStreamBeginCapture_v2 on stream %#x", uint64(s))
		return invalidValue
	}
	g.capturing[s] = true
	g.record(Op{Call: "cuStreamBeginCapture_v2", Stream: s})
	return success
}

func (g *GPU) endCapture(s cuda.CUstream, graph *cuda.CUgraph) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.capturing[s] {
		return invalidValue
	}
	delete(g.capturing, s)
	h := cuda.CUgraph(g.handle())
	g.graphs[h] = g.captured[s]
	delete(g.captured, s)
	*graph = h
	g.record(Op{Call: "cuStreamEndCapture", Stream: s})
	return success
}

func (g *GPU) graphInstantiate(x *cuda.CUgraphExec, graph cuda.CUgraph, _ uint64) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	uses, ok := g.graphs[graph]
	if !ok {
		return invalidHandle
	}
	h := cuda.CUgraphExec(g.handle())
	g.execs[h] = uses
	*x = h
	return success
}

func (g *GPU) graphLaunch(x cuda.CUgraphExec, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	uses, ok := g.execs[x]
	if !ok {
		g.fault("cuGraphLaunch of %#x, not a live graph instance", uint64(x))
		return invalidHandle
	}
	if !g.onStream("cuGraphLaunch", s) {
		return invalidHandle
	}
	g.check("cuGraphLaunch", uses)
	g.record(Op{Call: "cuGraphLaunch", Stream: s})
	return success
}

func (g *GPU) graphExecDestroy(x cuda.CUgraphExec) cuda.CUresult {
	return release(g, g.execs, x, "cuGraphExecDestroy", "a live graph instance")
}

func (g *GPU) graphDestroy(graph cuda.CUgraph) cuda.CUresult {
	return release(g, g.graphs, graph, "cuGraphDestroy", "a live graph")
}

// release deletes h from the live handles of its kind, or faults as the
// driver does on a handle that is not one of them.
func release[K ~uintptr, V any](g *GPU, live map[K]V, h K, call, what string) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := live[h]; !ok {
		g.fault("%s of %#x, not %s", call, uint64(h), what)
		return invalidHandle
	}
	delete(live, h)
	return success
}

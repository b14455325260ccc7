package fakecuda

import (
	"strconv"
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// The CUresults the fake answers with (cuda.h's values).
const (
	success       cuda.CUresult = 0
	invalidValue  cuda.CUresult = 1
	outOfMemory   cuda.CUresult = 2
	invalidDevice cuda.CUresult = 101
	invalidHandle cuda.CUresult = 400
	notFound      cuda.CUresult = 500
)

// Device attributes the fake knows (CUdevice_attribute).
const (
	attrMultiprocessorCount = 16
	attrL2CacheSize         = 38
	attrComputeMajor        = 75
	attrComputeMinor        = 76
	attrSharedOptin         = 97
)

// Driver is the board's driver, for cuda.NewDriver.
func (g *GPU) Driver() *cuda.DriverAPI {
	return &cuda.DriverAPI{
		Init:             func(uint32) cuda.CUresult { return success },
		DriverGetVersion: func(v *int32) cuda.CUresult { *v = 13000; return success },
		GetErrorName:     g.errorName,
		GetErrorString:   g.errorName,
		DeviceGet: func(dev *cuda.CUdevice, ordinal int32) cuda.CUresult {
			if ordinal != 0 {
				return invalidDevice
			}
			*dev = 0
			return success
		},
		DeviceGetCount: func(n *int32) cuda.CUresult { *n = 1; return success },
		DeviceGetName: func(b *byte, n int32, _ cuda.CUdevice) cuda.CUresult {
			copy(unsafe.Slice(b, n), append([]byte(g.cfg.Name), 0))
			return success
		},
		DeviceTotalMem: func(m *uint64, _ cuda.CUdevice) cuda.CUresult { *m = uint64(g.cfg.Memory); return success },
		DeviceGetAttribute: func(v *int32, attr int32, _ cuda.CUdevice) cuda.CUresult {
			switch attr {
			case attrMultiprocessorCount:
				*v = int32(g.cfg.SMs)
			case attrL2CacheSize:
				*v = int32(g.cfg.L2Bytes)
			case attrComputeMajor:
				*v = int32(g.cfg.Major)
			case attrComputeMinor:
				*v = int32(g.cfg.Minor)
			case attrSharedOptin:
				*v = int32(g.cfg.SharedOptin)
			default:
				return invalidValue
			}
			return success
		},
		DeviceGetPCIBusID: func(b *byte, n int32, _ cuda.CUdevice) cuda.CUresult {
			copy(unsafe.Slice(b, n), "0000:01:00.0\x00")
			return success
		},
		PrimaryCtxRetain:  g.ctxRetain,
		PrimaryCtxRelease: g.ctxRelease,
		CtxSetCurrent:     func(cuda.CUcontext) cuda.CUresult { return success },
		CtxSynchronize:    func() cuda.CUresult { return success },
		ModuleLoadDataEx:  g.moduleLoad,
		ModuleUnload:      g.moduleUnload,
		ModuleGetFunction: g.moduleFunction,
		FuncSetAttribute:  g.funcSetAttribute,
		MemAlloc:          g.memAlloc,
		MemFree:           g.memFree,
		MemGetInfo:        g.memGetInfo,
		MemAllocHost:      g.memAllocHost,
		MemFreeHost:       g.memFreeHost,
		MemcpyHtoDAsync:   g.copyIn,
		MemcpyDtoHAsync:   g.copyOut,
		MemcpyDtoDAsync:   g.copyDevice,
		MemsetD8Async: func(p cuda.Ptr, v uint8, n uint64, s cuda.CUstream) cuda.CUresult {
			return g.memset("cuMemsetD8Async", p, []byte{v}, n, s)
		},
		MemsetD32Async: func(p cuda.Ptr, v uint32, n uint64, s cuda.CUstream) cuda.CUresult {
			return g.memset("cuMemsetD32Async", p, []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}, n, s)
		},
		StreamCreate:       g.streamCreate,
		StreamDestroy:      g.streamDestroy,
		StreamSynchronize:  g.streamSynchronize,
		EventCreate:        g.eventCreate,
		EventRecord:        g.eventRecord,
		EventSynchronize:   g.eventUse("cuEventSynchronize"),
		EventElapsedTime:   g.eventElapsed,
		EventDestroy:       g.eventDestroy,
		LaunchKernel:       g.launch,
		StreamBeginCapture: g.beginCapture,
		StreamEndCapture:   g.endCapture,
		GraphInstantiate:   g.graphInstantiate,
		GraphLaunch:        g.graphLaunch,
		GraphExecDestroy:   g.graphExecDestroy,
		GraphDestroy:       g.graphDestroy,
	}
}

func (g *GPU) errorName(r cuda.CUresult, s **byte) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.strings[r]
	if b == nil {
		b = []byte("CUDA_ERROR_FAKE_" + strconv.Itoa(int(r)) + "\x00")
		g.strings[r] = b // kept: the driver's strings are static
	}
	*s = &b[0]
	return success
}

func (g *GPU) ctxRetain(ctx *cuda.CUcontext, _ cuda.CUdevice) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.contexts++
	*ctx = 0xc0 // the primary context: one per device
	return success
}

func (g *GPU) ctxRelease(cuda.CUdevice) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.contexts == 0 {
		g.fault("cuDevicePrimaryCtxRelease without a retain")
		return invalidValue
	}
	g.contexts--
	return success
}

func (g *GPU) memAlloc(p *cuda.Ptr, n uint64) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n == 0 {
		return invalidValue
	}
	if g.used+int64(n) > g.cfg.Memory {
		return outOfMemory
	}
	base := g.heapNext
	g.heapNext += cuda.Ptr((n + 255) &^ 255) // addresses are never reused
	g.mem[base] = make([]byte, n)
	g.used += int64(n)
	*p = base
	return success
}

func (g *GPU) memFree(p cuda.Ptr) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.mem[p]
	if !ok {
		g.fault("cuMemFree_v2 of %#x, which is not an allocation (freed twice?)", uint64(p))
		return invalidValue
	}
	delete(g.mem, p)
	g.used -= int64(len(b))
	g.record(Op{Call: "cuMemFree_v2", Dst: p, Bytes: uint64(len(b))})
	return success
}

func (g *GPU) memGetInfo(free, total *uint64) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	*free, *total = uint64(g.cfg.Memory-g.used), uint64(g.cfg.Memory)
	return success
}

func (g *GPU) memAllocHost(p *unsafe.Pointer, n uint64) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n == 0 {
		return invalidValue
	}
	b := make([]byte, n)
	g.host[&b[0]] = b
	*p = unsafe.Pointer(&b[0])
	return success
}

func (g *GPU) memFreeHost(p unsafe.Pointer) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.host[(*byte)(p)]; !ok {
		g.fault("cuMemFreeHost of %p, which is not a pinned allocation (freed twice?)", p)
		return invalidValue
	}
	delete(g.host, (*byte)(p))
	return success
}

// onStream checks that s is a live stream or the legacy one (with g.mu
// held).
func (g *GPU) onStream(call string, s cuda.CUstream) bool {
	if s != 0 && !g.streams[s] {
		g.fault("%s on stream %#x, which is not a live stream", call, uint64(s))
		return false
	}
	return true
}

// streamBytes is the live device memory [p, p+n) that call on stream s
// reads or writes, or the CUresult the driver answers (with g.mu held).
func (g *GPU) streamBytes(call string, s cuda.CUstream, p cuda.Ptr, n uint64) ([]byte, cuda.CUresult) {
	if !g.onStream(call, s) {
		return nil, invalidHandle
	}
	b, ok := g.allocation(p, n)
	if !ok {
		g.fault("%s of %d bytes at %#x: outside every live allocation", call, n, uint64(p))
		return nil, invalidValue
	}
	return b, success
}

func (g *GPU) copyIn(dst cuda.Ptr, src unsafe.Pointer, n uint64, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	const call = "cuMemcpyHtoDAsync_v2"
	b, r := g.streamBytes(call, s, dst, n)
	if r != success {
		return r
	}
	copy(b, unsafe.Slice((*byte)(src), n))
	g.record(Op{Call: call, Stream: s, Dst: dst, Bytes: n})
	return success
}

func (g *GPU) copyOut(dst unsafe.Pointer, src cuda.Ptr, n uint64, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	const call = "cuMemcpyDtoHAsync_v2"
	b, r := g.streamBytes(call, s, src, n)
	if r != success {
		return r
	}
	copy(unsafe.Slice((*byte)(dst), n), b)
	g.record(Op{Call: call, Stream: s, Src: src, Bytes: n})
	return success
}

func (g *GPU) copyDevice(dst, src cuda.Ptr, n uint64, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	const call = "cuMemcpyDtoDAsync_v2"
	to, r := g.streamBytes(call, s, dst, n)
	if r != success {
		return r
	}
	from, r := g.streamBytes(call, s, src, n)
	if r != success {
		return r
	}
	copy(to, from)
	g.record(Op{Call: call, Stream: s, Dst: dst, Src: src, Bytes: n})
	return success
}

func (g *GPU) memset(call string, p cuda.Ptr, v []byte, n uint64, s cuda.CUstream) cuda.CUresult {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, r := g.streamBytes(call, s, p, n*uint64(len(v)))
	if r != success {
		return r
	}
	for i := range b {
		b[i] = v[i%len(v)]
	}
	g.record(Op{Call: call, Stream: s, Dst: p, Bytes: uint64(len(b))})
	return success
}

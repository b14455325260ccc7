package cuda

import "unsafe"

// The CUDA driver's types as its header (cuda.h) declares them. Handles
// are opaque pointers the driver hands out; Go never dereferences them.
type (
	CUresult    int32   // CUresult: 0 is CUDA_SUCCESS
	CUdevice    int32   // CUdevice: an ordinal's handle
	CUcontext   uintptr // CUcontext
	CUmodule    uintptr // CUmodule
	CUfunction  uintptr // CUfunction
	CUstream    uintptr // CUstream: 0 is the legacy default stream
	CUevent     uintptr // CUevent
	CUgraph     uintptr // CUgraph
	CUgraphExec uintptr // CUgraphExec
)

// DriverAPI is the part of libcuda glassbox calls: each field one C
// function, typed as its prototype in cuda.h (size_t as uint64, int as
// int32, unsigned int as uint32, T* as *T). OpenDriver fills it from
// libcuda.so.1 through purego, whose calls keep every pointer argument
// alive and in place until the C function returns; a test fills it with
// Go functions (internal/fakecuda).
//
// Out-parameters are Go pointers handed to a function value: the compiler
// cannot see where they go, so the variables they point at live on the
// heap, never on a goroutine stack that may move while the driver writes
// to it (TestOutParametersOnTheHeap checks it).
type DriverAPI struct {
	Init               func(flags uint32) CUresult                       `c:"cuInit"`
	DriverGetVersion   func(version *int32) CUresult                     `c:"cuDriverGetVersion"`
	GetErrorName       func(r CUresult, name **byte) CUresult            `c:"cuGetErrorName"`
	GetErrorString     func(r CUresult, text **byte) CUresult            `c:"cuGetErrorString"`
	DeviceGet          func(dev *CUdevice, ordinal int32) CUresult       `c:"cuDeviceGet"`
	DeviceGetCount     func(n *int32) CUresult                           `c:"cuDeviceGetCount"`
	DeviceGetName      func(name *byte, n int32, dev CUdevice) CUresult  `c:"cuDeviceGetName"`
	DeviceTotalMem     func(bytes *uint64, dev CUdevice) CUresult        `c:"cuDeviceTotalMem_v2"`
	DeviceGetAttribute func(v *int32, attr int32, dev CUdevice) CUresult `c:"cuDeviceGetAttribute"`
	DeviceGetPCIBusID  func(bus *byte, n int32, dev CUdevice) CUresult   `c:"cuDeviceGetPCIBusId"`

	PrimaryCtxRetain  func(ctx *CUcontext, dev CUdevice) CUresult `c:"cuDevicePrimaryCtxRetain"`
	PrimaryCtxRelease func(dev CUdevice) CUresult                 `c:"cuDevicePrimaryCtxRelease_v2"`
	CtxSetCurrent     func(ctx CUcontext) CUresult                `c:"cuCtxSetCurrent"`
	CtxSynchronize    func() CUresult                             `c:"cuCtxSynchronize"`

	// ModuleLoadDataEx's option values are void*: each an integer or an
	// address, as its option says (LoadPTX pins what they point at).
	ModuleLoadDataEx  func(m *CUmodule, image *byte, n uint32, options *int32, values *uintptr) CUresult `c:"cuModuleLoadDataEx"`
	ModuleUnload      func(m CUmodule) CUresult                                                          `c:"cuModuleUnload"`
	ModuleGetFunction func(f *CUfunction, m CUmodule, name string) CUresult                              `c:"cuModuleGetFunction"`
	FuncSetAttribute  func(f CUfunction, attr int32, v int32) CUresult                                   `c:"cuFuncSetAttribute"`

	MemAlloc     func(p *Ptr, bytes uint64) CUresult            `c:"cuMemAlloc_v2"`
	MemFree      func(p Ptr) CUresult                           `c:"cuMemFree_v2"`
	MemGetInfo   func(free, total *uint64) CUresult             `c:"cuMemGetInfo_v2"`
	MemAllocHost func(p *unsafe.Pointer, bytes uint64) CUresult `c:"cuMemAllocHost_v2"`
	MemFreeHost  func(p unsafe.Pointer) CUresult                `c:"cuMemFreeHost"`
	// Every copy and memset is queued on a stream: the synchronous
	// cuMemcpyHtoD/DtoH run on the legacy stream, which the executor's
	// non-blocking stream does not wait for (nor it for them).
	MemcpyHtoDAsync func(dst Ptr, src unsafe.Pointer, bytes uint64, s CUstream) CUresult `c:"cuMemcpyHtoDAsync_v2"`
	MemcpyDtoHAsync func(dst unsafe.Pointer, src Ptr, bytes uint64, s CUstream) CUresult `c:"cuMemcpyDtoHAsync_v2"`
	MemcpyDtoDAsync func(dst, src Ptr, bytes uint64, s CUstream) CUresult                `c:"cuMemcpyDtoDAsync_v2"`
	MemsetD8Async   func(p Ptr, v uint8, n uint64, s CUstream) CUresult                  `c:"cuMemsetD8Async"`
	MemsetD32Async  func(p Ptr, v uint32, n uint64, s CUstream) CUresult                 `c:"cuMemsetD32Async"`

	StreamCreate      func(s *CUstream, flags uint32) CUresult `c:"cuStreamCreate"`
	StreamDestroy     func(s CUstream) CUresult                `c:"cuStreamDestroy_v2"`
	StreamSynchronize func(s CUstream) CUresult                `c:"cuStreamSynchronize"`

	EventCreate      func(e *CUevent, flags uint32) CUresult        `c:"cuEventCreate"`
	EventRecord      func(e CUevent, s CUstream) CUresult           `c:"cuEventRecord"`
	EventSynchronize func(e CUevent) CUresult                       `c:"cuEventSynchronize"`
	EventElapsedTime func(ms *float32, start, end CUevent) CUresult `c:"cuEventElapsedTime"`
	EventDestroy     func(e CUevent) CUresult                       `c:"cuEventDestroy_v2"`

	// LaunchKernel's params is void**: an array of pointers, one to each
	// argument's value (Args keeps both pinned).
	LaunchKernel func(f CUfunction, gridX, gridY, gridZ, blockX, blockY, blockZ, shared uint32, s CUstream,
		params *unsafe.Pointer, extra *unsafe.Pointer) CUresult `c:"cuLaunchKernel"`

	StreamBeginCapture func(s CUstream, mode int32) CUresult                  `c:"cuStreamBeginCapture_v2"`
	StreamEndCapture   func(s CUstream, g *CUgraph) CUresult                  `c:"cuStreamEndCapture"`
	GraphInstantiate   func(x *CUgraphExec, g CUgraph, flags uint64) CUresult `c:"cuGraphInstantiateWithFlags"`
	GraphLaunch        func(x CUgraphExec, s CUstream) CUresult               `c:"cuGraphLaunch"`
	GraphExecDestroy   func(x CUgraphExec) CUresult                           `c:"cuGraphExecDestroy"`
	GraphDestroy       func(g CUgraph) CUresult                               `c:"cuGraphDestroy"`
}

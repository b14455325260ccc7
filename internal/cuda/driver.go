package cuda

import (
	"fmt"
)

// Driver is libcuda, loaded and initialised.
type Driver struct {
	lib     *library
	version int // cuDriverGetVersion: 1000·major + 10·minor
	fn      driverFuncs
}

type driverFuncs struct {
	init, driverGetVersion, getErrorName, getErrorString                         uintptr
	deviceGet, deviceGetCount, deviceGetName, deviceTotalMem, deviceGetAttribute uintptr
	devicePCIBusID                                                               uintptr
	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSynchronize           uintptr
	moduleLoadDataEx, moduleUnload, moduleGetFunction, funcSetAttribute          uintptr
	memAlloc, memFree, memGetInfo, memAllocHost, memFreeHost                     uintptr
	memcpyHtoD, memcpyDtoH, memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync    uintptr
	memsetD8Async, memsetD32Async                                                uintptr
	streamCreate, streamDestroy, streamSynchronize                               uintptr
	eventCreate, eventRecord, eventSynchronize, eventElapsedTime, eventDestroy   uintptr
	launchKernel                                                                 uintptr
	streamBeginCapture, streamEndCapture, graphInstantiate, graphLaunch          uintptr
	graphExecDestroy, graphDestroy                                               uintptr
}

// OpenDriver loads libcuda.so.1 from the loader's path and initialises
// it. Without NVIDIA's driver it returns an error saying so.
func OpenDriver() (*Driver, error) {
	lib, err := openLibrary("libcuda.so.1")
	if err != nil {
		return nil, fmt.Errorf("no NVIDIA driver: %w", err)
	}
	d := &Driver{lib: lib}
	f := &d.fn
	if err := lib.bind(map[string]*uintptr{
		"cuInit": &f.init, "cuDriverGetVersion": &f.driverGetVersion, "cuGetErrorName": &f.getErrorName, "cuGetErrorString": &f.getErrorString,
		"cuDeviceGet": &f.deviceGet, "cuDeviceGetCount": &f.deviceGetCount, "cuDeviceGetName": &f.deviceGetName,
		"cuDeviceTotalMem_v2": &f.deviceTotalMem, "cuDeviceGetAttribute": &f.deviceGetAttribute, "cuDeviceGetPCIBusId": &f.devicePCIBusID,
		"cuDevicePrimaryCtxRetain": &f.primaryCtxRetain, "cuDevicePrimaryCtxRelease_v2": &f.primaryCtxRelease,
		"cuCtxSetCurrent": &f.ctxSetCurrent, "cuCtxSynchronize": &f.ctxSynchronize,
		"cuModuleLoadDataEx": &f.moduleLoadDataEx, "cuModuleUnload": &f.moduleUnload, "cuModuleGetFunction": &f.moduleGetFunction,
		"cuFuncSetAttribute": &f.funcSetAttribute,
		"cuMemAlloc_v2":      &f.memAlloc, "cuMemFree_v2": &f.memFree, "cuMemGetInfo_v2": &f.memGetInfo,
		"cuMemAllocHost_v2": &f.memAllocHost, "cuMemFreeHost": &f.memFreeHost,
		"cuMemcpyHtoD_v2": &f.memcpyHtoD, "cuMemcpyDtoH_v2": &f.memcpyDtoH, "cuMemcpyHtoDAsync_v2": &f.memcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2": &f.memcpyDtoHAsync, "cuMemcpyDtoDAsync_v2": &f.memcpyDtoDAsync,
		"cuMemsetD8Async": &f.memsetD8Async, "cuMemsetD32Async": &f.memsetD32Async,
		"cuStreamCreate": &f.streamCreate, "cuStreamDestroy_v2": &f.streamDestroy, "cuStreamSynchronize": &f.streamSynchronize,
		"cuEventCreate": &f.eventCreate, "cuEventRecord": &f.eventRecord, "cuEventSynchronize": &f.eventSynchronize,
		"cuEventElapsedTime": &f.eventElapsedTime, "cuEventDestroy_v2": &f.eventDestroy,
		"cuLaunchKernel":          &f.launchKernel,
		"cuStreamBeginCapture_v2": &f.streamBeginCapture, "cuStreamEndCapture": &f.streamEndCapture,
		"cuGraphInstantiateWithFlags": &f.graphInstantiate, "cuGraphLaunch": &f.graphLaunch,
		"cuGraphExecDestroy": &f.graphExecDestroy, "cuGraphDestroy": &f.graphDestroy,
	}); err != nil {
		return nil, fmt.Errorf("load the NVIDIA driver: %w", err)
	}
	if err := d.check("cuInit", call(f.init, 0)); err != nil {
		return nil, fmt.Errorf("initialise the NVIDIA driver: %w", err)
	}
	var v int32
	if err := d.check("cuDriverGetVersion", call(f.driverGetVersion, ptr(&v))); err != nil {
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

// Version is the CUDA version the driver supports, as "13.0".
func (d *Driver) Version() string { return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10) }

// Error is a failed driver call.
type Error struct {
	Call string
	Code int
	Name string // CUDA_ERROR_…
	Text string // the driver's description
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// Codes a caller may branch on.
const (
	codeOutOfMemory  = 2
	codeNoDevice     = 100
	codeNotReady     = 600
	codeNotSupported = 801
)

// IsOutOfMemory reports whether err is the device running out of memory.
func IsOutOfMemory(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Code == codeOutOfMemory
}

// check turns a CUresult into an error (nil for CUDA_SUCCESS).
func (d *Driver) check(callName string, r uintptr) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: callName, Code: int(int32(r)), Name: fmt.Sprintf("CUDA error %d", int32(r))}
	var name, text *byte
	if call(d.fn.getErrorName, r, ptr(&name)) == 0 {
		e.Name = cStringAt(name)
	}
	if call(d.fn.getErrorString, r, ptr(&text)) == 0 {
		e.Text = cStringAt(text)
	}
	return e
}

// DeviceCount is how many CUDA devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", call(d.fn.deviceGetCount, ptr(&n))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device describes one GPU.
type Device struct {
	Ordinal      int
	Name         string
	TotalMemory  int64
	Major, Minor int // compute capability
	SMs          int
	L2Bytes      int
	SharedOptin  int    // the most shared memory a block may opt into
	PCIBusID     string // as NVML names it, "0000:19:00.0"
	handle       int32
}

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessorCount = 16
	attrL2CacheSize         = 38
	attrComputeMajor        = 75
	attrComputeMinor        = 76
	attrSharedOptin         = 97
)

// Device reads what glassbox needs to know of device ordinal.
func (d *Driver) Device(ordinal int) (*Device, error) {
	dev := &Device{Ordinal: ordinal}
	if err := d.check("cuDeviceGet", call(d.fn.deviceGet, ptr(&dev.handle), uintptr(ordinal))); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", call(d.fn.deviceGetName, ptr(&name[0]), uintptr(len(name)), uintptr(dev.handle))); err != nil {
		return nil, err
	}
	dev.Name = goString(name)
	var mem uint64
	if err := d.check("cuDeviceTotalMem", call(d.fn.deviceTotalMem, ptr(&mem), uintptr(dev.handle))); err != nil {
		return nil, err
	}
	dev.TotalMemory = int64(mem)
	for _, a := range []struct {
		attr int
		dst  *int
	}{{attrMultiprocessorCount, &dev.SMs}, {attrL2CacheSize, &dev.L2Bytes}, {attrComputeMajor, &dev.Major},
		{attrComputeMinor, &dev.Minor}, {attrSharedOptin, &dev.SharedOptin}} {
		var v int32
		if err := d.check("cuDeviceGetAttribute", call(d.fn.deviceGetAttribute, ptr(&v), uintptr(a.attr), uintptr(dev.handle))); err != nil {
			return nil, err
		}
		*a.dst = int(v)
	}
	bus := make([]byte, 64)
	if d.check("cuDeviceGetPCIBusId", call(d.fn.devicePCIBusID, ptr(&bus[0]), uintptr(len(bus)), uintptr(dev.handle))) == nil {
		dev.PCIBusID = goString(bus)
	}
	return dev, nil
}

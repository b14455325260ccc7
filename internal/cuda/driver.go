package cuda

import (
	"fmt"
)

// Driver is libcuda, loaded and initialised.
type Driver struct {
	api     *DriverAPI
	version int // cuDriverGetVersion: 1000·major + 10·minor
}

// OpenDriver loads libcuda.so.1 from the loader's path and initialises
// it. Without NVIDIA's driver it returns an error saying so.
func OpenDriver() (*Driver, error) {
	lib, err := openLibrary("libcuda.so.1")
	if err != nil {
		return nil, fmt.Errorf("no NVIDIA driver: %w", err)
	}
	api := new(DriverAPI)
	if err := lib.bind(api); err != nil {
		return nil, fmt.Errorf("load the NVIDIA driver: %w", err)
	}
	return NewDriver(api)
}

// NewDriver initialises a driver whose functions are api's: libcuda's
// from OpenDriver, or a test's fake.
func NewDriver(api *DriverAPI) (*Driver, error) {
	if err := unbound(api); err != nil {
		return nil, fmt.Errorf("load the NVIDIA driver: %w", err)
	}
	d := &Driver{api: api}
	if err := d.check("cuInit", api.Init(0)); err != nil {
		return nil, fmt.Errorf("initialise the NVIDIA driver: %w", err)
	}
	var v int32
	if err := d.check("cuDriverGetVersion", api.DriverGetVersion(&v)); err != nil {
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
func (d *Driver) check(callName string, r CUresult) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: callName, Code: int(r), Name: fmt.Sprintf("CUDA error %d", r)}
	var name, text *byte // the driver's own static strings
	if d.api.GetErrorName(r, &name) == 0 {
		e.Name = cStringAt(name)
	}
	if d.api.GetErrorString(r, &text) == 0 {
		e.Text = cStringAt(text)
	}
	return e
}

// DeviceCount is how many CUDA devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.api.DeviceGetCount(&n)); err != nil {
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
	handle       CUdevice
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
	if err := d.check("cuDeviceGet", d.api.DeviceGet(&dev.handle, int32(ordinal))); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.api.DeviceGetName(&name[0], int32(len(name)), dev.handle)); err != nil {
		return nil, err
	}
	dev.Name = goString(name)
	var mem uint64
	if err := d.check("cuDeviceTotalMem", d.api.DeviceTotalMem(&mem, dev.handle)); err != nil {
		return nil, err
	}
	dev.TotalMemory = int64(mem)
	for _, a := range []struct {
		attr int32
		dst  *int
	}{{attrMultiprocessorCount, &dev.SMs}, {attrL2CacheSize, &dev.L2Bytes}, {attrComputeMajor, &dev.Major},
		{attrComputeMinor, &dev.Minor}, {attrSharedOptin, &dev.SharedOptin}} {
		var v int32
		if err := d.check("cuDeviceGetAttribute", d.api.DeviceGetAttribute(&v, a.attr, dev.handle)); err != nil {
			return nil, err
		}
		*a.dst = int(v)
	}
	bus := make([]byte, 64)
	if d.check("cuDeviceGetPCIBusId", d.api.DeviceGetPCIBusID(&bus[0], int32(len(bus)), dev.handle)) == nil {
		dev.PCIBusID = goString(bus)
	}
	return dev, nil
}

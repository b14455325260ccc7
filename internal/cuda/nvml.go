package cuda

import "fmt"

// NVML is NVIDIA's management library: what nvidia-smi and dcgm-exporter
// read (names, memory, power, clocks, utilisation; GPM's profiling
// metrics on Hopper and later). Its calls are thread-safe: no Context
// needed.
type NVML struct {
	lib *library
	fn  nvmlFuncs
}

type nvmlFuncs struct {
	init, shutdown, driverVersion, count, byIndex, byPCI, name, uuid uintptr
	memory, power, powerLimit, clock, utilization, temperature       uintptr
	gpmSupport, gpmAlloc, gpmFree, gpmSample, gpmMetrics             uintptr
	board                                                            boardFuncs // optional: nvml_board.go
}

// OpenNVML loads libnvidia-ml.so.1 and initialises it.
func OpenNVML() (*NVML, error) {
	lib, err := openLibrary("libnvidia-ml.so.1")
	if err != nil {
		return nil, fmt.Errorf("no NVML: %w", err)
	}
	n := &NVML{lib: lib}
	f := &n.fn
	if err := lib.bind(map[string]*uintptr{
		"nvmlInit_v2": &f.init, "nvmlShutdown": &f.shutdown, "nvmlSystemGetDriverVersion": &f.driverVersion,
		"nvmlDeviceGetCount_v2": &f.count, "nvmlDeviceGetHandleByIndex_v2": &f.byIndex, "nvmlDeviceGetHandleByPciBusId_v2": &f.byPCI,
		"nvmlDeviceGetName": &f.name, "nvmlDeviceGetUUID": &f.uuid, "nvmlDeviceGetMemoryInfo": &f.memory,
		"nvmlDeviceGetPowerUsage": &f.power, "nvmlDeviceGetEnforcedPowerLimit": &f.powerLimit, "nvmlDeviceGetClockInfo": &f.clock,
		"nvmlDeviceGetUtilizationRates": &f.utilization, "nvmlDeviceGetTemperature": &f.temperature,
	}); err != nil {
		return nil, err
	}
	// GPM arrived with driver 520; older libraries lack it.
	f.gpmSupport = dlsym(lib.h, "nvmlGpmQueryDeviceSupport")
	f.gpmAlloc = dlsym(lib.h, "nvmlGpmSampleAlloc")
	f.gpmFree = dlsym(lib.h, "nvmlGpmSampleFree")
	f.gpmSample = dlsym(lib.h, "nvmlGpmSampleGet")
	f.gpmMetrics = dlsym(lib.h, "nvmlGpmMetricsGet")
	f.board.bind(lib)
	if err := nvmlCheck("nvmlInit", call(f.init)); err != nil {
		return nil, err
	}
	return n, nil
}

// Close shuts NVML down.
func (n *NVML) Close() { call(n.fn.shutdown) }

func nvmlCheck(op string, r uintptr) error {
	if r == 0 {
		return nil
	}
	names := map[uintptr]string{1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED", 4: "NO_PERMISSION", 6: "NOT_FOUND",
		7: "INSUFFICIENT_SIZE", 9: "DRIVER_NOT_LOADED", 12: "LIB_RM_VERSION_MISMATCH", 15: "GPU_IS_LOST", 999: "UNKNOWN"}
	return fmt.Errorf("%s: NVML_ERROR_%s (%d)", op, names[r], r)
}

// DriverVersion is the driver's version, as "580.159.04".
func (n *NVML) DriverVersion() (string, error) {
	b := make([]byte, 96)
	if err := nvmlCheck("nvmlSystemGetDriverVersion", call(n.fn.driverVersion, ptr(&b[0]), uintptr(len(b)))); err != nil {
		return "", err
	}
	return goString(b), nil
}

// NVMLDevice is one board's handle.
type NVMLDevice struct {
	n *NVML
	h uintptr
}

// Devices is how many boards NVML sees.
func (n *NVML) Devices() (int, error) {
	var c uint32
	err := nvmlCheck("nvmlDeviceGetCount", call(n.fn.count, ptr(&c)))
	return int(c), err
}

// Device is board i in NVML's order.
func (n *NVML) Device(i int) (*NVMLDevice, error) {
	d := &NVMLDevice{n: n}
	if err := nvmlCheck("nvmlDeviceGetHandleByIndex", call(n.fn.byIndex, uintptr(i), ptr(&d.h))); err != nil {
		return nil, err
	}
	return d, nil
}

// DeviceByPCI is the board at a PCI bus id (a CUDA device's
// Device.PCIBusID): NVML's order need not be CUDA's.
func (n *NVML) DeviceByPCI(bus string) (*NVMLDevice, error) {
	d := &NVMLDevice{n: n}
	b := cString(bus)
	if err := nvmlCheck("nvmlDeviceGetHandleByPciBusId", call(n.fn.byPCI, ptr(&b[0]), ptr(&d.h))); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *NVMLDevice) str(fn uintptr, op string) (string, error) {
	b := make([]byte, 96)
	if err := nvmlCheck(op, call(fn, d.h, ptr(&b[0]), uintptr(len(b)))); err != nil {
		return "", err
	}
	return goString(b), nil
}

// Name is the product name ("NVIDIA H200").
func (d *NVMLDevice) Name() (string, error) { return d.str(d.n.fn.name, "nvmlDeviceGetName") }

// UUID is the board's identifier ("GPU-…"), dcgm-exporter's UUID label.
func (d *NVMLDevice) UUID() (string, error) { return d.str(d.n.fn.uuid, "nvmlDeviceGetUUID") }

// Memory is the board's memory in bytes.
func (d *NVMLDevice) Memory() (total, free, used uint64, err error) {
	var m struct{ Total, Free, Used uint64 }
	err = nvmlCheck("nvmlDeviceGetMemoryInfo", call(d.n.fn.memory, d.h, ptr(&m)))
	return m.Total, m.Free, m.Used, err
}

// Power is the board's draw and its enforced limit, in watts.
func (d *NVMLDevice) Power() (draw, limit float64, err error) {
	var mw, lim uint32
	if err := nvmlCheck("nvmlDeviceGetPowerUsage", call(d.n.fn.power, d.h, ptr(&mw))); err != nil {
		return 0, 0, err
	}
	if err := nvmlCheck("nvmlDeviceGetEnforcedPowerLimit", call(d.n.fn.powerLimit, d.h, ptr(&lim))); err != nil {
		return float64(mw) / 1000, 0, err
	}
	return float64(mw) / 1000, float64(lim) / 1000, nil
}

// PowerUsage is the board's draw in watts.
func (d *NVMLDevice) PowerUsage() (float64, error) {
	var mw uint32
	err := nvmlCheck("nvmlDeviceGetPowerUsage", call(d.n.fn.power, d.h, ptr(&mw)))
	return float64(mw) / 1000, err
}

// Clock domains (nvmlClockType_t).
const (
	ClockGraphics = 0
	ClockSM       = 1
	ClockMemory   = 2
)

// Clock is a clock's current frequency in MHz.
func (d *NVMLDevice) Clock(domain int) (int, error) {
	var mhz uint32
	err := nvmlCheck("nvmlDeviceGetClockInfo", call(d.n.fn.clock, d.h, uintptr(domain), ptr(&mhz)))
	return int(mhz), err
}

// Utilization is nvidia-smi's utilization.gpu and .memory, in percent
// over the driver's last sample period.
func (d *NVMLDevice) Utilization() (gpu, memory int, err error) {
	var u struct{ GPU, Memory uint32 }
	err = nvmlCheck("nvmlDeviceGetUtilizationRates", call(d.n.fn.utilization, d.h, ptr(&u)))
	return int(u.GPU), int(u.Memory), err
}

// Temperature is the GPU's temperature in °C.
func (d *NVMLDevice) Temperature() (int, error) {
	var c uint32
	err := nvmlCheck("nvmlDeviceGetTemperature", call(d.n.fn.temperature, d.h, 0, ptr(&c)))
	return int(c), err
}

// GPM metrics (nvmlGpmMetricId_t): what dcgm-exporter's DCGM_FI_PROF_*
// fields read on Hopper.
const (
	GPMGraphicsUtil  = 1  // DCGM_FI_PROF_GR_ENGINE_ACTIVE
	GPMSMUtil        = 2  // DCGM_FI_PROF_SM_ACTIVE
	GPMSMOccupancy   = 3  // DCGM_FI_PROF_SM_OCCUPANCY
	GPMAnyTensorUtil = 5  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
	GPMDRAMBWUtil    = 10 // DCGM_FI_PROF_DRAM_ACTIVE
	GPMFP32Util      = 12 // DCGM_FI_PROF_PIPE_FP32_ACTIVE
	GPMFP16Util      = 13 // DCGM_FI_PROF_PIPE_FP16_ACTIVE
	GPMPCIeTxPerSec  = 20 // MiB/s: DCGM_FI_PROF_PCIE_TX_BYTES (in bytes/s)
	GPMPCIeRxPerSec  = 21 // MiB/s: DCGM_FI_PROF_PCIE_RX_BYTES (in bytes/s)
)

// GPMSupported reports whether the board has GPM (Hopper and later).
func (d *NVMLDevice) GPMSupported() bool {
	if d.n.fn.gpmSupport == 0 {
		return false
	}
	s := struct{ Version, Supported uint32 }{Version: 1}
	return call(d.n.fn.gpmSupport, d.h, ptr(&s)) == 0 && s.Supported != 0
}

// GPMSample is a snapshot of the board's performance counters; metrics
// are rates between two of them.
type GPMSample struct {
	d *NVMLDevice
	h uintptr
}

// NewGPMSample allocates a sample buffer; Free releases it.
func (d *NVMLDevice) NewGPMSample() (*GPMSample, error) {
	if !d.GPMSupported() {
		return nil, fmt.Errorf("GPM: not supported on this board or driver")
	}
	s := &GPMSample{d: d}
	if err := nvmlCheck("nvmlGpmSampleAlloc", call(d.n.fn.gpmAlloc, ptr(&s.h))); err != nil {
		return nil, err
	}
	return s, nil
}

// Free releases the sample.
func (s *GPMSample) Free() { call(s.d.n.fn.gpmFree, s.h) }

// Take reads the counters now.
func (s *GPMSample) Take() error {
	return nvmlCheck("nvmlGpmSampleGet", call(s.d.n.fn.gpmSample, s.d.h, s.h))
}

// gpmMetric is nvmlGpmMetric_t.
type gpmMetric struct {
	ID     uint32
	Return uint32
	Value  float64
	Info   [3]uintptr // C strings: name, description, unit
}

// GPMMetrics computes metrics (GPM… ids, percent or per second) over the
// interval between two samples; a metric the board does not give is an
// error naming it.
func GPMMetrics(older, newer *GPMSample, ids ...int) ([]float64, error) {
	// The header's array has NVML_GPM_METRIC_MAX entries, which grows
	// with drivers: leave the library room for any it may touch.
	q := new(struct {
		Version, Num     uint32
		Sample1, Sample2 uintptr
		Metrics          [1024]gpmMetric
	})
	if len(ids) > 32 {
		return nil, fmt.Errorf("GPM: at most 32 metrics at once, got %d", len(ids))
	}
	q.Version, q.Num, q.Sample1, q.Sample2 = 1, uint32(len(ids)), older.h, newer.h
	for i, id := range ids {
		q.Metrics[i].ID = uint32(id)
	}
	if err := nvmlCheck("nvmlGpmMetricsGet", call(older.d.n.fn.gpmMetrics, ptr(q))); err != nil {
		return nil, err
	}
	out := make([]float64, len(ids))
	for i := range ids {
		if err := nvmlCheck(fmt.Sprintf("GPM metric %d", ids[i]), uintptr(q.Metrics[i].Return)); err != nil {
			return nil, err
		}
		out[i] = q.Metrics[i].Value
	}
	return out, nil
}

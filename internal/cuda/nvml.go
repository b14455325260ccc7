package cuda

import "fmt"

// NVML is NVIDIA's management library: what nvidia-smi and dcgm-exporter
// read (names, memory, power, clocks, utilisation; GPM's profiling
// metrics on Hopper and later). Its calls are thread-safe: no Context
// needed.
type NVML struct {
	api *nvmlAPI
}

// OpenNVML loads libnvidia-ml.so.1 and initialises it.
func OpenNVML() (*NVML, error) {
	lib, err := openLibrary("libnvidia-ml.so.1")
	if err != nil {
		return nil, fmt.Errorf("no NVML: %w", err)
	}
	n := &NVML{api: new(nvmlAPI)}
	if err := lib.bind(n.api); err != nil {
		return nil, err
	}
	if err := nvmlCheck("nvmlInit", n.api.Init()); err != nil {
		return nil, err
	}
	return n, nil
}

// Close shuts NVML down.
func (n *NVML) Close() { n.api.Shutdown() }

func nvmlCheck(op string, r nvmlReturn) error {
	if r == 0 {
		return nil
	}
	names := map[nvmlReturn]string{1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED", 4: "NO_PERMISSION", 6: "NOT_FOUND",
		7: "INSUFFICIENT_SIZE", 9: "DRIVER_NOT_LOADED", 12: "LIB_RM_VERSION_MISMATCH", 15: "GPU_IS_LOST", 999: "UNKNOWN"}
	return fmt.Errorf("%s: NVML_ERROR_%s (%d)", op, names[r], r)
}

// DriverVersion is the driver's version, as "580.159.04".
func (n *NVML) DriverVersion() (string, error) {
	b := make([]byte, 96)
	if err := nvmlCheck("nvmlSystemGetDriverVersion", n.api.DriverVersion(&b[0], uint32(len(b)))); err != nil {
		return "", err
	}
	return goString(b), nil
}

// NVMLDevice is one board's handle.
type NVMLDevice struct {
	n *NVML
	h nvmlDevice
}

// Devices is how many boards NVML sees.
func (n *NVML) Devices() (int, error) {
	var c uint32
	err := nvmlCheck("nvmlDeviceGetCount", n.api.Count(&c))
	return int(c), err
}

// Device is board i in NVML's order.
func (n *NVML) Device(i int) (*NVMLDevice, error) {
	d := &NVMLDevice{n: n}
	if err := nvmlCheck("nvmlDeviceGetHandleByIndex", n.api.ByIndex(uint32(i), &d.h)); err != nil {
		return nil, err
	}
	return d, nil
}

// DeviceByPCI is the board at a PCI bus id (a CUDA device's
// Device.PCIBusID): NVML's order need not be CUDA's.
func (n *NVML) DeviceByPCI(bus string) (*NVMLDevice, error) {
	d := &NVMLDevice{n: n}
	if err := nvmlCheck("nvmlDeviceGetHandleByPciBusId", n.api.ByPCI(bus, &d.h)); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *NVMLDevice) str(fn func(nvmlDevice, *byte, uint32) nvmlReturn, op string) (string, error) {
	b := make([]byte, 96)
	if err := nvmlCheck(op, fn(d.h, &b[0], uint32(len(b)))); err != nil {
		return "", err
	}
	return goString(b), nil
}

// Name is the product name ("NVIDIA H200").
func (d *NVMLDevice) Name() (string, error) { return d.str(d.n.api.Name, "nvmlDeviceGetName") }

// UUID is the board's identifier ("GPU-…"), dcgm-exporter's UUID label.
func (d *NVMLDevice) UUID() (string, error) { return d.str(d.n.api.UUID, "nvmlDeviceGetUUID") }

// Memory is the board's memory in bytes.
func (d *NVMLDevice) Memory() (total, free, used uint64, err error) {
	var m nvmlMemory
	err = nvmlCheck("nvmlDeviceGetMemoryInfo", d.n.api.Memory(d.h, &m))
	return m.Total, m.Free, m.Used, err
}

// Power is the board's draw and its enforced limit, in watts.
func (d *NVMLDevice) Power() (draw, limit float64, err error) {
	var mw, lim uint32
	if err := nvmlCheck("nvmlDeviceGetPowerUsage", d.n.api.Power(d.h, &mw)); err != nil {
		return 0, 0, err
	}
	if err := nvmlCheck("nvmlDeviceGetEnforcedPowerLimit", d.n.api.PowerLimit(d.h, &lim)); err != nil {
		return float64(mw) / 1000, 0, err
	}
	return float64(mw) / 1000, float64(lim) / 1000, nil
}

// PowerUsage is the board's draw in watts.
func (d *NVMLDevice) PowerUsage() (float64, error) {
	var mw uint32
	err := nvmlCheck("nvmlDeviceGetPowerUsage", d.n.api.Power(d.h, &mw))
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
	err := nvmlCheck("nvmlDeviceGetClockInfo", d.n.api.Clock(d.h, int32(domain), &mhz))
	return int(mhz), err
}

// Utilization is nvidia-smi's utilization.gpu and .memory, in percent
// over the driver's last sample period.
func (d *NVMLDevice) Utilization() (gpu, memory int, err error) {
	var u nvmlUtilization
	err = nvmlCheck("nvmlDeviceGetUtilizationRates", d.n.api.Utilization(d.h, &u))
	return int(u.GPU), int(u.Memory), err
}

// Temperature is the GPU's temperature in °C.
func (d *NVMLDevice) Temperature() (int, error) {
	var c uint32
	err := nvmlCheck("nvmlDeviceGetTemperature", d.n.api.Temperature(d.h, 0, &c))
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
	api := d.n.api
	if api.GpmSupport == nil || api.GpmAlloc == nil || api.GpmFree == nil || api.GpmSample == nil || api.GpmMetrics == nil {
		return false
	}
	s := nvmlGpmSupport{Version: 1} // NVML_GPM_SUPPORT_VERSION
	return api.GpmSupport(d.h, &s) == 0 && s.Supported != 0
}

// GPMSample is a snapshot of the board's performance counters; metrics
// are rates between two of them.
type GPMSample struct {
	d *NVMLDevice
	h nvmlGpmSample
}

// NewGPMSample allocates a sample buffer; Free releases it.
func (d *NVMLDevice) NewGPMSample() (*GPMSample, error) {
	if !d.GPMSupported() {
		return nil, fmt.Errorf("GPM: not supported on this board or driver")
	}
	s := &GPMSample{d: d}
	if err := nvmlCheck("nvmlGpmSampleAlloc", d.n.api.GpmAlloc(&s.h)); err != nil {
		return nil, err
	}
	return s, nil
}

// Free releases the sample.
func (s *GPMSample) Free() { s.d.n.api.GpmFree(s.h) }

// Take reads the counters now.
func (s *GPMSample) Take() error {
	return nvmlCheck("nvmlGpmSampleGet", s.d.n.api.GpmSample(s.d.h, s.h))
}

// GPMMetrics computes metrics (GPM… ids, percent or per second) over the
// interval between two samples; a metric the board does not give is an
// error naming it.
func GPMMetrics(older, newer *GPMSample, ids ...int) ([]float64, error) {
	if len(ids) > 32 {
		return nil, fmt.Errorf("GPM: at most 32 metrics at once, got %d", len(ids))
	}
	q := &nvmlGpmMetricsGet{Version: 1, Num: uint32(len(ids)), Sample1: older.h, Sample2: newer.h} // NVML_GPM_METRICS_GET_VERSION
	for i, id := range ids {
		q.Metrics[i].ID = uint32(id)
	}
	if err := nvmlCheck("nvmlGpmMetricsGet", older.d.n.api.GpmMetrics(q)); err != nil {
		return nil, err
	}
	out := make([]float64, len(ids))
	for i := range ids {
		if err := nvmlCheck(fmt.Sprintf("GPM metric %d", ids[i]), q.Metrics[i].Return); err != nil {
			return nil, err
		}
		out[i] = q.Metrics[i].Value
	}
	return out, nil
}

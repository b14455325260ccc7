package cuda

import "structs"

// NVML's types as nvml.h declares them.
type (
	nvmlReturn    int32   // nvmlReturn_t: 0 is NVML_SUCCESS
	nvmlDevice    uintptr // nvmlDevice_t
	nvmlGpmSample uintptr // nvmlGpmSample_t: a struct of one pointer
)

// nvmlAPI is the part of NVML glassbox calls, each field one C function
// typed as its prototype in nvml.h (see DriverAPI for the conventions).
// The board's calls beyond the basics are optional: an older library
// lacks some, and only that reading fails (nil here).
type nvmlAPI struct {
	Init          func() nvmlReturn                                        `c:"nvmlInit_v2"`
	Shutdown      func() nvmlReturn                                        `c:"nvmlShutdown"`
	DriverVersion func(buf *byte, n uint32) nvmlReturn                     `c:"nvmlSystemGetDriverVersion"`
	Count         func(n *uint32) nvmlReturn                               `c:"nvmlDeviceGetCount_v2"`
	ByIndex       func(i uint32, d *nvmlDevice) nvmlReturn                 `c:"nvmlDeviceGetHandleByIndex_v2"`
	ByPCI         func(bus string, d *nvmlDevice) nvmlReturn               `c:"nvmlDeviceGetHandleByPciBusId_v2"`
	Name          func(d nvmlDevice, buf *byte, n uint32) nvmlReturn       `c:"nvmlDeviceGetName"`
	UUID          func(d nvmlDevice, buf *byte, n uint32) nvmlReturn       `c:"nvmlDeviceGetUUID"`
	Memory        func(d nvmlDevice, m *nvmlMemory) nvmlReturn             `c:"nvmlDeviceGetMemoryInfo"`
	Power         func(d nvmlDevice, mw *uint32) nvmlReturn                `c:"nvmlDeviceGetPowerUsage"`
	PowerLimit    func(d nvmlDevice, mw *uint32) nvmlReturn                `c:"nvmlDeviceGetEnforcedPowerLimit"`
	Clock         func(d nvmlDevice, domain int32, mhz *uint32) nvmlReturn `c:"nvmlDeviceGetClockInfo"`
	Utilization   func(d nvmlDevice, u *nvmlUtilization) nvmlReturn        `c:"nvmlDeviceGetUtilizationRates"`
	Temperature   func(d nvmlDevice, sensor int32, c *uint32) nvmlReturn   `c:"nvmlDeviceGetTemperature"`

	// GPM arrived with driver 520.
	GpmSupport func(d nvmlDevice, s *nvmlGpmSupport) nvmlReturn `c:"nvmlGpmQueryDeviceSupport,optional"`
	GpmAlloc   func(s *nvmlGpmSample) nvmlReturn                `c:"nvmlGpmSampleAlloc,optional"`
	GpmFree    func(s nvmlGpmSample) nvmlReturn                 `c:"nvmlGpmSampleFree,optional"`
	GpmSample  func(d nvmlDevice, s nvmlGpmSample) nvmlReturn   `c:"nvmlGpmSampleGet,optional"`
	GpmMetrics func(q *nvmlGpmMetricsGet) nvmlReturn            `c:"nvmlGpmMetricsGet,optional"`

	// What dcgm-exporter's device fields read beyond the basics
	// (nvml_board.go).
	Index        func(d nvmlDevice, i *uint32) nvmlReturn                          `c:"nvmlDeviceGetIndex,optional"`
	Minor        func(d nvmlDevice, m *uint32) nvmlReturn                          `c:"nvmlDeviceGetMinorNumber,optional"`
	PCIInfo      func(d nvmlDevice, p *nvmlPciInfo) nvmlReturn                     `c:"nvmlDeviceGetPciInfo_v3,optional"`
	MemoryV2     func(d nvmlDevice, m *nvmlMemoryV2) nvmlReturn                    `c:"nvmlDeviceGetMemoryInfo_v2,optional"`
	Energy       func(d nvmlDevice, mj *uint64) nvmlReturn                         `c:"nvmlDeviceGetTotalEnergyConsumption,optional"`
	FieldValues  func(d nvmlDevice, n int32, v *nvmlFieldValue) nvmlReturn         `c:"nvmlDeviceGetFieldValues,optional"`
	PCIeReplays  func(d nvmlDevice, n *uint32) nvmlReturn                          `c:"nvmlDeviceGetPcieReplayCounter,optional"`
	EncoderUtil  func(d nvmlDevice, util, periodUs *uint32) nvmlReturn             `c:"nvmlDeviceGetEncoderUtilization,optional"`
	DecoderUtil  func(d nvmlDevice, util, periodUs *uint32) nvmlReturn             `c:"nvmlDeviceGetDecoderUtilization,optional"`
	RemappedRows func(d nvmlDevice, corr, unc, pending, failed *uint32) nvmlReturn `c:"nvmlDeviceGetRemappedRows,optional"`
}

// NVML's structs, field for field (TestCLayouts asserts their sizes and
// offsets against nvml.h's).

// nvmlMemory is nvmlMemory_t.
type nvmlMemory struct {
	_                 structs.HostLayout
	Total, Free, Used uint64
}

// nvmlMemoryV2 is nvmlMemory_v2_t: Reserved is the driver's and the
// firmware's, outside Used.
type nvmlMemoryV2 struct {
	_                           structs.HostLayout
	Version                     uint32 // nvmlMemory_v2: its size | 2<<24
	Total, Reserved, Free, Used uint64
}

// nvmlUtilization is nvmlUtilization_t.
type nvmlUtilization struct {
	_           structs.HostLayout
	GPU, Memory uint32
}

// nvmlPciInfo is nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3's).
type nvmlPciInfo struct {
	_                                                structs.HostLayout
	BusIDLegacy                                      [16]byte
	Domain, Bus, Device, PCIDeviceID, PCISubSystemID uint32
	BusID                                            [32]byte
}

// nvmlFieldValue is nvmlFieldValue_t; Value is the nvmlValue_t union, read
// as ValueType says (fieldValue).
type nvmlFieldValue struct {
	_                  structs.HostLayout
	FieldID, ScopeID   uint32
	Timestamp, Latency int64
	ValueType          uint32 // nvmlValueType_t
	Return             nvmlReturn
	Value              [8]byte
}

// nvmlGpmSupport is nvmlGpmSupport_t.
type nvmlGpmSupport struct {
	_                  structs.HostLayout
	Version, Supported uint32
}

// nvmlGpmMetric is nvmlGpmMetric_t.
type nvmlGpmMetric struct {
	_      structs.HostLayout
	ID     uint32
	Return nvmlReturn
	Value  float64
	Info   [3]uintptr // C strings: short name, long name, unit
}

// gpmMetricSlots is the length of nvmlGpmMetricsGet_t's metrics array
// here. The header's NVML_GPM_METRIC_MAX grows with drivers (333 in a
// current nvml.h): a library newer than a header may touch entries up to
// its own, so the Go struct leaves room for any.
const gpmMetricSlots = 1024

// nvmlGpmMetricsGet is nvmlGpmMetricsGet_t with gpmMetricSlots metrics.
type nvmlGpmMetricsGet struct {
	_                structs.HostLayout
	Version, Num     uint32
	Sample1, Sample2 nvmlGpmSample
	Metrics          [gpmMetricSlots]nvmlGpmMetric
}

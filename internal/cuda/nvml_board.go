package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// What dcgm-exporter's device fields read beyond the basics in nvml.go:
// the board's identity (index, minor number, PCI bus id), its memory
// with the driver's reservation, energy, memory temperature, PCIe
// retries, the video engines and row remapping. Each symbol is optional
// (nvmlAPI): an older library lacks some, and only that call fails.

// lacks says the library lacks op's symbol, or nil.
func lacks(present bool, op string) error {
	if !present {
		return fmt.Errorf("%s: not in this NVML library", op)
	}
	return nil
}

func (d *NVMLDevice) uint32Of(fn func(nvmlDevice, *uint32) nvmlReturn, op string) (uint32, error) {
	if err := lacks(fn != nil, op); err != nil {
		return 0, err
	}
	var v uint32
	err := nvmlCheck(op, fn(d.h, &v))
	return v, err
}

// Index is the board's NVML index (dcgm-exporter's gpu label).
func (d *NVMLDevice) Index() (int, error) {
	v, err := d.uint32Of(d.n.api.Index, "nvmlDeviceGetIndex")
	return int(v), err
}

// Minor is the board's minor number: its /dev/nvidiaN (the device label).
func (d *NVMLDevice) Minor() (int, error) {
	v, err := d.uint32Of(d.n.api.Minor, "nvmlDeviceGetMinorNumber")
	return int(v), err
}

// PCIBusID is the board's bus id as NVML writes it ("00000000:18:00.0"),
// dcgm-exporter's pci_bus_id label.
func (d *NVMLDevice) PCIBusID() (string, error) {
	fn, op := d.n.api.PCIInfo, "nvmlDeviceGetPciInfo_v3"
	if err := lacks(fn != nil, op); err != nil {
		return "", err
	}
	var info nvmlPciInfo
	if err := nvmlCheck(op, fn(d.h, &info)); err != nil {
		return "", err
	}
	return goString(info.BusID[:]), nil
}

// MemoryInfo is the board's memory in bytes; Reserved is what the driver
// and firmware set aside (dcgm-exporter's FB_RESERVED), outside Used.
type MemoryInfo struct {
	Total, Reserved, Free, Used uint64
}

// MemoryInfo reads nvmlMemory_v2_t; a library or driver without it
// gives v1's numbers, whose Used includes the reservation (Reserved 0).
func (d *NVMLDevice) MemoryInfo() (MemoryInfo, error) {
	if fn := d.n.api.MemoryV2; fn != nil {
		var m nvmlMemoryV2
		m.Version = nvmlMemoryV2Version
		if nvmlCheck("nvmlDeviceGetMemoryInfo_v2", fn(d.h, &m)) == nil {
			return MemoryInfo{Total: m.Total, Reserved: m.Reserved, Free: m.Free, Used: m.Used}, nil
		}
	}
	t, f, u, err := d.Memory()
	return MemoryInfo{Total: t, Free: f, Used: u}, err
}

// nvmlMemoryV2Version is nvml.h's nvmlMemory_v2:
// NVML_STRUCT_VERSION(Memory, 2), the struct's size | 2<<24.
const nvmlMemoryV2Version = uint32(unsafe.Sizeof(nvmlMemoryV2{})) | 2<<24

// TotalEnergy is the energy the board has used since the driver loaded,
// in millijoules (Volta and later).
func (d *NVMLDevice) TotalEnergy() (uint64, error) {
	fn, op := d.n.api.Energy, "nvmlDeviceGetTotalEnergyConsumption"
	if err := lacks(fn != nil, op); err != nil {
		return 0, err
	}
	var mj uint64
	err := nvmlCheck(op, fn(d.h, &mj))
	return mj, err
}

// fieldMemoryTemp is NVML_FI_DEV_MEMORY_TEMP.
const fieldMemoryTemp = 82

// MemoryTemperature is the HBM's temperature in °C (boards with HBM).
func (d *NVMLDevice) MemoryTemperature() (int, error) {
	fn, op := d.n.api.FieldValues, "nvmlDeviceGetFieldValues"
	if err := lacks(fn != nil, op); err != nil {
		return 0, err
	}
	f := nvmlFieldValue{FieldID: fieldMemoryTemp}
	if err := nvmlCheck(op, fn(d.h, 1, &f)); err != nil {
		return 0, err
	}
	if err := nvmlCheck("memory temperature field", f.Return); err != nil {
		return 0, err
	}
	return int(fieldValue(f.ValueType, f.Value)), nil
}

// fieldValue reads nvmlValue_t as its nvmlValueType_t says (little
// endian, as every platform NVML runs on).
func fieldValue(typ uint32, b [8]byte) float64 {
	u := binary.LittleEndian.Uint64(b[:])
	switch typ {
	case 0: // double
		return math.Float64frombits(u)
	case 1: // unsigned int
		return float64(uint32(u))
	case 4: // signed long long
		return float64(int64(u))
	case 5: // signed int
		return float64(int32(uint32(u)))
	case 6: // unsigned short
		return float64(uint16(u))
	}
	return float64(u) // unsigned long, unsigned long long
}

// PCIeReplays is the board's PCIe retry counter.
func (d *NVMLDevice) PCIeReplays() (uint64, error) {
	v, err := d.uint32Of(d.n.api.PCIeReplays, "nvmlDeviceGetPcieReplayCounter")
	return uint64(v), err
}

// EncoderUtilization and DecoderUtilization are the video engines'
// percent over the driver's sampling period.
func (d *NVMLDevice) EncoderUtilization() (int, error) {
	return d.videoUtil(d.n.api.EncoderUtil, "nvmlDeviceGetEncoderUtilization")
}

// DecoderUtilization: see EncoderUtilization.
func (d *NVMLDevice) DecoderUtilization() (int, error) {
	return d.videoUtil(d.n.api.DecoderUtil, "nvmlDeviceGetDecoderUtilization")
}

func (d *NVMLDevice) videoUtil(fn func(nvmlDevice, *uint32, *uint32) nvmlReturn, op string) (int, error) {
	if err := lacks(fn != nil, op); err != nil {
		return 0, err
	}
	var util, periodUs uint32
	err := nvmlCheck(op, fn(d.h, &util, &periodUs))
	return int(util), err
}

// RemappedRows is the board's row remapping: rows remapped for
// correctable and uncorrectable errors, and whether a remapping failed.
func (d *NVMLDevice) RemappedRows() (corrected, uncorrected int, failed bool, err error) {
	fn, op := d.n.api.RemappedRows, "nvmlDeviceGetRemappedRows"
	if err := lacks(fn != nil, op); err != nil {
		return 0, 0, false, err
	}
	var corr, unc, pending, fail uint32
	err = nvmlCheck(op, fn(d.h, &corr, &unc, &pending, &fail))
	return int(corr), int(unc), fail != 0, err
}

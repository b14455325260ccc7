package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
)

// What dcgm-exporter's device fields read beyond the basics in nvml.go:
// the board's identity (index, minor number, PCI bus id), its memory
// with the driver's reservation, energy, memory temperature, PCIe
// retries, the video engines and row remapping. Each symbol is looked up
// on its own: an older library lacks some, and only that call fails.

// boardFuncs are the optional symbols; 0 where the library lacks one.
type boardFuncs struct {
	index, minor, pci, memoryV2, energy, fields, replay, enc, dec, remapped uintptr
}

func (f *boardFuncs) bind(lib *library) {
	for name, p := range map[string]*uintptr{
		"nvmlDeviceGetIndex": &f.index, "nvmlDeviceGetMinorNumber": &f.minor, "nvmlDeviceGetPciInfo_v3": &f.pci,
		"nvmlDeviceGetMemoryInfo_v2": &f.memoryV2, "nvmlDeviceGetTotalEnergyConsumption": &f.energy,
		"nvmlDeviceGetFieldValues": &f.fields, "nvmlDeviceGetPcieReplayCounter": &f.replay,
		"nvmlDeviceGetEncoderUtilization": &f.enc, "nvmlDeviceGetDecoderUtilization": &f.dec,
		"nvmlDeviceGetRemappedRows": &f.remapped,
	} {
		*p = dlsym(lib.h, name)
	}
}

// lacks says the library lacks fn's symbol, or nil.
func lacks(fn uintptr, op string) error {
	if fn == 0 {
		return fmt.Errorf("%s: not in this NVML library", op)
	}
	return nil
}

func (d *NVMLDevice) uint32Of(fn uintptr, op string) (uint32, error) {
	if err := lacks(fn, op); err != nil {
		return 0, err
	}
	var v uint32
	err := nvmlCheck(op, call(fn, d.h, ptr(&v)))
	return v, err
}

// Index is the board's NVML index (dcgm-exporter's gpu label).
func (d *NVMLDevice) Index() (int, error) {
	v, err := d.uint32Of(d.n.fn.board.index, "nvmlDeviceGetIndex")
	return int(v), err
}

// Minor is the board's minor number: its /dev/nvidiaN (the device label).
func (d *NVMLDevice) Minor() (int, error) {
	v, err := d.uint32Of(d.n.fn.board.minor, "nvmlDeviceGetMinorNumber")
	return int(v), err
}

// PCIBusID is the board's bus id as NVML writes it ("00000000:18:00.0"),
// dcgm-exporter's pci_bus_id label.
func (d *NVMLDevice) PCIBusID() (string, error) {
	// nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId,
	// pciSubSystemId, then busId[32].
	var info struct {
		Legacy  [16]byte
		Numbers [5]uint32
		BusID   [32]byte
	}
	fn, op := d.n.fn.board.pci, "nvmlDeviceGetPciInfo_v3"
	if err := lacks(fn, op); err != nil {
		return "", err
	}
	if err := nvmlCheck(op, call(fn, d.h, ptr(&info))); err != nil {
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
	if fn := d.n.fn.board.memoryV2; fn != 0 {
		var m struct {
			Version                     uint32
			_                           uint32
			Total, Reserved, Free, Used uint64
		}
		m.Version = 40 | 2<<24 // NVML_STRUCT_VERSION(Memory, 2): sizeof | version << 24
		if nvmlCheck("nvmlDeviceGetMemoryInfo_v2", call(fn, d.h, ptr(&m))) == nil {
			return MemoryInfo{Total: m.Total, Reserved: m.Reserved, Free: m.Free, Used: m.Used}, nil
		}
	}
	t, f, u, err := d.Memory()
	return MemoryInfo{Total: t, Free: f, Used: u}, err
}

// TotalEnergy is the energy the board has used since the driver loaded,
// in millijoules (Volta and later).
func (d *NVMLDevice) TotalEnergy() (uint64, error) {
	fn, op := d.n.fn.board.energy, "nvmlDeviceGetTotalEnergyConsumption"
	if err := lacks(fn, op); err != nil {
		return 0, err
	}
	var mj uint64
	err := nvmlCheck(op, call(fn, d.h, ptr(&mj)))
	return mj, err
}

// fieldMemoryTemp is NVML_FI_DEV_MEMORY_TEMP.
const fieldMemoryTemp = 82

// MemoryTemperature is the HBM's temperature in °C (boards with HBM).
func (d *NVMLDevice) MemoryTemperature() (int, error) {
	// nvmlFieldValue_t: fieldId, scopeId, timestamp, latencyUsec,
	// valueType, nvmlReturn, then an 8-byte union.
	var f struct {
		FieldID, ScopeID   uint32
		Timestamp, Latency int64
		ValueType, Return  uint32
		Value              [8]byte
	}
	f.FieldID = fieldMemoryTemp
	fn, op := d.n.fn.board.fields, "nvmlDeviceGetFieldValues"
	if err := lacks(fn, op); err != nil {
		return 0, err
	}
	if err := nvmlCheck(op, call(fn, d.h, 1, ptr(&f))); err != nil {
		return 0, err
	}
	if err := nvmlCheck("memory temperature field", uintptr(f.Return)); err != nil {
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
	v, err := d.uint32Of(d.n.fn.board.replay, "nvmlDeviceGetPcieReplayCounter")
	return uint64(v), err
}

// EncoderUtilization and DecoderUtilization are the video engines'
// percent over the driver's sampling period.
func (d *NVMLDevice) EncoderUtilization() (int, error) {
	return d.videoUtil(d.n.fn.board.enc, "nvmlDeviceGetEncoderUtilization")
}

// DecoderUtilization: see EncoderUtilization.
func (d *NVMLDevice) DecoderUtilization() (int, error) {
	return d.videoUtil(d.n.fn.board.dec, "nvmlDeviceGetDecoderUtilization")
}

func (d *NVMLDevice) videoUtil(fn uintptr, op string) (int, error) {
	if err := lacks(fn, op); err != nil {
		return 0, err
	}
	var util, periodUs uint32
	err := nvmlCheck(op, call(fn, d.h, ptr(&util), ptr(&periodUs)))
	return int(util), err
}

// RemappedRows is the board's row remapping: rows remapped for
// correctable and uncorrectable errors, and whether a remapping failed.
func (d *NVMLDevice) RemappedRows() (corrected, uncorrected int, failed bool, err error) {
	fn, op := d.n.fn.board.remapped, "nvmlDeviceGetRemappedRows"
	if err := lacks(fn, op); err != nil {
		return 0, 0, false, err
	}
	var corr, unc, pending, fail uint32
	err = nvmlCheck(op, call(fn, d.h, ptr(&corr), ptr(&unc), ptr(&pending), ptr(&fail)))
	return int(corr), int(unc), fail != 0, err
}

package cuda

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// TestNVMLBoard reads what the NVML exporter reads of the board beyond
// TestNVML's: its identity as dcgm-exporter labels it, memory with the
// driver's reservation, energy, HBM temperature, PCIe retries, the video
// engines and row remapping.
func TestNVMLBoard(t *testing.T) {
	c := openGPU(t)
	n, err := OpenNVML()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	dev, err := n.DeviceByPCI(c.Device.PCIBusID)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := dev.Index()
	if err != nil {
		t.Fatal(err)
	}
	minor, err := dev.Minor()
	if err != nil {
		t.Fatal(err)
	}
	bus, err := dev.PCIBusID()
	if err != nil {
		t.Fatal(err)
	}
	// CUDA writes a 4-digit domain, NVML (and dcgm-exporter) eight.
	if len(bus) != len("00000000:18:00.0") || !strings.HasSuffix(strings.ToUpper(bus), strings.ToUpper(c.Device.PCIBusID[strings.IndexByte(c.Device.PCIBusID, ':'):])) {
		t.Errorf("NVML's bus id %q is not the CUDA device's %q in dcgm-exporter's form", bus, c.Device.PCIBusID)
	}
	m, err := dev.MemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	total, _, _, err := dev.Memory()
	if err != nil {
		t.Fatal(err)
	}
	if m.Total != total || m.Reserved+m.Free+m.Used != m.Total {
		t.Errorf("memory v2 %+v: want total %d = reserved + free + used", m, total)
	}
	mj, err := dev.TotalEnergy()
	if err != nil || mj == 0 {
		t.Errorf("total energy %d mJ, %v", mj, err)
	}
	memTemp, memTempErr := dev.MemoryTemperature()
	replays, replayErr := dev.PCIeReplays()
	enc, encErr := dev.EncoderUtilization()
	dec, decErr := dev.DecoderUtilization()
	corr, unc, failed, rowsErr := dev.RemappedRows()
	t.Logf("NVML board: index %d, /dev/nvidia%d, %s, memory %d MiB (reserved %d, free %d, used %d), energy %d J, HBM %d °C (%v), PCIe replays %d (%v), encoder %d%% (%v), decoder %d%% (%v), remapped rows %d/%d failed %v (%v)",
		idx, minor, bus, m.Total>>20, m.Reserved>>20, m.Free>>20, m.Used>>20, mj/1000, memTemp, memTempErr, replays, replayErr, enc, encErr, dec, decErr, corr, unc, failed, rowsErr)
	if c.Device.Major >= 9 && (memTempErr != nil || memTemp < 10 || memTemp > 110) {
		t.Errorf("an HBM board's memory temperature read %d °C (%v)", memTemp, memTempErr)
	}
}

// TestNVMLWithoutSymbols: a library that lacks an optional call fails
// that call alone, by name, without calling anything.
func TestNVMLWithoutSymbols(t *testing.T) {
	d := &NVMLDevice{n: &NVML{api: &nvmlAPI{}}}
	for name, err := range map[string]error{
		"index":   second(d.Index()),
		"minor":   second(d.Minor()),
		"bus":     second(d.PCIBusID()),
		"energy":  second(d.TotalEnergy()),
		"memtemp": second(d.MemoryTemperature()),
		"replays": second(d.PCIeReplays()),
		"encoder": second(d.EncoderUtilization()),
	} {
		if err == nil || !strings.Contains(err.Error(), "not in this NVML library") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestFieldValue(t *testing.T) {
	le := func(u uint64) (b [8]byte) { binary.LittleEndian.PutUint64(b[:], u); return b }
	for _, c := range []struct {
		typ  uint32
		bits uint64
		want float64
	}{
		{0, math.Float64bits(41.5), 41.5},
		{1, 0xdead_0000_0000_0040, 64}, // only the low 32 bits are the value
		{3, 1 << 40, 1 << 40},
		{4, uint64(1<<64 - 3), -3},
		{5, 0x0000_0000_ffff_fffe, -2},
		{6, 0xffff_0000_0001_0050, 80},
	} {
		if got := fieldValue(c.typ, le(c.bits)); got != c.want {
			t.Errorf("type %d, bits %#x: %v, want %v", c.typ, c.bits, got, c.want)
		}
	}
}

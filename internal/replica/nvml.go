//go:build !nocuda

package replica

import (
	"errors"
	"log/slog"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/dcgm"
)

// gpuCounters opens NVML on the board at PCI bus id bus (the CUDA
// executor's GPU) and starts dcgm's NVML exporter on it; close ends its
// sampler and NVML.
func gpuCounters(bus string, interval time.Duration, hostname string, log *slog.Logger) (e *dcgm.NVMLExporter, close func(), err error) {
	n, err := cuda.OpenNVML()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	dev, err := n.DeviceByPCI(bus)
	if err != nil {
		return nil, nil, err
	}
	driver, err := n.DriverVersion()
	if err != nil {
		return nil, nil, err
	}
	if e, err = dcgm.NewNVML(dcgm.NVMLConfig{Device: nvmlBoard{dev}, DriverVersion: driver, Hostname: hostname, Interval: interval, Logger: log}); err != nil {
		return nil, nil, err
	}
	return e, func() { e.Close(); n.Close() }, nil
}

// nvmlBoard adapts internal/cuda's NVML device to what dcgm reads.
type nvmlBoard struct{ *cuda.NVMLDevice }

var _ dcgm.Device = nvmlBoard{}

func (b nvmlBoard) SMClock() (int, error)  { return b.Clock(cuda.ClockSM) }
func (b nvmlBoard) MemClock() (int, error) { return b.Clock(cuda.ClockMemory) }

func (b nvmlBoard) Framebuffer() (dcgm.Framebuffer, error) {
	m, err := b.MemoryInfo()
	return dcgm.Framebuffer{Free: m.Free, Used: m.Used, Reserved: m.Reserved}, err
}

func (b nvmlBoard) GPM() (dcgm.GPM, error) {
	older, err := b.NewGPMSample()
	if err != nil {
		return nil, err
	}
	newer, err := b.NewGPMSample()
	if err != nil {
		older.Free()
		return nil, err
	}
	return &nvmlGPM{older: older, newer: newer}, nil
}

// nvmlGPM keeps the last two GPM snapshots: a new one overwrites the
// older buffer and becomes the newer.
type nvmlGPM struct {
	older, newer *cuda.GPMSample
	taken        int
}

// gpmIDs are NVML's ids of the metrics dcgm reads.
var gpmIDs = [dcgm.NumGPMMetrics]int{
	dcgm.GPMGraphics: cuda.GPMGraphicsUtil, dcgm.GPMSMActive: cuda.GPMSMUtil, dcgm.GPMSMOccupancy: cuda.GPMSMOccupancy,
	dcgm.GPMTensor: cuda.GPMAnyTensorUtil, dcgm.GPMDRAM: cuda.GPMDRAMBWUtil,
	dcgm.GPMPCIeTx: cuda.GPMPCIeTxPerSec, dcgm.GPMPCIeRx: cuda.GPMPCIeRxPerSec,
}

func (g *nvmlGPM) Sample() error {
	if err := g.older.Take(); err != nil {
		return err
	}
	g.older, g.newer = g.newer, g.older
	g.taken++
	return nil
}

func (g *nvmlGPM) Metric(m dcgm.GPMMetric) (float64, error) {
	if g.taken < 2 {
		return 0, errors.New("GPM: a metric needs two samples")
	}
	v, err := cuda.GPMMetrics(g.older, g.newer, gpmIDs[m])
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (g *nvmlGPM) Close() { g.older.Free(); g.newer.Free() }

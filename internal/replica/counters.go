package replica

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
)

// counters is the dcgm-exporter Config.DCGM asks for, on the GPU the
// executor runs on.
type counters struct {
	observer engine.Observer // the simulated GPUs' (nil: a real GPU's exporter samples NVML itself)
	handler  http.Handler
	line     string // what it serves, for the banner
	stop     func() // ends a real GPU's sampler and NVML; nil otherwise
}

// newCounters builds the exporter of gpu's series: the simulated GPUs'
// from the cost model's activity, a real GPU's from NVML; the CPU has
// none, which is refused by name (note says why --device auto took it).
func newCounters(cfg *Config, gpu executor.GPU, note string) (*counters, error) {
	if err := dcgm.CheckInterval(cfg.DCGMWindow); err != nil {
		return nil, fmt.Errorf("--dcgm-interval: %w", err)
	}
	switch {
	case gpu.Simulated != nil:
		e, err := dcgm.New(dcgm.Config{Hardware: *gpu.Simulated, GPUs: gpu.Count, GPUMemoryUtilization: cfg.GPUMemoryUtilization,
			Hostname: cfg.Hostname, Window: cfg.DCGMWindow, Now: cfg.Clock.Now})
		if err != nil {
			return nil, err
		}
		return &counters{observer: simCounters{e}, handler: e,
			line: fmt.Sprintf("the simulated dcgm-exporter of %d× %s", gpu.Count, gpu.Simulated.Device.ModelName)}, nil
	case gpu.PCIBusID != "":
		e, stop, err := gpuCounters(gpu.PCIBusID, cfg.DCGMWindow, cfg.Hostname, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("--dcgm-port: read the GPU's counters: %w", err)
		}
		return &counters{handler: e, line: describeCounters(e, cfg.DCGMWindow), stop: stop}, nil
	}
	msg := "--dcgm-port: the CPU executor has no GPU counters to serve: dcgm-exporter's series come from an NVIDIA GPU (--device cuda) or the simulated one (no --model)"
	if note != "" {
		msg += "; " + note
	}
	return nil, errors.New(msg)
}

// describeCounters is the banner's account of the NVML exporter: the
// board, the interval, and what it does not read.
func describeCounters(e *dcgm.NVMLExporter, interval time.Duration) string {
	s := fmt.Sprintf("dcgm-exporter's series of the %s read from NVML every %v", e.ModelName(), cmpInterval(interval))
	if why := e.GPMMissing(); why != "" {
		s += "; no DCGM_FI_PROF_* series: this board or driver has no GPM (Hopper and later), as dcgm-exporter without DCP (" + why + ")"
	} else {
		s += " (DCGM_FI_PROF_* from GPM)"
	}
	if f := e.Failing(); len(f) > 0 {
		s += "; not read here: " + strings.Join(f, ", ")
	}
	return s
}

func cmpInterval(d time.Duration) time.Duration {
	if d == 0 {
		return time.Second
	}
	return d
}

package dcgm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Device is one real GPU as NVML shows it: what NVMLExporter reads. dcgm
// does not import internal/cuda; the wiring adapts cuda's NVMLDevice to
// it. Any call may fail (a field the board or driver lacks, a GPU fallen
// off the bus): that field is then left out of the reading, as
// dcgm-exporter writes what it can.
type Device interface {
	Name() (string, error)
	UUID() (string, error)
	Index() (int, error)
	Minor() (int, error)       // /dev/nvidiaN
	PCIBusID() (string, error) // "00000000:18:00.0"

	SMClock() (int, error)  // MHz
	MemClock() (int, error) // MHz
	Temperature() (int, error)
	MemoryTemperature() (int, error)
	PowerUsage() (float64, error)              // W
	TotalEnergy() (uint64, error)              // mJ since the driver loaded
	Utilization() (gpu, memory int, err error) // %, over the driver's sample period
	EncoderUtilization() (int, error)
	DecoderUtilization() (int, error)
	Framebuffer() (Framebuffer, error)
	PCIeReplays() (uint64, error)
	RemappedRows() (corrected, uncorrected int, failed bool, err error)
	// GPM opens the board's GPM counters (Hopper and later); an error
	// means it has none, and the DCGM_FI_PROF_* series are absent.
	GPM() (GPM, error)
}

// Framebuffer is the board's memory in bytes; Reserved is the driver's
// and firmware's, outside Used.
type Framebuffer struct{ Free, Used, Reserved uint64 }

// GPM is a board's GPM counters. Sample snapshots them; Metric is a
// metric over the interval between the last two snapshots.
type GPM interface {
	Sample() error
	Metric(m GPMMetric) (float64, error)
	Close()
}

// GPMMetric names a GPM metric the exporter reads: the utilisations in
// percent, the PCIe rates in MiB/s, as NVML gives them.
type GPMMetric int

const (
	GPMGraphics    GPMMetric = iota // → DCGM_FI_PROF_GR_ENGINE_ACTIVE
	GPMSMActive                     // → DCGM_FI_PROF_SM_ACTIVE
	GPMSMOccupancy                  // → DCGM_FI_PROF_SM_OCCUPANCY
	GPMTensor                       // → DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (any tensor op)
	GPMDRAM                         // → DCGM_FI_PROF_DRAM_ACTIVE
	GPMPCIeTx                       // → DCGM_FI_PROF_PCIE_TX_BYTES
	GPMPCIeRx                       // → DCGM_FI_PROF_PCIE_RX_BYTES
	NumGPMMetrics
)

// NVMLConfig describes the GPU to export.
type NVMLConfig struct {
	Device        Device
	DriverVersion string // the DCGM_FI_DRIVER_VERSION label, NVML's
	Hostname      string // the Hostname label (dcgm-exporter: $NODE_NAME, else the host name)
	// Interval is how often the sampler reads the board (dcgm-exporter's
	// collection interval); the profiling fields are GPM's averages over
	// it. 0 means one second; GPM wants at least 100 ms.
	Interval time.Duration
	Logger   *slog.Logger
}

// NVMLExporter serves a real GPU's counters in dcgm-exporter's format: a
// sampler goroutine reads the board every Interval, and scrapes write the
// latest reading. Close ends the sampler.
type NVMLExporter struct {
	cfg    NVMLConfig
	labels []string
	gpm    GPM    // nil without GPM
	noGPM  string // why there is none
	model  string

	mu      sync.Mutex
	latest  values            // replaced whole each interval, never written after
	failing map[string]string // field → the error that lost it, as of the last reading

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewNVML reads the board's identity and a first reading (without the
// profiling fields: GPM's first interval ends one Interval later), then
// starts the sampler.
func NewNVML(cfg NVMLConfig) (*NVMLExporter, error) {
	if cfg.Device == nil {
		return nil, errors.New("new NVML dcgm exporter: no device")
	}
	if err := CheckInterval(cfg.Interval); err != nil {
		return nil, fmt.Errorf("new NVML dcgm exporter: %w", err)
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := cfg.Device
	var id struct {
		name, uuid, bus string
		index, minor    int
	}
	var err error
	if id.name, err = d.Name(); err != nil {
		return nil, fmt.Errorf("new NVML dcgm exporter: %w", err)
	}
	if id.uuid, err = d.UUID(); err != nil {
		return nil, fmt.Errorf("new NVML dcgm exporter: %w", err)
	}
	if id.index, err = d.Index(); err != nil {
		return nil, fmt.Errorf("new NVML dcgm exporter: %w", err)
	}
	if id.bus, err = d.PCIBusID(); err != nil {
		return nil, fmt.Errorf("new NVML dcgm exporter: %w", err)
	}
	if id.minor, err = d.Minor(); err != nil {
		id.minor = id.index // containers without /dev access: NVML's order
	}
	e := &NVMLExporter{cfg: cfg, model: id.name, stop: make(chan struct{}), done: make(chan struct{}),
		labels: []string{gpuLabels(id.index, id.uuid, id.bus, id.minor, id.name, cfg.Hostname, cfg.DriverVersion)}}
	if g, err := d.GPM(); err != nil {
		e.noGPM = err.Error()
	} else if err := g.Sample(); err != nil {
		g.Close()
		e.noGPM = err.Error()
	} else {
		e.gpm = g
	}
	e.latest, e.failing = e.read(false)
	go e.run()
	return e, nil
}

// run samples every Interval until Close.
func (e *NVMLExporter) run() {
	defer close(e.done)
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		v, failing := e.read(true)
		e.mu.Lock()
		e.latest = v
		for f, why := range failing {
			if _, was := e.failing[f]; !was {
				e.cfg.Logger.Debug("dcgm field not read", "field", f, "err", why)
			}
		}
		e.failing = failing
		e.mu.Unlock()
	}
}

// Close stops the sampler and releases GPM's samples; scrapes after it
// write the last reading.
func (e *NVMLExporter) Close() {
	e.once.Do(func() { close(e.stop) })
	<-e.done
	if e.gpm != nil {
		e.gpm.Close()
		e.gpm = nil
	}
}

// ServeHTTP writes the latest reading in dcgm-exporter's format.
func (e *NVMLExporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveText(w, r, e.WriteText)
}

// WriteText writes the latest reading.
func (e *NVMLExporter) WriteText(w io.Writer) error {
	e.mu.Lock()
	v := e.latest
	e.mu.Unlock()
	return writeExposition(w, e.labels, []values{v})
}

// GPMMissing says why the profiling fields are absent, or "" when GPM
// reads them.
func (e *NVMLExporter) GPMMissing() string { return e.noGPM }

// Failing lists the fields the last reading lost, each with its error,
// sorted: what a banner or a log should say is not read on this board.
func (e *NVMLExporter) Failing() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for f, why := range e.failing {
		out = append(out, f+" ("+why+")")
	}
	sort.Strings(out)
	return out
}

// ModelName is the board's name (the modelName label).
func (e *NVMLExporter) ModelName() string { return e.model }

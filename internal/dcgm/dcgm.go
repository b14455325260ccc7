// Package dcgm is the simulated GPU's NVIDIA dcgm-exporter: the DCGM_FI_*
// series a real GPU fleet exports next to vLLM (GPU activity, tensor and
// memory pipes, framebuffer, power, clocks), one series set per simulated
// GPU, with dcgm-exporter's names, HELP, labels and number format, derived
// step by step from the cost model's work. It observes the engine (an
// engine.Observer) and serves the text on its own listener, as
// dcgm-exporter does on :9400.
//
// It may import engine (for the events) and the sim's profiles; it must not
// import server, metrics or tracing.
package dcgm

import (
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Config describes the simulated GPUs.
type Config struct {
	Hardware sim.Hardware
	GPUs     int // tensor-parallel ranks, one series set each
	// GPUMemoryUtilization is what vLLM preallocates of each GPU's
	// framebuffer at start-up: FB used is this share, flat under any load.
	GPUMemoryUtilization float64
	Hostname             string // the Hostname label (dcgm-exporter: $NODE_NAME, else the host name)
	// Window is the period the *_ACTIVE ratios, utilisations, power and
	// PCIe rates are averaged over, as DCGM averages over its sampling
	// interval; 0 means one second.
	Window time.Duration
	// Now is the engine's clock; nil means time.Now.
	Now func() time.Time
}

// DriverVersion is the DCGM_FI_DRIVER_VERSION label: the driver real
// captures of these GPUs show; the simulation has no driver of its own.
const DriverVersion = "580.105.08"

// bucketWidth is the resolution of the activity history.
const bucketWidth = 100 * time.Millisecond

// maxWindow bounds the history kept, and so Window.
const maxWindow = time.Minute

// Exporter accumulates each step's work per time bucket. ObserveStep runs
// on the engine goroutine and scrapes on HTTP goroutines: mu guards all.
type Exporter struct {
	cfg    Config
	labels []string // per GPU, the label block dcgm-exporter writes

	mu      sync.Mutex
	start   time.Time
	buckets [int(maxWindow / bucketWidth)]bucket
	energy  float64 // joules above idle, accumulated per step
}

// bucket is one bucketWidth of activity, identified by its index since the
// epoch (a stale bucket has an older index and counts as empty).
type bucket struct {
	index                         int64
	busy, flops, bytes, power, io float64 // seconds; FLOP; bytes; joules above idle; PCIe bytes
}

// New builds the exporter; its energy counter starts now ("since boot").
func New(cfg Config) (*Exporter, error) {
	d := cfg.Hardware.Device
	switch {
	case cfg.GPUs < 1:
		return nil, fmt.Errorf("new dcgm exporter: %d GPUs", cfg.GPUs)
	case d.TDPWatts <= 0 || d.FramebufferMiB <= 0:
		return nil, fmt.Errorf("new dcgm exporter: hardware %s has no device profile", cfg.Hardware.Name)
	case cfg.Window != 0 && (cfg.Window < bucketWidth || cfg.Window > maxWindow):
		// Readings are kept in buckets: a shorter window could cover none.
		return nil, fmt.Errorf("new dcgm exporter: window %v is not within [%v, %v]", cfg.Window, bucketWidth, maxWindow)
	}
	if cfg.Window == 0 {
		cfg.Window = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Exporter{cfg: cfg, start: cfg.Now()}
	for i := range cfg.GPUs {
		e.labels = append(e.labels, fmt.Sprintf(`gpu="%d",UUID="%s",pci_bus_id="%s",device="nvidia%d",modelName="%s",Hostname="%s",%s="%s"`,
			i, gpuUUID(cfg.Hostname, i), pciBusID(i), i, d.ModelName, cfg.Hostname, metricspec.DCGMDriverVersionKey, DriverVersion))
	}
	return e, nil
}

var _ engine.Observer = (*Exporter)(nil)

// ObserveStep charges the step's execution to the buckets it spans.
func (e *Exporter) ObserveStep(s *engine.StepEvent) {
	busy := s.ExecuteTime.Seconds()
	if busy <= 0 {
		return
	}
	hw := &e.cfg.Hardware
	d := &hw.Device
	bytes := s.ReadBytes + s.WriteBytes
	tensor := min(s.FLOPs/(hw.PeakFLOPs*busy), 1)
	dram := min(bytes/(hw.MemBandwidth*busy), 1)
	// Power while a kernel runs: even a memory-bound step draws close to
	// half the board limit; compute and memory traffic push it to the TDP.
	power := (d.TDPWatts - d.IdleWatts) * (0.45 + 0.55*max(tensor, dram)) * busy
	// PCIe: token ids in, sampled ids out, and the step's metadata.
	io := float64(s.NumTokens+s.GenerationTokens)*8 + 4096
	from := s.Start.Add(s.ScheduleTime)
	to := from.Add(s.ExecuteTime)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.energy += power
	for t := from; t.Before(to); {
		idx := t.UnixNano() / int64(bucketWidth)
		end := time.Unix(0, (idx+1)*int64(bucketWidth))
		stop := end
		if to.Before(stop) {
			stop = to
		}
		part := stop.Sub(t).Seconds() / busy
		b := &e.buckets[idx%int64(len(e.buckets))]
		if b.index != idx {
			*b = bucket{index: idx}
		}
		b.busy += part * busy
		b.flops += part * s.FLOPs
		b.bytes += part * bytes
		b.power += part * power
		b.io += part * io
		t = end
	}
}

// ObserveFinished implements engine.Observer; requests leave no trace on
// a GPU's counters.
func (e *Exporter) ObserveFinished(*engine.FinishedEvent) {}

// reading is one GPU's values at a scrape.
type reading struct {
	active, sm, occupancy, tensor, dram float64 // ratios over the window
	watts, energyMJ                     float64
	txBps, rxBps                        float64
	smClock, memClock, temp, memTemp    int
	fbUsed, fbFree, fbReserved          int
}

// read sums the buckets of the last window before now: the whole buckets
// after the one holding now−Window, over the time they cover.
func (e *Exporter) read(now time.Time) reading {
	hw := &e.cfg.Hardware
	d := &hw.Device
	last := now.UnixNano() / int64(bucketWidth)
	first := now.Add(-e.cfg.Window).UnixNano() / int64(bucketWidth)
	w := now.Sub(time.Unix(0, (first+1)*int64(bucketWidth))).Seconds()
	var busy, flops, bytes, power, io float64
	e.mu.Lock()
	for idx := first + 1; idx <= last; idx++ {
		b := &e.buckets[idx%int64(len(e.buckets))]
		if b.index == idx {
			busy, flops, bytes, power, io = busy+b.busy, flops+b.flops, bytes+b.bytes, power+b.power, io+b.io
		}
	}
	energy := e.energy
	e.mu.Unlock()

	r := reading{active: min(busy/w, 1), tensor: min(flops/(hw.PeakFLOPs*w), 1), dram: min(bytes/(hw.MemBandwidth*w), 1)}
	u := 0.0
	if busy > 0 {
		u = min(max(flops/(hw.PeakFLOPs*busy), bytes/(hw.MemBandwidth*busy)), 1)
	}
	// While a kernel runs most SMs hold warps; occupancy (warps per SM)
	// stays low for the large-tile GEMMs of LLM inference.
	r.sm = r.active * (0.75 + 0.25*u)
	r.occupancy = r.sm * (0.15 + 0.25*u)
	r.watts = d.IdleWatts + power/w
	r.energyMJ = (d.IdleWatts*now.Sub(e.start).Seconds() + energy) * 1e3
	r.txBps, r.rxBps = 100_000+io/2/w, 20_000+io/2/w
	heat := (r.watts - d.IdleWatts) / (d.TDPWatts - d.IdleWatts)
	r.temp = int(math.Round(30 + 45*heat))
	if d.HBM {
		r.memTemp = r.temp + 8
	}
	r.memClock = d.MemClockMHz
	r.smClock = d.IdleSMClockMHz
	if busy > 0 {
		r.smClock = d.SMClockMHz
	}
	r.fbReserved = d.ReservedMiB
	r.fbUsed = int(math.Round(e.cfg.GPUMemoryUtilization * float64(d.FramebufferMiB)))
	r.fbFree = max(d.FramebufferMiB-r.fbUsed-r.fbReserved, 0)
	return r
}

// gpuUUID is a stable GPU-xxxxxxxx-xxxx-… id for a host's GPU i.
func gpuUUID(host string, i int) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "glassbox-sim/%s/%d", host, i)
	b := h.Sum(nil)
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// pciBusID follows an HGX board's eight GPU slots.
func pciBusID(i int) string {
	slots := [...]int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	return fmt.Sprintf("00000000:%02X:00.0", slots[i%len(slots)]+i/len(slots))
}

// Package dcgm is glassbox's NVIDIA dcgm-exporter: the DCGM_FI_* series a
// real GPU fleet exports next to vLLM (GPU activity, tensor and memory
// pipes, framebuffer, power, clocks), with dcgm-exporter's names, HELP,
// labels and number format, served on their own listener as
// dcgm-exporter serves them on :9400. It has two sources behind one
// writer (expose.go):
//
//   - Exporter, the simulated GPUs: one series set per tensor-parallel
//     rank, derived step by step from the cost model's counter model
//     (internal/costmodel): the wiring shows it each engine step as a
//     Step.
//   - NVMLExporter, a real GPU: a sampler reads NVML (GPM's profiling
//     metrics on Hopper and later) every interval, through the Device
//     interface declared here; the wiring adapts internal/cuda to it.
//
// It may import the cost model and the profiles; it must not import the
// engine, an executor, server, metrics, tracing or internal/cuda.
package dcgm

import (
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Config describes the simulated GPUs.
type Config struct {
	Hardware profiles.Hardware
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

// Exporter accumulates each step's work per time bucket. Observe runs on
// the engine goroutine and scrapes on HTTP goroutines: mu guards all.
type Exporter struct {
	cfg    Config
	labels []string // per GPU, the label block dcgm-exporter writes

	mu      sync.Mutex
	start   time.Time
	buckets [int(maxWindow / bucketWidth)]bucket
	energy  float64 // joules above idle, accumulated per step
}

// bucket is one bucketWidth of activity, identified by its index since the
// epoch (a stale bucket has an older index and counts as empty). busy is
// seconds; the others are seconds weighted by each step's activity.
type bucket struct {
	index int64
	busy  float64
	act   costmodel.Activity
	io    float64 // PCIe bytes
}

// New builds the exporter; its energy counter starts now ("since boot").
func New(cfg Config) (*Exporter, error) {
	d := cfg.Hardware.Device
	switch {
	case cfg.GPUs < 1:
		return nil, fmt.Errorf("new dcgm exporter: %d GPUs", cfg.GPUs)
	case d.TDPWatts <= 0 || d.FramebufferMiB <= 0 || cfg.Hardware.Calib.Counters.EngineActive <= 0:
		return nil, fmt.Errorf("new dcgm exporter: hardware %s has no device profile", cfg.Hardware.Name)
	}
	if err := CheckInterval(cfg.Window); err != nil {
		return nil, fmt.Errorf("new dcgm exporter: %w", err)
	}
	if cfg.Window == 0 {
		cfg.Window = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Exporter{cfg: cfg, start: cfg.Now()}
	for i := range cfg.GPUs {
		e.labels = append(e.labels, gpuLabels(i, gpuUUID(cfg.Hostname, i), pciBusID(i), i, d.ModelName, cfg.Hostname, DriverVersion))
	}
	return e, nil
}

// Step is what the exporter reads of one engine step: when the GPU began
// executing it and for how long, the tokens it computed and sampled
// (their ids cross PCIe), and the activity the cost model gives its
// kernels (costmodel.Cost's Activity).
type Step struct {
	Start           time.Time
	Busy            time.Duration
	Tokens, Sampled int
	Activity        costmodel.Activity
}

// Observe charges the step's execution, and its kernels' activity, to the
// buckets it spans.
func (e *Exporter) Observe(s Step) {
	busy := s.Busy.Seconds()
	if busy <= 0 {
		return
	}
	a := s.Activity
	// Energy above idle: the kernels' draw, held at the board's limit.
	k, d := &e.cfg.Hardware.Calib.Counters, &e.cfg.Hardware.Device
	energy := min(a.Watts, d.TDPWatts-k.IdleWatts) * busy
	// PCIe: token ids in, sampled ids out, and the step's metadata.
	io := float64(s.Tokens+s.Sampled)*8 + 4096
	from := s.Start
	to := from.Add(s.Busy)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.energy += energy
	for t := from; t.Before(to); {
		idx := t.UnixNano() / int64(bucketWidth)
		end := time.Unix(0, (idx+1)*int64(bucketWidth))
		stop := end
		if to.Before(stop) {
			stop = to
		}
		sec := stop.Sub(t).Seconds()
		b := &e.buckets[idx%int64(len(e.buckets))]
		if b.index != idx {
			*b = bucket{index: idx}
		}
		b.busy += sec
		b.act = addActivity(b.act, a, sec)
		b.io += sec / busy * io
		t = end
	}
}

// addActivity is sum + a×w, field by field.
func addActivity(sum, a costmodel.Activity, w float64) costmodel.Activity {
	return costmodel.Activity{
		EngineActive: sum.EngineActive + a.EngineActive*w, SMActive: sum.SMActive + a.SMActive*w,
		SMOccupancy: sum.SMOccupancy + a.SMOccupancy*w, TensorActive: sum.TensorActive + a.TensorActive*w,
		DRAMActive: sum.DRAMActive + a.DRAMActive*w, Watts: sum.Watts + a.Watts*w,
	}
}

// reading is one GPU's values at a scrape.
type reading struct {
	costmodel.Reading
	energyMJ                   float64
	txBps, rxBps               float64
	memClock, temp, memTemp    int
	fbUsed, fbFree, fbReserved int
}

// read sums the buckets of the last window before now: the whole buckets
// after the one holding now−Window, over the time they cover.
func (e *Exporter) read(now time.Time) reading {
	hw := &e.cfg.Hardware
	d := &hw.Device
	last := now.UnixNano() / int64(bucketWidth)
	first := now.Add(-e.cfg.Window).UnixNano() / int64(bucketWidth)
	w := now.Sub(time.Unix(0, (first+1)*int64(bucketWidth))).Seconds()
	var busy, io float64
	var act costmodel.Activity
	e.mu.Lock()
	for idx := first + 1; idx <= last; idx++ {
		b := &e.buckets[idx%int64(len(e.buckets))]
		if b.index == idx {
			busy, io = busy+b.busy, io+b.io
			act = addActivity(act, b.act, 1)
		}
	}
	energy := e.energy
	e.mu.Unlock()

	mean := costmodel.Activity{}
	if busy > 0 {
		mean = addActivity(mean, act, 1/busy)
	}
	r := reading{Reading: costmodel.Steady(hw, busy/w, mean)}
	idle := hw.Calib.Counters.IdleWatts
	r.energyMJ = (idle*now.Sub(e.start).Seconds() + energy) * 1e3
	r.txBps, r.rxBps = 100_000+io/2/w, 20_000+io/2/w
	heat := (r.Watts - idle) / (d.TDPWatts - idle)
	r.temp = int(math.Round(40 + 28*heat)) // 40 °C idle to 68 °C at the limit, as the H200 measured
	if d.HBM {
		r.memTemp = r.temp + 8
	}
	r.memClock = d.MemClockMHz
	r.fbReserved = d.ReservedMiB
	r.fbUsed = int(math.Round(e.cfg.GPUMemoryUtilization * float64(d.FramebufferMiB)))
	r.fbFree = max(d.FramebufferMiB-r.fbUsed-r.fbReserved, 0)
	return r
}

// CheckInterval refuses a sampling interval (an averaging window) outside
// [100 ms, 1 min]; 0 stands for the default. The simulated readings are
// kept in buckets of 100 ms, so a shorter window could cover none; GPM
// wants its samples at least 100 ms apart.
func CheckInterval(d time.Duration) error {
	if d != 0 && (d < bucketWidth || d > maxWindow) {
		return fmt.Errorf("interval %v is not within [%v, %v]", d, bucketWidth, maxWindow)
	}
	return nil
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

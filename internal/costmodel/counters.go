package costmodel

import (
	"math"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// Activity is what a GPU's activity counters (DCGM's profiling fields)
// average over a step while its kernels run: the shares of the time its
// graphics engine, SMs, tensor pipes and DRAM were busy, the SMs' mean
// occupancy, and the watts above idle the kernels draw at the boost
// clock. The engine carries the same fields as engine.GPUActivity, which
// the simulated executor converts this to (and the wiring back, for the
// simulated dcgm-exporter): the two types must keep the same fields.
type Activity struct {
	EngineActive, SMActive, SMOccupancy, TensorActive, DRAMActive float64
	Watts                                                         float64
}

// activity is what the GPU's activity counters read while the step's
// kernels run (the profile's Counters): each family's SM activity and occupancy
// weighted by its time, the tensor pipe's padded busy time, the DRAM
// traffic over the counter's full-scale bandwidth, the graphics engine's
// share, and the power those draw above idle at the boost clock. Where
// the profile has no counter relationships (Counters.EngineActive 0) it
// reads nothing.
func (cm *Model) activity(c *Cost, g *gemmWork, decodeAttn, prefillAttn time.Duration, elementwise, decodeFLOPs, prefillFLOPs float64) Activity {
	k := &cm.HW.Calib.Counters
	d := c.Duration.Seconds()
	if k.EngineActive == 0 || d <= 0 {
		return Activity{}
	}
	gemm := c.GEMM.Seconds()
	t := profiles.Families{
		Read:             gemm * (1 - g.compute),
		Compute:          gemm * g.compute,
		DecodeAttention:  decodeAttn.Seconds(),
		PrefillAttention: prefillAttn.Seconds(),
	}
	t.Other = max(d-t.Read-t.Compute-t.DecodeAttention-t.PrefillAttention, 0)
	weigh := func(f *profiles.Families) float64 {
		return (t.Read*f.Read + t.Compute*f.Compute + t.DecodeAttention*f.DecodeAttention +
			t.PrefillAttention*f.PrefillAttention + t.Other*f.Other) / d
	}
	a := Activity{
		EngineActive: k.EngineActive,
		SMActive:     min(weigh(&k.SMActive), 1),
		SMOccupancy:  min(weigh(&k.SMOccupancy), 1),
		TensorActive: min((g.tensor+(decodeFLOPs*k.TensorDecodeAttentionFactor+prefillFLOPs)/cm.HW.PeakFLOPs)/d, 1),
	}
	if k.DRAMBandwidth > 0 {
		traffic := c.ReadBytes + c.WriteBytes + elementwise + k.DRAMBytesPerFLOP*g.flops
		a.DRAMActive = min(traffic/(k.DRAMBandwidth*d), 1)
	}
	a.Watts = k.DRAMWatts*a.DRAMActive + k.TensorWatts*a.TensorActive + k.SMWatts*a.SMActive
	return a
}

// Reading is what dcgm-exporter shows of one GPU over a window: the
// profiling fields as ratios, NVML's utilisations in percent, the board's
// power and the SM clock.
type Reading struct {
	EngineActive, SMActive, SMOccupancy, TensorActive, DRAMActive float64
	GPUUtil, CopyUtil                                             float64 // %
	Watts                                                         float64
	SMClockMHz                                                    float64
	// Capped says the board sat at its power limit, the SM clock below
	// boost.
	Capped bool
}

// Steady is the reading of a window in which the GPU had work a share
// busy of the time and its kernels' activity averaged a while they ran.
// Power above idle is the kernels' demand over the window; past the
// board's limit the board holds the limit and the SM clock falls to
// boost × (available / demanded)^ClockExponent. NVML's GPU utilisation
// is the share of the window with a kernel running: 100 under any load
// that keeps the GPU fed, whatever the kernels do.
func Steady(hw *profiles.Hardware, busy float64, a Activity) Reading {
	k, d := &hw.Calib.Counters, &hw.Device
	busy = min(max(busy, 0), 1)
	r := Reading{
		EngineActive: busy * a.EngineActive, SMActive: busy * a.SMActive, SMOccupancy: busy * a.SMOccupancy,
		TensorActive: busy * a.TensorActive, DRAMActive: busy * a.DRAMActive,
		GPUUtil: math.Round(100 * busy), Watts: k.IdleWatts, SMClockMHz: float64(d.IdleSMClockMHz),
	}
	r.CopyUtil = math.Round(min(100, 100*k.CopyUtilPerDRAM*r.DRAMActive))
	if busy == 0 {
		return r
	}
	r.SMClockMHz = float64(d.SMClockMHz)
	demand, room := busy*a.Watts, d.TDPWatts-k.IdleWatts
	r.Watts += min(demand, room)
	if demand > room && room > 0 {
		r.Capped = true
		r.SMClockMHz *= math.Pow(room/demand, k.ClockExponent)
	}
	return r
}

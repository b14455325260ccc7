package calibrate

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// fitCounters fits the counter relationships (profiles.Counters) to the
// probe's loads: the graphics engine's share while busy and the power
// and clock relations from every load (they are the board's physics,
// whatever ran); the SM activity and occupancy of each kernel family,
// the tensor pipe's padding and the DRAM traffic from the fused loads,
// whose composition the fitted step model breaks into families.
func (f *ProbeFit) fitCounters(p *Probe) error {
	hw := &f.Hardware
	if len(p.Loads) == 0 {
		return nil // the profile's counters stay as they were
	}
	hw.Calib.Counters = counterStart(hw)
	k := &hw.Calib.Counters
	var gr []float64
	for _, l := range p.Loads {
		if l.Busy >= 0.5 {
			gr = append(gr, l.Graphics/l.Busy)
		}
	}
	if len(gr) > 0 {
		k.EngineActive = median(gr)
	}
	if len(p.Idle) > 0 {
		k.IdleWatts = median(p.Idle)
	}
	var fused []ProbeLoad
	for _, l := range p.Loads {
		if l.Fused {
			fused = append(fused, l)
		}
	}
	var known []ProbeLoad
	for _, l := range p.Loads {
		if l.StepMS > 0 && l.Tensor > 0 {
			known = append(known, l)
		}
	}
	f.fitActivity(fused, known)
	var copyUtil []float64
	for _, l := range p.Loads {
		if l.DRAM > 0.1 && l.CopyUtil > 0 {
			copyUtil = append(copyUtil, l.CopyUtil/(100*l.DRAM))
		}
	}
	if len(copyUtil) > 0 {
		k.CopyUtilPerDRAM = median(copyUtil)
	}
	f.fitPower(p.Loads)
	for _, l := range fused {
		f.Loads = append(f.Loads, LoadCheck{ProbeLoad: l, Predicted: costmodel.Steady(hw, l.Busy, f.activity(&l))})
	}
	return nil
}

// counterStart is where every counter fit starts, and what its terms are
// drawn towards where the loads cannot tell them apart: round numbers of
// a GPU whose memory-bound kernels keep about half its SMs busy and whose
// GEMMs keep most of them.
func counterStart(hw *profiles.Hardware) profiles.Counters {
	return profiles.Counters{EngineActive: 0.9,
		SMActive:        profiles.Families{Read: 0.6, Compute: 0.9, DecodeAttention: 0.85, PrefillAttention: 0.85, Other: 0.3},
		SMOccupancy:     profiles.Families{Read: 0.08, Compute: 0.25, DecodeAttention: 0.12, PrefillAttention: 0.2, Other: 0.05},
		TensorPadTokens: 8, TensorSmallFactor: 3, TensorLargeFactor: 1, TensorKneeTokens: 384,
		DRAMBandwidth: hw.MemBandwidth, DRAMBytesPerFLOP: 1e-3, CopyUtilPerDRAM: 1.4,
		IdleWatts: hw.Calib.Counters.IdleWatts, DRAMWatts: 250, TensorWatts: 1000, SMWatts: 250, ClockExponent: 0.5}
}

// activity is the fitted simulated GPU's activity on a load's step.
func (f *ProbeFit) activity(l *ProbeLoad) costmodel.Activity {
	cm := costmodel.Model{HW: f.Hardware, Model: f.Model, TP: 1}
	return cm.Step(probeStepBatch(l.B, l.Ctx, l.N, 0)).Activity
}

// fitActivity fits the per-family SM activity and occupancy and the
// DRAM traffic's terms to the fused loads' readings over their busy share
// (each family's values drawn gently towards the profile's, which few
// loads cannot all tell apart), and the tensor pipe's terms to every
// load's tensor-busy time per step: the GEMMs and attention alone set it,
// so eager loads count too.
func (f *ProbeFit) fitActivity(fused, all []ProbeLoad) {
	k := &f.Hardware.Calib.Counters
	if k.EngineActive == 0 {
		k.EngineActive = 1 // activity is computed only with the engine on
	}
	fit := func(loss func() float64, set func([]float64), x0 []float64, prior float64) {
		set(minimize(func(x []float64) float64 {
			set(x)
			var pen float64
			for i := range x {
				pen += (x[i] - x0[i]) * (x[i] - x0[i])
			}
			return loss() + prior*pen
		}, x0, 0.5, 3000))
	}
	against := func(get func(*costmodel.Activity) float64, want func(*ProbeLoad) float64) func() float64 {
		return func() float64 {
			var s float64
			for i := range fused {
				a := f.activity(&fused[i])
				e := get(&a) - want(&fused[i])/fused[i].Busy
				s += e * e
			}
			return s
		}
	}
	unit := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	logit := func(p float64) float64 { p = min(max(p, 0.01), 0.99); return math.Log(p / (1 - p)) }
	families := func(fm *profiles.Families) (func([]float64), []float64) {
		return func(x []float64) {
			*fm = profiles.Families{Read: unit(x[0]), Compute: unit(x[1]), DecodeAttention: unit(x[2]), PrefillAttention: unit(x[3]), Other: unit(x[4])}
		}, []float64{logit(fm.Read), logit(fm.Compute), logit(fm.DecodeAttention), logit(fm.PrefillAttention), logit(fm.Other)}
	}
	const prior = 1e-3
	if len(fused) > 0 {
		set, x0 := families(&k.SMActive)
		fit(against(func(a *costmodel.Activity) float64 { return a.SMActive }, func(l *ProbeLoad) float64 { return l.SMActive }), set, x0, prior)
		set, x0 = families(&k.SMOccupancy)
		fit(against(func(a *costmodel.Activity) float64 { return a.SMOccupancy }, func(l *ProbeLoad) float64 { return l.SMOccupancy }), set, x0, prior)
		fit(against(func(a *costmodel.Activity) float64 { return a.DRAMActive }, func(l *ProbeLoad) float64 { return l.DRAM }),
			func(x []float64) { k.DRAMBandwidth, k.DRAMBytesPerFLOP = math.Exp(x[0]), math.Exp(x[1]) },
			[]float64{math.Log(max(k.DRAMBandwidth, f.Hardware.MemBandwidth)), math.Log(max(k.DRAMBytesPerFLOP, 1e-5))}, 0)
	}
	// Tensor-busy milliseconds per step, measured and simulated.
	tensorLoss := func() float64 {
		var s float64
		for i := range all {
			l := &all[i]
			cm := costmodel.Model{HW: f.Hardware, Model: f.Model, TP: 1}
			c := cm.Step(probeStepBatch(l.B, l.Ctx, l.N, 0))
			got, want := c.Activity.TensorActive*c.Duration.Seconds()*1e3, l.Tensor/l.Busy*l.StepMS
			e := got/want - 1
			s += e * e
		}
		return s
	}
	fit(tensorLoss, func(x []float64) {
		k.TensorPadTokens, k.TensorSmallFactor, k.TensorLargeFactor, k.TensorKneeTokens = 1+math.Exp(x[0]), 1+math.Exp(x[1]), math.Exp(x[2]), math.Exp(x[3])
		k.TensorDecodeAttentionFactor = math.Exp(x[4])
	}, []float64{math.Log(max(k.TensorPadTokens-1, 0.1)), math.Log(max(k.TensorSmallFactor-1, 0.1)), math.Log(max(k.TensorLargeFactor, 0.5)),
		math.Log(max(k.TensorKneeTokens, 64)), math.Log(max(k.TensorDecodeAttentionFactor, 1))}, prior)
}

// fitPower fits the watts above idle per unit of DRAM, tensor and SM
// activity, and the clock's fall with the demand past the board's limit:
// below the limit to the power read, at it to the clock read. Loads from
// a run of host gaps are left out (Gaps).
func (f *ProbeFit) fitPower(loads []ProbeLoad) {
	hw := &f.Hardware
	k, d := &hw.Calib.Counters, &hw.Device
	var rows []ProbeLoad
	for _, l := range loads {
		if !l.Gaps && l.Watts > 0 {
			rows = append(rows, l)
		}
	}
	if len(rows) < 4 {
		return
	}
	room := d.TDPWatts - k.IdleWatts
	loss := func(x []float64) float64 {
		a, b, c, g := math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[2]), math.Exp(x[3])
		var s float64
		for _, l := range rows {
			demand := a*l.DRAM + b*l.Tensor + c*l.SMActive
			e := (k.IdleWatts+min(demand, room))/l.Watts - 1
			s += e * e
			if l.SMClockMHz > 0 {
				clock := float64(d.SMClockMHz)
				if demand > room {
					clock *= math.Pow(room/demand, g)
				}
				e = clock/l.SMClockMHz - 1
				s += e * e
			}
		}
		return s
	}
	x := minimize(loss, []float64{math.Log(max(k.DRAMWatts, 50)), math.Log(max(k.TensorWatts, 50)), math.Log(max(k.SMWatts, 50)),
		math.Log(max(k.ClockExponent, 0.1))}, 0.5, 4000)
	k.DRAMWatts, k.TensorWatts, k.SMWatts, k.ClockExponent = math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[2]), math.Exp(x[3])
}

// String is the load's counters, measured/simulated.
func (l *LoadCheck) String() string {
	return fmt.Sprintf("%s: GR %.2f/%.2f SM %.2f/%.2f occ %.2f/%.2f tensor %.2f/%.2f DRAM %.2f/%.2f %.0f/%.0f W %.0f/%.0f MHz",
		l.Label, l.Graphics, l.Predicted.EngineActive, l.SMActive, l.Predicted.SMActive, l.SMOccupancy, l.Predicted.SMOccupancy,
		l.Tensor, l.Predicted.TensorActive, l.DRAM, l.Predicted.DRAMActive, l.Watts, l.Predicted.Watts, l.SMClockMHz, l.Predicted.SMClockMHz)
}

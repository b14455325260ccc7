package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// ProbeFit is a hardware profile fitted to a GPU probe's measurements,
// with how well it reproduces each of them.
type ProbeFit struct {
	Hardware profiles.Hardware // the profile it started from, with Calib the fit
	Model    profiles.Model    // the shape whose steps were measured
	Steps    []StepCheck
	Loads    []LoadCheck
	// Burst and BurstFP8 are the GEMMs alone (short runs on a cool GPU):
	// reported beside the sustained rate the steps give, not used.
	Burst, BurstFP8 *GEMMFit
	// ContextFrom says where the attention to a chunk's cached context
	// was measured.
	ContextFrom string
	// SustainedClock is the SM clock of a long prefill over the boost
	// clock (0 where no load was a long prefill).
	SustainedClock float64
}

// StepCheck is one measured step against the fitted profile.
type StepCheck struct {
	ProbeStep
	PredictedMS float64
}

// Err is the prediction's relative error.
func (s *StepCheck) Err() float64 { return s.PredictedMS/s.MS - 1 }

// LoadCheck is one counter load against what the fitted profile's
// simulated GPU reads for it.
type LoadCheck struct {
	ProbeLoad
	Predicted costmodel.Reading
}

// GEMMFit is the GEMM terms fitted to projections timed alone.
type GEMMFit struct {
	DType            string
	Efficiency       float64 // of the dtype's peak
	WeightLoadFactor float64
	Overlap          float64
	Latency          time.Duration
	Rows             int
	MeanAbsErr       float64
}

// probeStepBatch is a step composition as the cost model reads it: B
// sequences each decoding their Ctx-th token (attending to Ctx keys) and
// a chunk of N prompt tokens at Pos; every sequence samples.
func probeStepBatch(b, ctx, n, pos int) []costmodel.Seq {
	bt := make([]costmodel.Seq, 0, b+1)
	for range b {
		bt = append(bt, costmodel.Seq{Tokens: 1, Pos: ctx - 1, NumPrompt: 1, Sample: true})
	}
	if n > 0 {
		bt = append(bt, costmodel.Seq{Tokens: n, Pos: pos, NumPrompt: pos + n, Sample: true})
	}
	return bt
}

// stepTerms are the step-time terms the fit moves, in the order of its
// vector (each fitted as a logarithm, so every one stays positive; the
// overlap as log(p − 1), so that p > 1).
var stepTerms = []string{"weight_load_factor", "gemm_kernel_latency", "gemm_overlap", "gemm_efficiency",
	"attention_efficiency", "activation_passes", "layer_overhead", "step_overhead", "request_overhead",
	"kv_read_factor", "context_attention_efficiency"}

func stepVector(c profiles.Calibration) []float64 {
	return []float64{math.Log(c.WeightLoadFactor), math.Log(c.GEMMKernelLatency.Seconds()), math.Log(c.GEMMOverlap - 1),
		math.Log(c.GEMMEfficiency), math.Log(c.AttentionEfficiency), math.Log(c.ActivationPasses),
		math.Log(c.LayerOverhead.Seconds()), math.Log(c.StepOverhead.Seconds()), math.Log(c.RequestOverhead.Seconds()),
		math.Log(c.KVReadFactor), math.Log(c.ContextAttentionEfficiency)}
}

func withStepVector(c profiles.Calibration, v []float64) profiles.Calibration {
	d := func(x float64) time.Duration { return time.Duration(math.Round(math.Exp(x) * 1e9)) }
	c.WeightLoadFactor, c.GEMMKernelLatency, c.GEMMOverlap = math.Exp(v[0]), d(v[1]), 1+math.Exp(v[2])
	c.GEMMEfficiency, c.AttentionEfficiency, c.ActivationPasses = math.Exp(v[3]), math.Exp(v[4]), math.Exp(v[5])
	c.LayerOverhead, c.StepOverhead, c.RequestOverhead = d(v[6]), d(v[7]), d(v[8])
	c.KVReadFactor, c.ContextAttentionEfficiency = math.Exp(v[9]), math.Exp(v[10])
	return c
}

// stepStart is where every fit starts: round numbers of a Hopper GPU.
func stepStart(c profiles.Calibration) profiles.Calibration {
	c.WeightLoadFactor, c.GEMMKernelLatency, c.GEMMOverlap, c.GEMMEfficiency = 1.2, 2*time.Microsecond, 2.3, 0.6
	c.AttentionEfficiency, c.ContextAttentionEfficiency, c.ActivationPasses = 0.45, 0.45, 10
	c.LayerOverhead, c.StepOverhead, c.RequestOverhead = 15*time.Microsecond, 200*time.Microsecond, 3*time.Microsecond
	c.KVReadFactor = 1.15
	return c
}

// FitProbe fits hw's step-time terms to the probe's fused steps of one
// model shape (the first known shape among them), its GEMM terms alone to
// the GEMMs timed alone (reported, and the source of the FP8 terms), and
// its counter relationships to the loads. The KV read factor comes from
// the fastest decode attention kernel the probe timed alone, where it
// timed one; the attention to a chunk's cached context from fused chunks
// after context, else from pairs of eager steps that differ only in it.
func FitProbe(p *Probe, hw profiles.Hardware) (*ProbeFit, error) {
	var steps []ProbeStep
	var model profiles.Model
	for _, s := range p.Steps {
		if !s.Fused {
			continue
		}
		if model.Name == "" {
			m, err := profiles.LookupModel(s.Model)
			if err != nil {
				continue
			}
			model = m
		}
		if s.Model == model.Name {
			steps = append(steps, s)
		}
	}
	if len(steps) < 8 {
		return nil, fmt.Errorf("fit probe: %d fused steps of a known model; the fit needs at least 8 (run the probe's steps section)", len(steps))
	}
	f := &ProbeFit{Hardware: hw, Model: model}
	cal := stepStart(hw.Calib)
	fixed := map[int]bool{}
	// The GEMMs' read and its overlap with the arithmetic are the GEMMs
	// alone's: the steps, whose GEMMs all see the same tokens, cannot
	// tell them from the elementwise and fixed terms. Their arithmetic's
	// rate is the steps': sustained at the board's power limit, where the
	// GEMMs alone ran in bursts on a cool GPU.
	f.Burst, _ = fitGEMMs(p, "bf16", hw.PeakFLOPs, hw.MemBandwidth, 0)
	if g := f.Burst; g != nil {
		cal.WeightLoadFactor, cal.GEMMKernelLatency, cal.GEMMOverlap = g.WeightLoadFactor, g.Latency, g.Overlap
		fixed[0], fixed[1], fixed[2] = true, true, true
		// At the limit the SM clock falls and the arithmetic with it: the
		// sustained rate is the bursts' at the clock of a long prefill
		// (the steps alone cannot tell it from the elementwise traffic,
		// which also grows with the tokens).
		if r, ok := sustainedClock(p, &hw); ok {
			cal.GEMMEfficiency, fixed[3] = g.Efficiency*r, true
			f.SustainedClock = r
		}
	}
	// The attention kernels alone set their rates where the probe timed
	// them: the steps alone cannot tell a chunk's quadratic attention from
	// its linear terms.
	// Decode's KV read is the steps' own where they read a lot of it
	// (16 GB: then the read, not the kernels' latency, sets its time).
	longKV := slices.ContainsFunc(steps, func(s ProbeStep) bool {
		return float64(s.B)*float64(s.Ctx)*float64(model.KVBytesPerToken(1)) >= 16e9
	})
	if kv, ok := kvReadFactor(p, &model, hw.MemBandwidth); ok && !longKV {
		cal.KVReadFactor, fixed[9] = kv, true
	}
	if eff, ok := prefillAttentionEfficiency(p, &model, hw.PeakFLOPs); ok {
		cal.AttentionEfficiency, fixed[4] = eff, true
	}
	// Without a chunk after context among the steps, its rate comes from
	// elsewhere, or is the causal rate (tie).
	tie := false
	f.ContextFrom = "fused steps of chunks after context"
	if !slices.ContainsFunc(steps, func(s ProbeStep) bool { return s.Pos > 0 }) {
		fixed[10] = true
		if eff, ok := contextEfficiency(p, &model, hw.PeakFLOPs); ok {
			cal.ContextAttentionEfficiency = eff
			f.ContextFrom = "eager steps that differ only in the chunk's cached context"
		} else {
			tie = true
			f.ContextFrom = "not measured: the causal rate"
		}
	}
	price := func(c profiles.Calibration, s *ProbeStep) float64 {
		h := hw
		h.Calib = c
		if tie {
			h.Calib.ContextAttentionEfficiency = h.Calib.AttentionEfficiency
		}
		cm := costmodel.Model{HW: h, Model: model, TP: 1}
		return cm.Step(probeStepBatch(s.B, s.Ctx, s.N, s.Pos)).Duration.Seconds() * 1e3
	}
	x0 := stepVector(cal)
	var free []int
	for i := range x0 {
		if !fixed[i] {
			free = append(free, i)
		}
	}
	vec := func(y []float64) []float64 {
		x := slices.Clone(x0)
		for j, i := range free {
			x[i] = y[j]
		}
		return x
	}
	loss := func(y []float64) float64 {
		c := withStepVector(cal, vec(y))
		var sum float64
		for i := range steps {
			e := price(c, &steps[i])/steps[i].MS - 1
			sum += e * e
		}
		return sum
	}
	y0 := make([]float64, len(free))
	for j, i := range free {
		y0[j] = x0[i]
	}
	cal = withStepVector(cal, vec(minimize(loss, y0, 0.2, 4000)))
	if tie {
		cal.ContextAttentionEfficiency = cal.AttentionEfficiency
	}
	f.Hardware.Calib = cal
	for i := range steps {
		f.Steps = append(f.Steps, StepCheck{ProbeStep: steps[i], PredictedMS: price(f.Hardware.Calib, &steps[i])})
	}

	if hw.PeakFP8FLOPs > 0 && f.Burst != nil {
		if f.BurstFP8, _ = fitGEMMs(p, "fp8", hw.PeakFP8FLOPs, hw.MemBandwidth, f.Burst.Overlap); f.BurstFP8 != nil {
			// The FP8 GEMMs were timed alone, in bursts: they sustain the
			// share of that the BF16 steps sustain of the BF16 bursts.
			f.Hardware.Calib.FP8 = &profiles.FP8Calibration{
				GEMMEfficiency:    f.BurstFP8.Efficiency * cal.GEMMEfficiency / f.Burst.Efficiency,
				WeightLoadFactor:  f.BurstFP8.WeightLoadFactor,
				GEMMKernelLatency: f.BurstFP8.Latency,
			}
		}
	}
	if err := f.fitCounters(p); err != nil {
		return nil, err
	}
	return f, nil
}

// sustainedClock is the SM clock under the heaviest sustained arithmetic
// the probe ran (prefills of at least 2048 tokens back to back) over the
// boost clock.
func sustainedClock(p *Probe, hw *profiles.Hardware) (float64, bool) {
	var r []float64
	for _, l := range p.Loads {
		if !l.Gaps && l.B == 0 && l.N >= 2048 && l.SMClockMHz > 0 && l.Busy >= 0.95 {
			r = append(r, l.SMClockMHz/float64(hw.Device.SMClockMHz))
		}
	}
	if len(r) == 0 {
		return 0, false
	}
	return min(mean(r), 1), true
}

// kvReadFactor is the memory bandwidth over the fastest decode attention
// read the probe timed alone, among shapes whose KV is at least 4 GB
// (smaller ones are bound by the kernels' latency, which the steps fit).
func kvReadFactor(p *Probe, m *profiles.Model, bw float64) (float64, bool) {
	best := 0.0
	for _, a := range p.Decode {
		kv := float64(a.B) * float64(a.Ctx) * float64(m.KVBytesPerToken(1))
		if kv >= 4e9 {
			best = max(best, kv/(a.MS/1e3))
		}
	}
	if best == 0 {
		return 0, false
	}
	return max(1, bw/best), true
}

// prefillAttentionEfficiency is the rate of the longest causal prefill
// attention the probe timed alone, as a share of peak.
func prefillAttentionEfficiency(p *Probe, m *profiles.Model, peak float64) (float64, bool) {
	var longest ProbeAttention
	for _, a := range p.Prefill {
		if a.N > longest.N {
			longest = a
		}
	}
	if longest.N < 2048 {
		return 0, false
	}
	n := float64(longest.N)
	flops := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim) * n * (n + 1) / 2
	return flops / (longest.MS / 1e3) / peak, true
}

// contextEfficiency is the rate of a chunk's attention to its cached
// context, from eager steps of the model with the same chunk at position
// 0 and after context: their difference is that attention alone.
func contextEfficiency(p *Probe, m *profiles.Model, peak float64) (float64, bool) {
	at0 := map[int]float64{}
	for _, s := range p.Steps {
		if !s.Fused && s.Model == m.Name && s.B == 0 && s.Pos == 0 {
			at0[s.N] = s.MS
		}
	}
	pair := 4 * float64(m.Layers) * float64(m.Heads) * float64(m.HeadDim)
	var rates []float64
	for _, s := range p.Steps {
		if base, ok := at0[s.N]; ok && !s.Fused && s.Model == m.Name && s.B == 0 && s.Pos > 0 && s.MS > base {
			rates = append(rates, pair*float64(s.N)*float64(s.Pos)/((s.MS-base)/1e3))
		}
	}
	if len(rates) == 0 {
		return 0, false
	}
	return mean(rates) / peak, true
}

// fitGEMMs fits one dtype's GEMMs alone: each is (read^p + arith^p)^(1/p),
// the read of its weights at a load factor plus a latency, the arithmetic
// at an efficiency of peak; overlap 0 fits p too.
func fitGEMMs(p *Probe, dtype string, peak, bw, overlap float64) (*GEMMFit, error) {
	var rows []ProbeGEMM
	for _, g := range p.GEMMs {
		if g.DType == dtype {
			rows = append(rows, g)
		}
	}
	if len(rows) < 6 {
		return nil, errors.New("fit gemms: too few rows")
	}
	bytesPer := 2.0
	if dtype == "fp8" {
		bytesPer = 1
	}
	model := func(x []float64, g *ProbeGEMM) float64 {
		wlf, lat, eff, pp := 1+math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[2]), overlap
		if overlap == 0 {
			pp = 1 + math.Exp(x[3])
		}
		read := float64(g.N)*float64(g.K)*bytesPer*wlf/bw + lat
		arith := 2 * float64(g.M) * float64(g.N) * float64(g.K) / (peak * eff)
		return math.Pow(math.Pow(read, pp)+math.Pow(arith, pp), 1/pp) * 1e3
	}
	loss := func(x []float64) float64 {
		var s float64
		for i := range rows {
			e := model(x, &rows[i])/rows[i].MS - 1
			s += e * e
		}
		return s
	}
	x0 := []float64{math.Log(0.2), math.Log(3e-6), math.Log(0.8)}
	if overlap == 0 {
		x0 = append(x0, math.Log(1.3))
	}
	x := minimize(loss, x0, 0.2, 3000)
	fit := &GEMMFit{DType: dtype, WeightLoadFactor: 1 + math.Exp(x[0]), Latency: time.Duration(math.Exp(x[1]) * 1e9),
		Efficiency: math.Exp(x[2]), Overlap: overlap, Rows: len(rows)}
	if overlap == 0 {
		fit.Overlap = 1 + math.Exp(x[3])
	}
	var errs []float64
	for i := range rows {
		errs = append(errs, math.Abs(model(x, &rows[i])/rows[i].MS-1))
	}
	fit.MeanAbsErr = mean(errs)
	return fit, nil
}

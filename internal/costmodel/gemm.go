package costmodel

import (
	"math"
	"time"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// gemmWork is a step's GEMMs: their time, work and traffic per GPU, and
// the shares of the time that stream weights and that compute.
type gemmWork struct {
	time        time.Duration
	memoryBound bool
	flops       float64 // per GPU
	bytes       float64 // weights read, per GPU
	compute     float64 // of time, the arithmetic-bound share
	tensor      float64 // seconds the tensor pipe counts busy
	experts     time.Duration
}

// gemmGroup is GEMMs of one kind on each GPU: the weights they read, the
// FLOPs they do and those the arithmetic runs (tiles' padding included),
// the rows each multiplies (for the tensor pipe's padding), and the terms
// of their weights' format: peak FLOP/s, achieved share, read factor,
// latency a GEMM and how many GEMMs.
type gemmGroup struct {
	bytes, flops, padded, rows  float64
	raw, eff, wlf, lat, kernels float64
}

// rate is a format's GEMM terms: FP8 tensor cores for W8A8 where the GPU
// has measured FP8 GEMMs, else the activations' type (weight-only
// formats, and FP8 checkpoints on GPUs without FP8, are widened on the
// fly, as vLLM's Marlin kernels do).
func (cm *Model) rate(f profiles.Format) (raw, eff, wlf, lat float64) {
	hw, cal := &cm.HW, &cm.HW.Calib
	if f.FP8 && hw.PeakFP8FLOPs > 0 && cal.FP8 != nil {
		return hw.PeakFP8FLOPs, cal.FP8.GEMMEfficiency, cal.FP8.WeightLoadFactor, cal.FP8.GEMMKernelLatency.Seconds()
	}
	return hw.PeakFLOPs, cal.GEMMEfficiency, cal.WeightLoadFactor, cal.GEMMKernelLatency.Seconds()
}

// gemms prices the step's GEMMs: the layers' on every token (the
// attention projections and the dense MLPs, shared experts and routers,
// one group where their formats run alike), the routed experts' on the
// tokens routed to them (moe.go), the LM head's on the sampled rows.
func (cm *Model) gemms(tokens, sampled int, ex *expertWork) gemmWork {
	m, hw, cal := &cm.Model, &cm.HW, &cm.HW.Calib
	tp := float64(max(1, cm.TP))
	t, layers := float64(tokens), float64(m.Layers)
	var groups [4]gemmGroup
	n := 0
	add := func(params, replicated float64, f profiles.Format, kernels float64) {
		p := (params-replicated)/tp + replicated
		g := gemmGroup{bytes: p * f.Bytes, flops: 2 * p * t, rows: t, kernels: kernels}
		g.padded = g.flops
		g.raw, g.eff, g.wlf, g.lat = cm.rate(f)
		groups[n] = g
		n++
	}
	// Two GEMMs of attention a layer (fused QKV, O; MLA's four), two of a
	// dense MLP or shared expert (fused gate/up, down), a router's one.
	attnK, mlpK := 2*layers, 2*layers
	if m.MLA != nil {
		attnK = 4 * layers
	}
	if e := m.MoE; e != nil {
		mlpK = 2*(layers-float64(e.Layers)) + float64(e.Layers)
		if e.SharedIntermediate > 0 {
			mlpK += 2 * float64(e.Layers)
		}
	}
	af, mf := m.Format(m.Weights.Attention), m.Format(m.Weights.MLP)
	if af.Bytes == mf.Bytes && af.FP8 == mf.FP8 {
		add(m.MatmulParams(), m.ReplicatedAttention+m.ReplicatedMLP, af, attnK+mlpK)
	} else {
		add(m.AttentionParams, m.ReplicatedAttention, af, attnK)
		add(m.MLPParams(), m.ReplicatedMLP, mf, mlpK)
	}
	expertGroup := -1
	if ex != nil && ex.group.flops > 0 {
		expertGroup = n
		groups[n] = ex.group
		n++
	}
	if sampled > 0 {
		// The LM head stays in the activations' type (vLLM's fp8 leaves it).
		h := m.HeadParams() / tp
		g := gemmGroup{bytes: h * m.BytesPerParam, flops: 2 * h * float64(sampled), rows: float64(sampled), kernels: 1}
		g.padded = g.flops
		g.raw, g.eff, g.wlf, g.lat = cm.rate(profiles.Format{})
		groups[n] = g
		n++
	}
	var w gemmWork
	tc := &cal.Counters
	for _, g := range groups[:n] {
		w.flops += g.flops
		w.bytes += g.bytes
		// The tensor pipe's busy time: padded tiles at the peak rate.
		w.tensor += g.flops * tc.TensorFactor(g.rows) / g.raw
	}
	bw := hw.MemBandwidth
	if p := cal.GEMMOverlap; p > 1 {
		// Each group's read (with its GEMMs' latency) and arithmetic
		// overlap as an L^p norm; the groups run one after another.
		var total, comp float64
		for i, g := range groups[:n] {
			if g.bytes == 0 {
				continue
			}
			read := g.bytes*g.wlf/bw + g.kernels*g.lat
			arith := g.padded / (g.raw * g.eff)
			rp, ap := math.Pow(read, p), math.Pow(arith, p)
			gt := math.Pow(rp+ap, 1/p)
			total += gt
			comp += gt * ap / (rp + ap)
			if i == expertGroup {
				w.experts = seconds(gt)
			}
		}
		w.time, w.compute = seconds(total), comp/total
		w.memoryBound = w.compute < 0.5
		return w
	}
	// The slower of the weights' read at its factor and the ideal read
	// plus the arithmetic, over the step's GEMMs together.
	var read, compute float64
	for _, g := range groups[:n] {
		read += g.bytes * g.wlf / bw
		compute += g.padded / (g.raw * g.eff)
	}
	arith := w.bytes/bw + compute
	w.time, w.memoryBound = seconds(max(read, arith)), read >= arith
	if !w.memoryBound {
		w.compute = compute / arith
	}
	if expertGroup >= 0 {
		g := &groups[expertGroup]
		share := g.bytes * g.wlf / bw / read
		if !w.memoryBound {
			share = (g.bytes/bw + g.padded/(g.raw*g.eff)) / arith
		}
		w.experts = seconds(w.time.Seconds() * share)
	}
	return w
}

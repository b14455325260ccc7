package costmodel

import (
	"math"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// expertWork is a step's routed experts on the GPU that sets the pace:
// the experts a MoE layer reads weights of (all of them over every GPU,
// and on this one), the (token, expert) pairs it computes a layer and the
// tokens each touched expert sees, the imbalance its experts' share of
// the tokens carries, their GEMMs over all MoE layers as one group, the
// gathered and scattered activations, and expert parallelism's exchange
// of tokens between data-parallel ranks.
type expertWork struct {
	touched, local, pairs, perExpert, imbalance float64
	group                                       gemmGroup
	activations                                 float64 // bytes
	exchange                                    float64 // seconds
}

// moeTerms is the profile's MoE terms, a term left 0 (a profile file
// that predates them) taking the neutral value: a dense GEMM's rate and
// read, uniform routing.
func moeTerms(c profiles.MoECalibration) profiles.MoECalibration {
	if c.GEMMEfficiency <= 0 {
		c.GEMMEfficiency = 1
	}
	if c.ReadFactor <= 0 {
		c.ReadFactor = 1
	}
	c.Imbalance = min(max(c.Imbalance, 1), 2)
	return c
}

// experts prices the routed experts of a step of tokens tokens. Each
// token goes to TopK of the Experts; the GEMMs read the weights of the
// experts at least one token reached (touched) and run a grouped GEMM in
// which each expert multiplies its own tokens in tiles of 16, 32 or 64
// tokens, a partial tile costing a whole one: vLLM's fused MoE kernel
// takes the tile its tuned configurations give for the step's size
// (benchmark_moe's: about the tokens an expert sees, within 16 to 64).
//
// Tensor parallelism (vLLM's default for MoE) splits every expert's
// columns: each GPU reads its slice of every touched expert and computes
// every pair's slice. Expert parallelism (--enable-expert-parallel: EP =
// TP × DP GPUs) places whole experts, Experts/EP a GPU: the GPU whose
// experts are the most popular sets the pace, and with data parallelism
// its experts serve every rank's tokens (taken to run steps of this
// size, as vLLM runs MoE ranks in lockstep), exchanged before and after
// each MoE layer.
func (cm *Model) experts(tokens int) *expertWork {
	m := &cm.Model
	e := m.MoE
	if e == nil || e.Layers == 0 || tokens == 0 {
		return nil
	}
	cal := moeTerms(cm.HW.Calib.MoE)
	tp := max(1, cm.TP)
	ep := cm.EP
	experts, k := float64(e.Experts), float64(e.TopK)
	// The popularity spread: the most popular expert imbalance × the
	// mean, bounded so that no expert is chosen by a token with
	// probability above 1 (top-k of k experts is uniform).
	a := min(cal.Imbalance-1, experts/k-1)
	w := &expertWork{imbalance: 1 + a}
	t := float64(tokens)
	slices := float64(tp)
	if ep > tp {
		t *= float64(ep / tp) // every data-parallel rank's tokens
		slices = 1
	}
	w.touched = touched(experts, k, t, a)
	w.local, w.pairs = w.touched, t*k
	if ep > tp {
		perGPU := experts / float64(ep)
		// A GPU's few experts average their popularity: its share of the
		// tokens deviates from the mean as one expert's over √(its experts).
		gpu := 1 + a/math.Sqrt(perGPU)
		w.local = min(perGPU, max(min(perGPU, 1), w.touched/float64(ep)*gpu))
		w.pairs = t * k / float64(ep) * gpu
		w.imbalance = gpu
	}
	w.perExpert = w.pairs / w.local
	tile := 16.0
	for tile < 64 && tile < w.perExpert {
		tile *= 2
	}
	padded := max(w.local*tile, w.pairs+w.local*tile/2)
	layers := float64(e.Layers)
	f := m.Format(m.Weights.Experts)
	g := gemmGroup{rows: w.perExpert, kernels: 2 * layers}
	g.bytes = layers * w.local * e.ExpertParams / slices * f.Bytes
	g.flops = layers * 2 * w.pairs * e.ExpertParams / slices
	g.padded = layers * 2 * padded * e.ExpertParams / slices
	g.raw, g.eff, g.wlf, g.lat = cm.rate(f)
	g.eff *= cal.GEMMEfficiency
	g.wlf *= cal.ReadFactor
	w.group = g
	// Each pair's hidden vector is gathered to its expert, and the
	// expert's output written and summed back into its token's.
	w.activations = layers * 3 * w.pairs * float64(m.Hidden) * m.BytesPerParam
	if ep > tp {
		// vLLM's all-gather of every rank's tokens before the layer and
		// reduce-scatter of their outputs after it.
		d := float64(ep / tp)
		per := cm.HW.Calib.AllReduceLatency.Seconds() + (d-1)*float64(tokens)*float64(m.Hidden)*m.BytesPerParam/cm.HW.InterconnectBandwidth
		w.exchange = layers * 2 * per
	}
	return w
}

// gauss8 is the 8-point Gauss–Legendre rule on [0, 1]: exact for
// polynomials up to degree 15, and so for one token's expected experts.
var gauss8 = [8][2]float64{
	{0.019855071751231856, 0.05061426814518813}, {0.10166676129318664, 0.11119051722668724},
	{0.2372337950418355, 0.15685332293894363}, {0.4082826787521751, 0.18134189168918100},
	{0.5917173212478249, 0.18134189168918100}, {0.7627662049581645, 0.15685332293894363},
	{0.8983332387068134, 0.11119051722668724}, {0.9801449282487681, 0.05061426814518813},
}

// touched is the expected number of distinct experts of experts that
// tokens tokens, each routed to k, reach when the experts' popularity
// spreads linearly from 1 − a to 1 + a times the mean:
// experts · ∫₀¹ 1 − (1 − k/experts · (1 + a(2x − 1)))^tokens dx. One token
// reaches exactly k; uniform routing (a = 0) gives
// experts · (1 − (1 − k/experts)^tokens).
func touched(experts, k, tokens, a float64) float64 {
	var s float64
	for _, n := range gauss8 {
		q := min(1, k/experts*(1+a*(2*n[0]-1)))
		s += n[1] * (1 - math.Pow(1-q, tokens))
	}
	return experts * s
}

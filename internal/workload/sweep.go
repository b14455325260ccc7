package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Sweep is inference-perf's load.sweep: before the stages, a probe sends a
// burst (num_requests within 5 s) and samples the requests in flight every
// half second; the rates at which that number fell are the server's
// drain rates, and their saturation_percentile-th percentile is its
// saturation rate. NumStages stages of StageDuration seconds are then
// spaced from 1 request per second up to it, evenly (linear) or closer
// together near it (geometric). The probe is cut off at Timeout (its
// requests in flight abandoned) and its requests count in no report.
type Sweep struct {
	Probe         Stage
	Timeout       time.Duration
	NumStages     int
	StageDuration float64 // seconds
	Percentile    float64
	Geometric     bool
	Poisson       bool // the generated stages' arrivals are the poisson load type's, else constant's
}

// sampleEvery is how often inference-perf's probe reads the requests in
// flight.
const sampleEvery = 500 * time.Millisecond

// inFlightSample is the number of requests in flight at a time.
type inFlightSample struct {
	at time.Duration
	n  int
}

// errSaturation is a probe that saw too little draining to find a rate.
var errSaturation = errors.New("load.sweep: the probe saw too few completions to find the saturation rate; raise sweep.num_requests or sweep.timeout (as inference-perf advises)")

// saturation is inference-perf's estimate from the samples taken during
// the probe: the percentile of |Δ in flight / Δt| over the intervals in
// which the count fell.
func (sw *Sweep) saturation(samples []inFlightSample) (float64, error) {
	var rates []float64
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if d := b.n - a.n; d < 0 {
			rates = append(rates, math.Abs(float64(d)/(b.at-a.at).Seconds()))
		}
	}
	if len(rates) <= 1 {
		return 0, errSaturation
	}
	return percentile(rates, sw.Percentile), nil
}

// rates are the generated stages' rates: numpy's linspace(1, sat, n), or
// 1 + sat - geomspace(sat, 1, n), rounded to hundredths as inference-perf
// rounds them (and at least 0.01 request per second).
func (sw *Sweep) rates(sat float64) []float64 {
	n := sw.NumStages
	out := make([]float64, n)
	for k := range n {
		f := 0.0
		if n > 1 {
			f = float64(k) / float64(n-1)
		}
		var r float64
		if sw.Geometric {
			r = 1 + sat - sat*math.Pow(1/sat, f)
		} else {
			r = 1 + (sat-1)*f
		}
		out[k] = max(math.Round(r*100)/100, 0.01)
	}
	return out
}

// stages generates the stages for saturation sat, with arrivals as the
// load type places them.
func (sw *Sweep) stages(sat float64, rng *rand.Rand) []Stage {
	var out []Stage
	for _, r := range sw.rates(sat) {
		st := Stage{Rate: r, Duration: Seconds(sw.StageDuration)}
		if sw.Poisson {
			st.Offsets = PoissonOffsets(r, sw.StageDuration, rng)
		} else {
			st.Offsets = ConstantOffsets(int(r*sw.StageDuration), sw.StageDuration, rng)
		}
		out = append(out, st)
	}
	return out
}

// percentile is numpy's default (linear interpolation) percentile.
func percentile(x []float64, p float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s) == 1 {
		return s[0]
	}
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

package inferenceperf

import (
	"math"
	"math/rand/v2"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// generate draws n lengths as inference-perf's generate_distribution draws
// the random and synthetic data's input and output lengths: fixed is
// int(mean), unclipped; uniform is U[min, max); lognormal is shifted so
// that min maps to 0; then clipped to [min, max] and rounded half to even,
// as numpy rounds.
func (d *Distribution) generate(n int, rng *rand.Rand) []int {
	out := make([]int, n)
	lo, hi := float64(*d.Min), float64(*d.Max)
	if d.Type == "fixed" {
		for i := range out {
			out[i] = int(*d.Mean)
		}
		return out
	}
	var mu, sigma float64
	if d.Type == "lognormal" {
		shifted := *d.Mean - lo
		if shifted <= 0 {
			shifted = 1
		}
		s2 := math.Log(1 + (*d.StdDev/shifted)*(*d.StdDev/shifted))
		mu, sigma = math.Log(shifted)-s2/2, math.Sqrt(s2)
	}
	for i := range out {
		var v float64
		switch d.Type {
		case "uniform":
			v = lo + rng.Float64()*(hi-lo)
		case "lognormal":
			v = math.Exp(mu+sigma*rng.NormFloat64()) + lo
		default:
			v = *d.Mean + *d.StdDev*rng.NormFloat64()
		}
		out[i] = clipRound(v, lo, hi)
	}
	return out
}

// sample draws n lengths as inference-perf's sample_from_distribution draws
// shared_prefix's: uniform is U[min, max+1), lognormal moment-matched to
// the mean and std_dev without a shift, skew_normal by Azzalini's
// two-normal method, poisson with the mean as its rate; clipped and rounded.
func (d *Distribution) sample(n int, rng *rand.Rand) []int {
	out := make([]int, n)
	lo, hi := float64(*d.Min), float64(*d.Max)
	m, s := *d.Mean, *d.StdDev
	for i := range out {
		var v float64
		switch d.Type {
		case "fixed":
			out[i] = int(m)
			continue
		case "uniform":
			v = lo + rng.Float64()*(hi+1-lo)
		case "lognormal":
			if s <= 0 || m <= 0 {
				v = m
				break
			}
			s2 := math.Log(1 + (s/m)*(s/m))
			v = math.Exp(math.Log(m) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
		case "skew_normal":
			delta := *d.Skew / math.Sqrt(1+*d.Skew**d.Skew)
			u0, w := rng.NormFloat64(), rng.NormFloat64()
			z := delta*u0 + math.Sqrt(1-delta*delta)*w
			if u0 < 0 {
				z = -z
			}
			v = m + s*z
		case "poisson":
			lam := m
			if lam <= 0 {
				lam = 1
			}
			v = float64(workload.Poisson(lam, rng))
		default:
			v = m + s*rng.NormFloat64()
		}
		out[i] = clipRound(v, lo, hi)
	}
	return out
}

func clipRound(v, lo, hi float64) int {
	return int(math.Min(math.Max(math.RoundToEven(math.Min(math.Max(v, lo), hi)), lo), hi))
}

// lengths resolves a shared_prefix length into n draws.
func (l *Length) lengths(n int, legacy *Distribution, rng *rand.Rand) []int {
	d := l.Dist
	if d == nil && legacy != nil {
		d = legacy
	}
	if d == nil {
		out := make([]int, n)
		for i := range out {
			out[i] = l.Value
		}
		return out
	}
	return d.sample(n, rng)
}

package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Ramp is vLLM's --ramp-up-strategy: the request rate of request i of N
// moves from Start to End linearly or exponentially in i/(N-1).
type Ramp struct {
	Strategy   string // "linear" or "exponential"
	Start, End float64
}

// MaxRequests bounds the requests of one run: a --duration run whose rate
// would otherwise let it send without end, a configuration's stage.
const MaxRequests = 1_000_000

// Arrivals yields when each request is sent, as an offset from the start of
// the run. It follows vLLM's get_request: gaps are gamma-distributed with
// shape = burstiness and scale = 1/(rate·burstiness), so the mean rate is
// the rate asked for; burstiness 1 is a Poisson process, +Inf constant
// spacing, an infinite rate sends everything at once.
type Arrivals struct {
	offsets  []time.Duration // precomputed schedule, when the count is known
	next     int
	duration time.Duration // when > 0, sample lazily until this offset
	cur      float64       // seconds, lazy mode
	rate     float64
	burst    float64
	ramp     *Ramp
	rng      *rand.Rand
}

// NewArrivals builds the schedule of n requests, or, when duration > 0, a
// lazy one that ends at duration.
func NewArrivals(n int, duration time.Duration, rate, burstiness float64, ramp *Ramp, rng *rand.Rand) *Arrivals {
	a := &Arrivals{duration: duration, rate: rate, burst: burstiness, ramp: ramp, rng: rng}
	if duration > 0 {
		return a
	}
	a.offsets = scheduleOffsets(n, rate, burstiness, ramp, rng)
	return a
}

// Next returns the offset of the next request, or false when none is left.
func (a *Arrivals) Next() (time.Duration, bool) {
	if a.duration <= 0 {
		if a.next >= len(a.offsets) {
			return 0, false
		}
		a.next++
		return a.offsets[a.next-1], true
	}
	if a.next >= MaxRequests {
		return 0, false
	}
	if a.next > 0 {
		progress := a.cur / a.duration.Seconds()
		a.cur += gap(rampRate(a.ramp, progress, a.rate), a.burst, a.rng)
	}
	off := Seconds(a.cur)
	if off >= a.duration {
		return 0, false
	}
	a.next++
	return off, true
}

// scheduleOffsets precomputes n send offsets. Without a ramp the cumulative
// schedule is rescaled so that the last request goes at exactly n/rate, as
// vLLM does: the raw gamma sum is otherwise a few percent off, which makes
// throughput jump between seeds.
func scheduleOffsets(n int, rate, burstiness float64, ramp *Ramp, rng *rand.Rand) []time.Duration {
	delays := make([]float64, n)
	for i := range delays {
		progress := float64(i) / float64(max(n-1, 1))
		delays[i] = gap(rampRate(ramp, progress, rate), burstiness, rng)
		if i > 0 {
			delays[i] += delays[i-1]
		}
	}
	if ramp == nil && n > 0 && delays[n-1] != 0 {
		scale := float64(n) / rate / delays[n-1]
		for i := range delays {
			delays[i] *= scale
		}
	}
	out := make([]time.Duration, n)
	for i, d := range delays {
		out[i] = Seconds(d)
	}
	return out
}

// rampRate is the rate at progress (0 to 1) through the run: vLLM's
// _get_current_request_rate.
func rampRate(r *Ramp, progress, rate float64) float64 {
	if r == nil {
		return rate
	}
	if r.Strategy == "exponential" {
		return r.Start * math.Pow(r.End/r.Start, progress)
	}
	return r.Start + (r.End-r.Start)*progress
}

// gap draws one inter-arrival gap in seconds.
func gap(rate, burstiness float64, rng *rand.Rand) float64 {
	switch {
	case math.IsInf(rate, 1):
		return 0
	case rate <= 0:
		return math.Inf(1) // a ramp starting at 0 sends its first request only when the rate rises
	case math.IsInf(burstiness, 1):
		return 1 / rate
	}
	return gammaSample(burstiness, rng) / (rate * burstiness)
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method,
// boosting shapes below 1 with U^(1/shape).
func gammaSample(shape float64, rng *rand.Rand) float64 {
	if shape < 1 {
		return gammaSample(shape+1, rng) * math.Pow(1-rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// Seconds converts float seconds to a Duration, saturating at the maximum.
func Seconds(s float64) time.Duration {
	if s >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}

// Check reports a ramp that cannot run; a nil ramp is fine. A ramp replaces
// the request rate, which must be left infinite.
func (r *Ramp) Check(rate float64) error {
	if r == nil {
		return nil
	}
	if !math.IsInf(rate, 1) {
		return errors.New("check ramp: give either a ramp or --request-rate, not both")
	}
	switch {
	case r.Strategy != "linear" && r.Strategy != "exponential":
		return fmt.Errorf("check ramp strategy %q: want linear or exponential", r.Strategy)
	case !(r.Start > 0) || r.End < r.Start || math.IsInf(r.End, 0):
		return errors.New("check ramp: want 0 < start <= end, both finite")
	}
	return nil
}

// ConstantOffsets is inference-perf's ConstantLoadTimer: n exponential
// gaps rescaled to sum to the duration, so the last request goes at its
// end (a Poisson process holding exactly n arrivals, not a fixed interval).
func ConstantOffsets(n int, duration float64, rng *rand.Rand) []time.Duration {
	if n <= 0 {
		return nil
	}
	gaps := make([]float64, n)
	sum := 0.0
	for i := range gaps {
		gaps[i] = rng.ExpFloat64()
		sum += gaps[i]
	}
	out := make([]time.Duration, n)
	t := 0.0
	for i, g := range gaps {
		t += g * duration / sum
		out[i] = Seconds(t)
	}
	return out
}

// PoissonOffsets is inference-perf's PoissonLoadTimer: one-second windows,
// each with a Poisson number of arrivals placed as a constant stage of one
// second, until the stage's int(rate·duration) requests are placed.
func PoissonOffsets(rate, duration float64, rng *rand.Rand) []time.Duration {
	n := int(rate * duration)
	var out []time.Duration
	for w := 0; len(out) < n; w++ {
		k := Poisson(rate, rng)
		for _, off := range ConstantOffsets(k, 1, rng) {
			if len(out) < n {
				out = append(out, time.Duration(w)*time.Second+off)
			}
		}
	}
	return out
}

// Poisson draws from Poisson(mean): Knuth's product method for small
// means, a rounded normal approximation for large ones.
func Poisson(mean float64, rng *rand.Rand) int {
	if mean > 60 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

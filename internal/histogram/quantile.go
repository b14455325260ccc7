// Package histogram is PromQL's histogram_quantile over cumulative buckets,
// in Go: bench, the doctor and the live page compute their quantiles with
// it, so a quantile read here is the one Grafana shows. It is pure: no
// I/O, and it imports nothing of the module.
package histogram

import (
	"math"
	"sort"
)

// Quantile is PromQL's histogram_quantile over cumulative buckets (upper
// bound → count, +Inf holding the total): linear interpolation inside the
// bucket holding the rank, the first bucket starting at 0, and the highest
// finite bound when the rank falls in the +Inf bucket. NaN when there are
// no observations or q is NaN; q outside [0, 1] gives ±Inf, as PromQL.
func Quantile(q float64, buckets map[float64]float64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	total := buckets[bounds[len(bounds)-1]]
	if !(total > 0) {
		return math.NaN()
	}
	switch {
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		c := buckets[b]
		if c < rank {
			prevBound, prevCount = b, c
			continue
		}
		switch {
		case math.IsInf(b, 1):
			if i == 0 {
				return math.NaN()
			}
			return bounds[i-1]
		case i == 0 && b <= 0, c == prevCount:
			return b
		}
		return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
	}
	return bounds[len(bounds)-1]
}

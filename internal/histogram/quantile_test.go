package histogram

import (
	"math"
	"testing"
)

func TestQuantileIsPromQLs(t *testing.T) {
	inf := math.Inf(1)
	b := map[float64]float64{0.1: 10, 0.2: 30, 0.5: 40, inf: 40}
	for _, tt := range []struct{ q, want float64 }{
		{0.25, 0.1},                 // rank 10 ends the first bucket
		{0.5, 0.1 + 0.1*(20-10)/20}, // rank 20, halfway through (0.1, 0.2]
		{0.125, 0.05},               // the first bucket starts at 0
		{0.9, 0.2 + 0.3*(36-30)/10}, // rank 36 in (0.2, 0.5]
		{1, 0.5},
		{-0.1, math.Inf(-1)},
		{1.1, inf},
	} {
		if got := Quantile(tt.q, b); math.Abs(got-tt.want) > 1e-12 && got != tt.want {
			t.Errorf("q%v = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := Quantile(0.99, map[float64]float64{0.1: 1, inf: 10}); got != 0.1 {
		t.Errorf("rank in +Inf bucket: %v, want the highest finite bound 0.1", got)
	}
	for name, b := range map[string]map[float64]float64{
		"empty": {0.1: 0, inf: 0}, "no buckets": {}, "NaN total": {inf: math.NaN()},
	} {
		if got := Quantile(0.5, b); !math.IsNaN(got) {
			t.Errorf("%s: %v, want NaN", name, got)
		}
	}
	if got := Quantile(math.NaN(), b); !math.IsNaN(got) {
		t.Errorf("q NaN: %v, want NaN", got)
	}
}

// FuzzQuantile: any buckets (a scrape's, unchecked) and any q give a
// number, ±Inf or NaN, never a panic.
func FuzzQuantile(f *testing.F) {
	f.Add(0.5, 0.1, 10.0, 0.2, 30.0, 40.0)
	f.Add(0.99, 0.1, 1.0, 0.0, 0.0, 10.0)
	f.Fuzz(func(t *testing.T, q, b1, c1, b2, c2, total float64) {
		Quantile(q, map[float64]float64{b1: c1, b2: c2, math.Inf(1): total})
	})
}

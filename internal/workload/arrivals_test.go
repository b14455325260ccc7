package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestScheduleIsRescaledToTheRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, burst := range []float64{0.5, 1, 4} {
		off := scheduleOffsets(200, 8, burst, nil, rng)
		if want := Seconds(200.0 / 8); off[199] != want {
			t.Errorf("burstiness %v: last send at %v, want exactly n/rate = %v", burst, off[199], want)
		}
		if !slices.IsSorted(off) {
			t.Errorf("burstiness %v: offsets not increasing", burst)
		}
	}
	if off := scheduleOffsets(3, math.Inf(1), 1, nil, rng); !slices.Equal(off, []time.Duration{0, 0, 0}) {
		t.Errorf("infinite rate: %v, want all at 0", off)
	}
}

// TestBurstinessShapesTheGaps checks the coefficient of variation of the
// gaps is 1/sqrt(burstiness), as a gamma distribution's is.
func TestBurstinessShapesTheGaps(t *testing.T) {
	for _, k := range []float64{0.25, 1, 4} {
		rng := rand.New(rand.NewPCG(7, uint64(k*100)))
		var sum, sq float64
		const n = 40000
		for range n {
			g := gap(10, k, rng)
			sum += g
			sq += g * g
		}
		mean := sum / n
		cv := math.Sqrt(sq/n-mean*mean) / mean
		if math.Abs(mean-0.1) > 0.005 || math.Abs(cv-1/math.Sqrt(k)) > 0.05/math.Sqrt(k) {
			t.Errorf("burstiness %v: mean gap %.4f s (want 0.1), CV %.3f (want %.3f)", k, mean, cv, 1/math.Sqrt(k))
		}
	}
}

func TestRampRates(t *testing.T) {
	lin := &Ramp{Strategy: "linear", Start: 2, End: 10}
	exp := &Ramp{Strategy: "exponential", Start: 1, End: 16}
	for _, tt := range []struct {
		r        *Ramp
		progress float64
		want     float64
	}{{lin, 0, 2}, {lin, 0.5, 6}, {lin, 1, 10}, {exp, 0, 1}, {exp, 0.5, 4}, {exp, 1, 16}} {
		if got := rampRate(tt.r, tt.progress, math.Inf(1)); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s at %v: %v, want %v", tt.r.Strategy, tt.progress, got, tt.want)
		}
	}
}

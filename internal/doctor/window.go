package doctor

import (
	"math"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/histogram"
)

// Snapshot is one reading of a target's series at one instant, however it
// was read (a scrape of /metrics, or one step of Prometheus range queries).
type Snapshot struct {
	T       time.Time
	Values  map[string]float64             // seriesSpec key → value
	Buckets map[string]map[float64]float64 // histogram family → upper bound → cumulative count
}

// Window is the signal window every rule reads: the same shape from
// either source, so the same rules give the same answer.
type Window struct {
	Source   string // "metrics", "prometheus", "file", "live" or "simulate"
	Target   string // the URL read
	Selector string // PromQL selector for the evidence, e.g. {instance="10.0.0.5:8000"}

	Snapshots []Snapshot // successful readings, in time order
	Missed    int        // readings that failed or found the target down
	Problems  []string   // why, one line each (deduplicated)

	Info    map[string]map[string]string // info family → its labels
	Present map[string]bool              // families seen in at least one reading
}

// NewWindow starts a window of a target's readings; a source appends
// each one in time order.
func NewWindow(source, target string) *Window {
	return &Window{Source: source, Target: target, Info: map[string]map[string]string{}, Present: map[string]bool{}}
}

// Fail records a reading that failed, and why.
func (w *Window) Fail(why string) {
	w.Missed++
	w.Note(why)
}

// Note records why part of a reading failed, once.
func (w *Window) Note(why string) {
	if !slices.Contains(w.Problems, why) {
		w.Problems = append(w.Problems, why)
	}
}

// Point is one value of a series at a time.
type Point struct {
	T time.Time
	V float64
}

// Duration is the time between the first and last reading.
func (w *Window) Duration() time.Duration {
	if len(w.Snapshots) < 2 {
		return 0
	}
	return w.Snapshots[len(w.Snapshots)-1].T.Sub(w.Snapshots[0].T)
}

// Has reports whether any reading held the series key.
func (w *Window) Has(key string) bool {
	for _, s := range w.Snapshots {
		if _, ok := s.Values[key]; ok {
			return true
		}
	}
	return false
}

// Gauge is the series' value at every reading that has it.
func (w *Window) Gauge(key string) []Point {
	var out []Point
	for _, s := range w.Snapshots {
		if v, ok := s.Values[key]; ok {
			out = append(out, Point{s.T, v})
		}
	}
	return out
}

// Increase is a counter's increase over the window, as PromQL's increase
// without extrapolation: a drop is a reset, after which the counter
// restarted from zero.
func (w *Window) Increase(key string) float64 {
	return increase(w.Gauge(key))
}

func increase(ps []Point) float64 {
	var d float64
	for i := 1; i < len(ps); i++ {
		d += delta(ps[i-1].V, ps[i].V)
	}
	return d
}

func delta(prev, cur float64) float64 {
	if cur < prev {
		return cur // a reset
	}
	return cur - prev
}

// Rates is a counter's per-second rate over each interval between
// consecutive readings, stamped at the interval's end.
func (w *Window) Rates(key string) []Point {
	ps := w.Gauge(key)
	var out []Point
	for i := 1; i < len(ps); i++ {
		if dt := ps[i].T.Sub(ps[i-1].T).Seconds(); dt > 0 {
			out = append(out, Point{ps[i].T, delta(ps[i-1].V, ps[i].V) / dt})
		}
	}
	return out
}

// IntervalMeans is, for a histogram, the mean observation of each
// interval with at least one (Δsum/Δcount), stamped at its end.
func (w *Window) IntervalMeans(family string) []Point {
	sums, counts := w.Gauge(family+"_sum"), w.Gauge(family+"_count")
	if len(sums) != len(counts) {
		return nil
	}
	var out []Point
	for i := 1; i < len(sums); i++ {
		if dc := delta(counts[i-1].V, counts[i].V); dc > 0 {
			out = append(out, Point{sums[i].T, delta(sums[i-1].V, sums[i].V) / dc})
		}
	}
	return out
}

// BucketIncrease is each cumulative bucket's increase over the window.
func (w *Window) BucketIncrease(family string) map[float64]float64 {
	out := map[float64]float64{}
	var prev map[float64]float64
	for _, s := range w.Snapshots {
		cur := s.Buckets[family]
		if cur == nil {
			continue
		}
		if prev != nil {
			for le, c := range cur {
				out[le] += delta(prev[le], c)
			}
		}
		prev = cur
	}
	return out
}

// Quantile is PromQL's histogram_quantile over the histogram's bucket
// increases in the window; NaN with no observations.
func (w *Window) Quantile(q float64, family string) float64 {
	return histogram.Quantile(q, w.BucketIncrease(family))
}

// stats summarises a gauge's readings.
type stats struct {
	n              int
	mean, min, max float64
}

func summarise(ps []Point) stats {
	s := stats{n: len(ps), min: math.Inf(1), max: math.Inf(-1)}
	if len(ps) == 0 {
		return stats{}
	}
	for _, p := range ps {
		s.mean += p.V
		s.min, s.max = min(s.min, p.V), max(s.max, p.V)
	}
	s.mean /= float64(len(ps))
	return s
}

// fraction is the share of readings for which keep holds.
func fraction(ps []Point, keep func(float64) bool) float64 {
	if len(ps) == 0 {
		return 0
	}
	n := 0
	for _, p := range ps {
		if keep(p.V) {
			n++
		}
	}
	return float64(n) / float64(len(ps))
}

// thirds returns the mean of the first and of the last third of a series
// (by count), to tell a trend from noise; ok is false below three points.
func thirds(ps []Point) (first, last float64, ok bool) {
	if len(ps) < 3 {
		return 0, 0, false
	}
	k := len(ps) / 3
	return summarise(ps[:k]).mean, summarise(ps[len(ps)-k:]).mean, true
}

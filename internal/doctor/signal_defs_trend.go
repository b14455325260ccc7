package doctor

import (
	"math"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The window's trends: the mean TTFT and generation throughput of its
// first and last thirds, and the fit of each interval's inter-token
// latency on its batch width. They need the whole window (NaN over one
// interval): the latency rules read them here, not the raw series.

// thirdsDef is one third of a series, first (last false) or last.
func thirdsDef(name SignalName, unit, what string, last bool, series func(w *Window) []Point) signalDef {
	return one(name, unit, srcVLLM, what, func(v *view) float64 {
		first, end, ok := thirds(series(v.w))
		switch {
		case !ok:
			return math.NaN()
		case last:
			return end
		}
		return first
	}, nil)
}

// fitDef is one number of the ITL-against-batch fit.
func fitDef(name SignalName, unit, what string, pick func(f *itlFit) float64) signalDef {
	return one(name, unit, srcVLLM, what, func(v *view) float64 { return pick(v.itlFit()) }, nil)
}

func trendSignalDefs() []signalDef {
	ttft := func(w *Window) []Point { return w.IntervalMeans(metricspec.TimeToFirstToken) }
	gen := func(w *Window) []Point { return w.Rates(metricspec.GenerationTokens) }
	return []signalDef{
		thirdsDef(SigTTFTFirstThird, "s", "mean TTFT, first third of the window", false, ttft),
		thirdsDef(SigTTFTLastThird, "s", "mean TTFT, last third", true, ttft),
		thirdsDef(SigGenFirstThird, "tokens/s", "generation throughput, first third of the window", false, gen),
		thirdsDef(SigGenLastThird, "tokens/s", "generation throughput, last third", true, gen),
		fitDef(SigITLFitIntervals, "", "intervals in the fit of inter-token latency on requests running", func(f *itlFit) float64 { return float64(f.n) }),
		fitDef(SigITLBatchCorr, "ratio", "correlation of interval ITL with requests running", func(f *itlFit) float64 { return f.fitted(f.r) }),
		fitDef(SigITLFitIntercept, "s", "fitted ITL of an empty batch (the fit's intercept)", func(f *itlFit) float64 { return f.fitted(f.a) }),
		fitDef(SigITLFitSlope, "s", "fitted ITL per running request (the fit's slope)", func(f *itlFit) float64 { return f.fitted(f.b) }),
		fitDef(SigITLAtNarrowest, "s", "fitted ITL at the narrowest batch", func(f *itlFit) float64 { return f.fitted(f.yAtMin) }),
		fitDef(SigITLAtWidest, "s", "fitted ITL at the widest batch", func(f *itlFit) float64 { return f.fitted(f.yAtMax) }),
		fitDef(SigBatchNarrowest, "requests", "narrowest mean batch", func(f *itlFit) float64 { return f.fitted(f.xMin) }),
		fitDef(SigBatchWidest, "requests", "widest mean batch", func(f *itlFit) float64 { return f.fitted(f.xMax) }),
	}
}

// itlFit is the view's fit, made once.
func (v *view) itlFit() *itlFit {
	if v.fit == nil {
		f := fitITL(v.w)
		v.fit = &f
	}
	return v.fit
}

// fitted is x when the fit was made (enough intervals, and both series
// vary), else NaN.
func (f *itlFit) fitted(x float64) float64 {
	if !f.ok {
		return math.NaN()
	}
	return x
}

// itlFit regresses each interval's mean inter-token latency on its mean
// batch width (requests running).
type itlFit struct {
	n              int
	ok             bool    // fitted: enough intervals, and both series vary
	a, b, r        float64 // ITL = a + b·running; r the correlation
	xMin, xMax     float64
	yAtMin, yAtMax float64
}

func fitITL(w *Window) itlFit {
	var xs, ys []float64
	itl := w.IntervalMeans(metricspec.InterTokenLatency)
	run := w.Gauge(metricspec.NumRequestsRunning)
	for _, pt := range itl {
		// the interval ends at pt.T; its batch width is the mean of its two readings
		for i := 1; i < len(run); i++ {
			if run[i].T.Equal(pt.T) {
				xs, ys = append(xs, (run[i-1].V+run[i].V)/2), append(ys, pt.V)
				break
			}
		}
	}
	f := itlFit{n: len(xs)}
	if f.n < minReadings+1 {
		return f
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(f.n), my/float64(f.n)
	var sxx, syy, sxy float64
	f.xMin, f.xMax = math.Inf(1), math.Inf(-1)
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx, syy, sxy = sxx+dx*dx, syy+dy*dy, sxy+dx*dy
		f.xMin, f.xMax = math.Min(f.xMin, xs[i]), math.Max(f.xMax, xs[i])
	}
	if sxx == 0 || syy == 0 {
		return f
	}
	f.b = sxy / sxx
	f.a = my - f.b*mx
	f.r = sxy / math.Sqrt(sxx*syy)
	f.yAtMin, f.yAtMax = f.a+f.b*f.xMin, f.a+f.b*f.xMax
	f.ok = true
	return f
}

// minReadings is the readings a window needs for a trend.
const minReadings = 3

package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// A soak is a long pass whose server is read every interval for what
// leaks show in: its resident memory, its goroutines (or, for a Python
// server, its open file descriptors) and its latencies over each
// interval; the report fits the memory's slope.

// SoakSample is one reading of the server during a soak; NaN where the
// server exports no such series (null in JSON).
type SoakSample struct {
	T          float64 // seconds since the pass started
	RSSMB      float64 // process_resident_memory_bytes, MB
	Goroutines float64
	OpenFDs    float64
	// The server's latency quantiles over the interval ending here, ms.
	TTFTp50, TTFTp99, ITLp99, E2Ep99 float64
	Finished                         float64 // requests finished in the interval
}

// MarshalJSON writes the sample with unknown values as null.
func (s SoakSample) MarshalJSON() ([]byte, error) {
	return object{{"t", s.T}, {"rss_mb", finite(s.RSSMB)}, {"goroutines", finite(s.Goroutines)}, {"open_fds", finite(s.OpenFDs)},
		{"ttft_p50_ms", finite(s.TTFTp50)}, {"ttft_p99_ms", finite(s.TTFTp99)}, {"itl_p99_ms", finite(s.ITLp99)}, {"e2el_p99_ms", finite(s.E2Ep99)},
		{"finished", s.Finished}}.MarshalJSON()
}

// SoakReport is a soak's curves and the memory's trend.
type SoakReport struct {
	Samples []SoakSample
	// RSSSlope is the fitted growth of resident memory in MB per hour,
	// over the samples after the first tenth (the warm-up).
	RSSSlope          float64
	RSSFirst, RSSLast float64
	GoroutineSlope    float64
	Flat              bool // the fit grows less than 5 MB, or 5 % of the mean, over the run
	Verdict           string
}

// MarshalJSON writes the report with unknown values as null.
func (r *SoakReport) MarshalJSON() ([]byte, error) {
	return object{{"verdict", r.Verdict}, {"flat", r.Flat}, {"rss_slope_mb_per_hour", finite(r.RSSSlope)}, {"rss_first_mb", finite(r.RSSFirst)},
		{"rss_last_mb", finite(r.RSSLast)}, {"goroutine_slope_per_hour", finite(r.GoroutineSlope)}, {"samples", r.Samples}}.MarshalJSON()
}

// soakSample reads the leak gauges of cur and the latencies since prev.
func soakSample(prev, cur *snapshot, t float64) SoakSample {
	get := func(name string) float64 {
		v, ok := cur.Sum(name, nil)
		if !ok {
			return math.NaN()
		}
		return v
	}
	s := SoakSample{T: t, RSSMB: get("process_resident_memory_bytes") / 1e6, Goroutines: get("go_goroutines"), OpenFDs: get("process_open_fds")}
	s.TTFTp50, s.TTFTp99, s.ITLp99, s.E2Ep99 = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if prev == nil {
		return s
	}
	q := func(family string, p float64) float64 {
		h := histDelta(prev, cur, family, []float64{p})
		if len(h.Percentiles) == 0 {
			return math.NaN()
		}
		return h.Percentiles[0].Value
	}
	s.TTFTp50, s.TTFTp99 = q(metricspec.TimeToFirstToken, 50), q(metricspec.TimeToFirstToken, 99)
	s.ITLp99, s.E2Ep99 = q(metricspec.InterTokenLatency, 99), q(metricspec.E2ERequestLatency, 99)
	s.Finished = cur.value(metricspec.RequestSuccess) - prev.value(metricspec.RequestSuccess)
	return s
}

// analyseSoak fits the trends of a soak's samples.
func analyseSoak(samples []SoakSample, dur time.Duration) *SoakReport {
	r := &SoakReport{Samples: samples, RSSSlope: math.NaN(), GoroutineSlope: math.NaN()}
	var t, rss, gor []float64
	for _, s := range samples[len(samples)/10:] {
		if !math.IsNaN(s.RSSMB) {
			t, rss = append(t, s.T/3600), append(rss, s.RSSMB)
		}
		if !math.IsNaN(s.Goroutines) {
			gor = append(gor, s.Goroutines)
		}
	}
	if len(rss) < 3 {
		r.Verdict = "too few readings of process_resident_memory_bytes to fit a trend"
		return r
	}
	r.RSSSlope = slope(t, rss)
	r.RSSFirst, r.RSSLast = rss[0], rss[len(rss)-1]
	if len(gor) == len(t) {
		r.GoroutineSlope = slope(t, gor)
	}
	mean := 0.0
	for _, v := range rss {
		mean += v
	}
	mean /= float64(len(rss))
	growth := r.RSSSlope * (t[len(t)-1] - t[0])
	r.Flat = growth < math.Max(5, 0.05*mean)
	if dur < 10*time.Minute {
		r.Verdict = fmt.Sprintf("too short to call: resident memory %.1f → %.1f MB over %v (a fitted %+.1f MB per hour; tens of minutes tell a leak from warm-up)",
			r.RSSFirst, r.RSSLast, dur.Round(time.Second), r.RSSSlope)
		return r
	}
	if r.Flat {
		r.Verdict = fmt.Sprintf("flat: resident memory %.1f → %.1f MB, a fitted %+.1f MB per hour over %v", r.RSSFirst, r.RSSLast, r.RSSSlope, dur.Round(time.Second))
	} else {
		r.Verdict = fmt.Sprintf("growing: resident memory %.1f → %.1f MB, %+.1f MB per hour over %v", r.RSSFirst, r.RSSLast, r.RSSSlope, dur.Round(time.Second))
	}
	return r
}

// slope is the least-squares slope of y on x.
func slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx, my = mx+x[i], my+y[i]
	}
	n := float64(len(x))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

func (r *SoakReport) write(w io.Writer) {
	fmt.Fprintln(w, center(" Soak: the server over time ", "=", 50))
	fmt.Fprintf(w, "%d readings; %s\n", len(r.Samples), r.Verdict)
	if !math.IsNaN(r.GoroutineSlope) {
		fmt.Fprintf(w, "goroutines: a fitted %+.1f per hour\n", r.GoroutineSlope)
	}
	// The last interval that started requests: the one after the load
	// ends only drains (no first tokens, so no TTFT).
	for i := len(r.Samples) - 1; i >= 0; i-- {
		last := r.Samples[i]
		if math.IsNaN(last.TTFTp50) && i > 0 {
			continue
		}
		fmt.Fprintf(w, "last interval: TTFT p50 %.1f ms, p99 %.1f ms; ITL p99 %.1f ms; E2E p99 %.1f ms\n", last.TTFTp50, last.TTFTp99, last.ITLp99, last.E2Ep99)
		break
	}
}

// soakCharts are the report's curves of a soak.
func soakCharts(r *SoakReport) string {
	var t, rss, gor, p50, p99, e2e []float64
	for _, s := range r.Samples {
		t = append(t, s.T/60)
		rss, gor = append(rss, nanZero(s.RSSMB)), append(gor, nanZero(s.Goroutines))
		p50, p99, e2e = append(p50, nanZero(s.TTFTp50)), append(p99, nanZero(s.TTFTp99)), append(e2e, nanZero(s.E2Ep99))
	}
	var b strings.Builder
	b.WriteString(lineChart("soak-rss", "Server resident memory", "minutes", "MB", []series{{Name: "RSS", Color: palette[0], X: t, Y: rss}}, nil))
	b.WriteString(lineChart("soak-goroutines", "Server goroutines", "minutes", "goroutines", []series{{Name: "go_goroutines", Color: palette[1], X: t, Y: gor}}, nil))
	b.WriteString(lineChart("soak-latency", "Server latency over each interval", "minutes", "ms",
		[]series{{Name: "TTFT p50", Color: palette[2], X: t, Y: p50}, {Name: "TTFT p99", Color: palette[3], X: t, Y: p99}, {Name: "E2E p99", Color: palette[4], X: t, Y: e2e}}, nil))
	return b.String()
}

func nanZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

package live

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// num is a JSON number that writes NaN and ±Inf as null.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

var _ json.Marshaler = num(0)

// Series are the page's time series, one point per interval between two
// readings (rates, quantiles over the interval) at the interval's end.
type Series struct {
	T  []num `json:"t"`  // unix seconds
	DT []num `json:"dt"` // the interval's length, seconds

	GenTPS    []num `json:"gen_tps"`
	PromptTPS []num `json:"prompt_tps"`
	Util      []num `json:"util"` // DCGM engine activity, else glassbox's busy ratio
	MFU       []num `json:"mfu"`
	MBU       []num `json:"mbu"`

	Running         []num `json:"running"`
	Waiting         []num `json:"waiting"`
	WaitingCapacity []num `json:"waiting_capacity"`
	KV              []num `json:"kv"`
	Preemptions     []num `json:"preemptions"` // in the interval

	// Latency holds TTFT, inter-token and end-to-end p50 and p99 over each
	// interval, in seconds, by name (ttft_p50, …).
	Latency map[string][]num `json:"latency"`

	PrefillShare []num `json:"prefill_share"` // of prefill + decode time
	HitRate      []num `json:"hit_rate"`

	UtilSource string `json:"util_source"` // dcgm, glassbox or ""
	PeakSource string `json:"peak_source"`
	// Last is the latest reading's gauges: what one reading can show.
	Last map[string]num `json:"last"`
}

// derive computes the series of w's intervals ending after since.
func derive(w *doctor.Window, since float64) *Series {
	s := &Series{Latency: map[string][]num{}, Last: map[string]num{}}
	snaps := w.Snapshots
	if n := len(snaps); n > 0 {
		last := snaps[n-1]
		for k, key := range map[string]string{"running": metricspec.NumRequestsRunning, "waiting": metricspec.NumRequestsWaiting, "kv": metricspec.KVCacheUsagePerc} {
			v, ok := last.Values[key]
			if !ok {
				v = math.NaN()
			}
			s.Last[k] = num(v)
		}
	}
	peakF, peakB, peakSrc := w.Peaks()
	s.PeakSource = peakSrc
	dcgm := w.Has(metricspec.DCGMGREngineActive)
	switch {
	case dcgm:
		s.UtilSource = "dcgm"
	case w.Has(metricspec.ExecutorBusySeconds):
		s.UtilSource = "glassbox"
	}
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		t := float64(b.T.UnixMilli()) / 1000
		if t <= since {
			continue
		}
		dt := b.T.Sub(a.T).Seconds()
		delta := func(key string) float64 {
			x, ok1 := a.Values[key]
			y, ok2 := b.Values[key]
			switch {
			case !ok1 || !ok2:
				return math.NaN()
			case y < x: // a counter reset: it restarted from zero
				return y
			}
			return y - x
		}
		rate := func(key string) float64 { return delta(key) / dt }
		gauge := func(key string) float64 {
			if v, ok := b.Values[key]; ok {
				return v
			}
			return math.NaN()
		}
		ratio := func(x, y float64) float64 {
			if y > 0 {
				return x / y
			}
			return math.NaN()
		}
		s.T, s.DT = append(s.T, num(t)), append(s.DT, num(dt))
		s.GenTPS = append(s.GenTPS, num(rate(metricspec.GenerationTokens)))
		s.PromptTPS = append(s.PromptTPS, num(rate(metricspec.PromptTokens)))
		util := math.NaN()
		if dcgm {
			util = gauge(metricspec.DCGMGREngineActive)
		} else if s.UtilSource == "glassbox" {
			util = rate(metricspec.ExecutorBusySeconds)
		}
		s.Util = append(s.Util, num(util))
		s.MFU = append(s.MFU, num(rate(metricspec.EstimatedFLOPsPerGPU)/peakF))
		s.MBU = append(s.MBU, num(rate(metricspec.EstimatedReadBytesPerGPU)/peakB))
		s.Running = append(s.Running, num(gauge(metricspec.NumRequestsRunning)))
		s.Waiting = append(s.Waiting, num(gauge(metricspec.NumRequestsWaiting)))
		s.WaitingCapacity = append(s.WaitingCapacity, num(gauge(metricspec.NumRequestsWaitingByReason+`{reason="capacity"}`)))
		s.KV = append(s.KV, num(gauge(metricspec.KVCacheUsagePerc)))
		s.Preemptions = append(s.Preemptions, num(delta(metricspec.NumPreemptions)))
		q := func(name string, family string, p float64) {
			s.Latency[name] = append(s.Latency[name], num(quantile(a, b, family, p)))
		}
		q("ttft_p50", metricspec.TimeToFirstToken, 0.5)
		q("ttft_p99", metricspec.TimeToFirstToken, 0.99)
		q("itl_p50", metricspec.InterTokenLatency, 0.5)
		q("itl_p99", metricspec.InterTokenLatency, 0.99)
		q("e2e_p50", metricspec.E2ERequestLatency, 0.5)
		q("e2e_p99", metricspec.E2ERequestLatency, 0.99)
		pre, dec := delta(metricspec.RequestPrefillTime+"_sum"), delta(metricspec.RequestDecodeTime+"_sum")
		s.PrefillShare = append(s.PrefillShare, num(ratio(pre, pre+dec)))
		s.HitRate = append(s.HitRate, num(ratio(delta(metricspec.PrefixCacheHits), delta(metricspec.PrefixCacheQueries))))
	}
	return s
}

// quantile is PromQL's histogram_quantile over the bucket increases from
// a to b (a reset counted as a restart from zero, as the doctor counts
// it); NaN when nothing was observed.
func quantile(a, b doctor.Snapshot, family string, p float64) float64 {
	return (&doctor.Window{Snapshots: []doctor.Snapshot{a, b}}).Quantile(p, family)
}

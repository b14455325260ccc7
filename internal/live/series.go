package live

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

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
	Util      []num `json:"util"`       // the GPU's utilisation, from the source the doctor reads
	HostShare []num `json:"host_share"` // of each step, the GPU waiting for the host
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
	// Speculative decoding: draft acceptance and tokens per verify pass
	// (null without --speculative-config).
	SpecAcceptance    []num `json:"spec_acceptance"`
	SpecTokensPerPass []num `json:"spec_tokens_per_pass"`

	UtilSource string `json:"util_source"` // glassbox, dcgm, vllm-estimate or ""
	UtilWhat   string `json:"util_what"`   // what the doctor read as the GPU's utilisation
	PeakSource string `json:"peak_source"`
	// Last is the latest reading's gauges: what one reading can show.
	Last map[string]num `json:"last"`
}

// charted maps the page's series to the doctor's signals: the page
// derives nothing itself.
var charted = map[string]string{
	"gen_tps": "generation_rate", "prompt_tps": "prompt_rate", "util": "busy", "host_share": "host_share",
	"mfu": "mfu", "mbu": "mbu", "running": "running", "waiting": "waiting", "waiting_capacity": "waiting_capacity",
	"kv": "kv_usage", "preemptions": "preemptions", "prefill_share": "prefill_share", "hit_rate": "prefix_hit_rate",
	"spec_acceptance": "spec_acceptance_rate", "spec_tokens_per_pass": "spec_tokens_per_pass",
}

// latencies are the quantiles the latency chart draws.
var latencies = []string{"ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "e2e_p99"}

// derive computes the series of w's intervals ending in (since, to] (to
// zero: no end), each signal from the source the doctor chose for the
// window (sig, w's signals; evaluated here when nil).
func derive(sig *doctor.Signals, w *doctor.Window, since, to time.Time) *Series {
	s := &Series{Latency: map[string][]num{}, Last: map[string]num{}}
	if sig == nil {
		sig = doctor.Evaluate(w)
	}
	if n := len(w.Snapshots); n > 0 {
		last := w.Snapshots[n-1]
		for k, key := range map[string]string{"running": metricspec.NumRequestsRunning, "waiting": metricspec.NumRequestsWaiting, "kv": metricspec.KVCacheUsagePerc} {
			v, ok := last.Values[key]
			if !ok {
				v = math.NaN()
			}
			s.Last[k] = num(v)
		}
	}
	_, _, s.PeakSource = w.Peaks()
	s.UtilSource, s.UtilWhat = sig.SourceOf("busy"), sig.WhatOf("busy")
	names := slices.Sorted(maps.Values(charted))
	names = append(names, latencies...)
	iv := sig.Intervals(since, names...)
	n := len(iv.T)
	for n > 0 && !to.IsZero() && iv.T[n-1].After(to) {
		n--
	}
	nums := func(xs []float64) []num {
		out := make([]num, n)
		for i, x := range xs[:n] {
			out[i] = num(x)
		}
		return out
	}
	for _, t := range iv.T[:n] {
		s.T = append(s.T, num(float64(t.UnixMilli())/1000))
	}
	s.DT = nums(iv.DT)
	fields := map[string]*[]num{"gen_tps": &s.GenTPS, "prompt_tps": &s.PromptTPS, "util": &s.Util, "host_share": &s.HostShare, "mfu": &s.MFU, "mbu": &s.MBU,
		"running": &s.Running, "waiting": &s.Waiting, "waiting_capacity": &s.WaitingCapacity, "kv": &s.KV, "preemptions": &s.Preemptions,
		"prefill_share": &s.PrefillShare, "hit_rate": &s.HitRate, "spec_acceptance": &s.SpecAcceptance, "spec_tokens_per_pass": &s.SpecTokensPerPass}
	for k, f := range fields {
		*f = nums(iv.V[charted[k]])
	}
	for _, l := range latencies {
		s.Latency[l] = nums(iv.V[l])
	}
	return s
}

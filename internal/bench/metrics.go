package bench

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Metrics is vLLM's BenchmarkMetrics: what calculate_metrics in
// vllm/benchmarks/serve.py computes, with the same definitions.
type Metrics struct {
	Completed, Failed       int
	TotalInput, TotalOutput int
	Good                    int // successful requests meeting every SLO
	Duration                time.Duration

	RequestThroughput    float64  // completed / duration
	RequestGoodput       *float64 // good / duration; nil without SLOs
	OutputThroughput     float64  // Σ output tokens / duration
	TotalTokenThroughput float64  // (Σ input + Σ output tokens) / duration

	MaxOutputTokensPerS   float64 // the fullest 1-second bin of token chunks
	MaxConcurrentRequests int     // exact peak overlap of [start, start+latency)

	// Dists holds, per metric name (ttft, tpot, itl, e2el,
	// client_queue_time, e2el_including_client_queue), its values in
	// milliseconds and their statistics.
	Dists map[string]Dist

	OutputLens []int // per request, 0 for failed ones

	// TokensPerSecond and ConcurrencyPerSecond are the 1-second bins behind
	// the peaks, from the first request's start.
	TokensPerSecond, ConcurrencyPerSecond []float64
}

// Dist is one metric's distribution in milliseconds: numpy's mean, median,
// population standard deviation and linearly interpolated percentiles.
type Dist struct {
	Values            []float64 // ms, in request order
	Mean, Median, Std float64
	Percentiles       []Percentile
}

// Percentile is one requested percentile of a Dist.
type Percentile struct{ P, Value float64 }

// calculate computes the metrics of outputs over a run of dur. A successful
// output's token count is its OutputTokens (filled from the server's usage,
// or by the caller's tokenizer when the server reported none).
func calculate(outputs []Output, dur time.Duration, percentiles []float64, slo SLOs, maxConcurrency int) Metrics {
	m := Metrics{Duration: dur, Dists: map[string]Dist{}}
	var ttfts, tpots, allTPOTs, itls, e2els, queue, e2elQueue []float64
	for _, o := range outputs {
		if !o.Success {
			m.OutputLens = append(m.OutputLens, 0)
			m.Failed++
			continue
		}
		n := o.OutputTokens
		m.OutputLens = append(m.OutputLens, n)
		m.TotalInput += o.PromptLen
		m.TotalOutput += n
		tpot := 0.0 // a request with at most one token has TPOT 0 for goodput, and none in the stats
		if n > 1 && !o.Unary {
			tpot = (o.Latency - o.TTFT).Seconds() / float64(n-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		for _, g := range o.ITL {
			itls = append(itls, g.Seconds())
		}
		if !o.Unary { // a unary answer has no first token of its own
			ttfts = append(ttfts, o.TTFT.Seconds())
		}
		e2els = append(e2els, o.Latency.Seconds())
		queue = append(queue, o.QueueTime.Seconds())
		e2elQueue = append(e2elQueue, (o.Latency + o.QueueTime).Seconds())
		m.Completed++
		if meets(slo, o.TTFT.Seconds(), tpot, o.Latency.Seconds()) {
			m.Good++
		}
	}
	s := dur.Seconds()
	if s <= 0 {
		s = math.Inf(1) // nothing measured over no time (an empty stage): rates of 0, not NaN
	}
	m.RequestThroughput = float64(m.Completed) / s
	if !slo.Empty() {
		g := float64(m.Good) / s
		m.RequestGoodput = &g
	}
	m.OutputThroughput = float64(m.TotalOutput) / s
	m.TotalTokenThroughput = float64(m.TotalInput+m.TotalOutput) / s
	for name, v := range map[string][]float64{"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els} {
		m.Dists[name] = newDist(v, percentiles)
	}
	if maxConcurrency > 0 {
		m.Dists["client_queue_time"] = newDist(queue, percentiles)
		m.Dists["e2el_including_client_queue"] = newDist(e2elQueue, percentiles)
	}
	m.peaks(outputs)
	return m
}

// meets reports whether a request meets every SLO (value <= objective).
func meets(slo SLOs, ttft, tpot, e2el float64) bool {
	if slo.Empty() {
		return false
	}
	ok := func(obj *float64, v float64) bool { return obj == nil || *obj/1000 >= v }
	return ok(slo.TTFT, ttft) && ok(slo.TPOT, tpot) && ok(slo.E2EL, e2el)
}

// peaks computes vLLM's peak output token throughput (token chunk times
// rebuilt as start+TTFT+cumulative ITL, binned into whole seconds from the
// earliest start) and the exact peak concurrency (a sweep over half-open
// intervals, departures before arrivals at equal times).
func (m *Metrics) peaks(outputs []Output) {
	var ok []Output
	for _, o := range outputs {
		if o.Success {
			ok = append(ok, o)
		}
	}
	if len(ok) == 0 {
		return
	}
	t0, tEnd := ok[0].Start, ok[0].Start.Add(ok[0].Latency)
	for _, o := range ok {
		if o.Start.Before(t0) {
			t0 = o.Start
		}
		if e := o.Start.Add(o.Latency); e.After(tEnd) {
			tEnd = e
		}
	}
	bins := int(math.Ceil(tEnd.Sub(t0).Seconds())) + 1
	m.TokensPerSecond = make([]float64, bins)
	m.ConcurrencyPerSecond = make([]float64, bins)
	type event struct {
		t     time.Time
		delta int
	}
	events := make([]event, 0, 2*len(ok))
	for _, o := range ok {
		at := o.Start.Sub(t0) + o.TTFT
		times := []time.Duration{at}
		for _, g := range o.ITL {
			at += g
			times = append(times, at)
		}
		for _, t := range times {
			if b := int(t.Seconds()); b >= 0 && b < bins {
				m.TokensPerSecond[b]++
			}
		}
		first := int(o.Start.Sub(t0).Seconds())
		last := int(math.Ceil((o.Start.Sub(t0) + o.Latency).Seconds()))
		for sec := max(first, 0); sec < min(bins, last); sec++ {
			m.ConcurrencyPerSecond[sec]++
		}
		events = append(events, event{o.Start, 1}, event{o.Start.Add(o.Latency), -1})
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].t.Equal(events[j].t) {
			return events[i].t.Before(events[j].t)
		}
		return events[i].delta < events[j].delta
	})
	cur := 0
	for _, e := range events {
		cur += e.delta
		m.MaxConcurrentRequests = max(m.MaxConcurrentRequests, cur)
	}
	m.MaxOutputTokensPerS = slices.Max(m.TokensPerSecond)
}

// newDist summarises values given in seconds. An empty list summarises as
// zeros, as numpy does with vLLM's `values or 0`.
func newDist(sec []float64, percentiles []float64) Dist {
	d := Dist{Values: make([]float64, len(sec))}
	for i, v := range sec {
		d.Values[i] = v * 1000
	}
	x := slices.Clone(sec)
	if len(x) == 0 {
		x = []float64{0}
	}
	slices.Sort(x)
	d.Mean = Mean(x) * 1000
	d.Median = SortedPercentile(x, 50) * 1000
	d.Std = std(x) * 1000
	for _, p := range percentiles {
		d.Percentiles = append(d.Percentiles, Percentile{p, SortedPercentile(x, p) * 1000})
	}
	return d
}

// Mean is the arithmetic mean of x (NaN for none), as numpy's: vLLM's
// bench and inference-perf's reports both compute theirs so.
func Mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// std is the population standard deviation (numpy's default ddof=0).
func std(x []float64) float64 {
	mu := Mean(x)
	s := 0.0
	for _, v := range x {
		s += (v - mu) * (v - mu)
	}
	return math.Sqrt(s / float64(len(x)))
}

// SortedPercentile is numpy's default ("linear") p-th percentile of
// sorted x, which must not be empty: vLLM's bench and inference-perf's
// reports both compute theirs so.
func SortedPercentile(sorted []float64, p float64) float64 {
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}

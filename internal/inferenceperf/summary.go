// inference-perf's lifecycle summaries: the latency and token statistics
// of a set of requests, and goodput against the SLOs.

package inferenceperf

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// ipSummary is inference-perf's summarize: nil for no values, else the
// mean, min, max and each percentile ("median" for the 50th).
func (x *ipContext) ipSummary(v []float64) any {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	o := object{{"mean", bench.Mean(s)}, {"min", s[0]}, {"max", s[len(s)-1]}}
	for _, p := range x.pcts {
		k := "median"
		if p != 50 {
			k = "p" + strconv.FormatFloat(p, 'g', -1, 64)
		}
		o = append(o, field{k, bench.SortedPercentile(s, p)})
	}
	return o
}

// summarize is inference-perf's summarize_requests over rs, with a stage's
// load fields when st is set.
func (x *ipContext) summarize(rs []*ipRecord, st *workload.Stage) object {
	var ok, failed []*ipRecord
	minStart, maxEnd, maxStart := math.Inf(1), math.Inf(-1), math.Inf(-1)
	var delays []float64
	for _, q := range rs {
		if q.o.Success {
			ok = append(ok, q)
		} else {
			failed = append(failed, q)
		}
		minStart, maxStart, maxEnd = min(minStart, q.start), max(maxStart, q.start), max(maxEnd, q.end)
		delays = append(delays, q.start-q.scheduled)
	}
	total := maxEnd - minStart
	load := object{{"count", len(rs)}, {"schedule_delay", x.ipSummary(delays)}}
	if st != nil {
		send := maxStart - minStart
		achieved := 0.0
		if send > 0 {
			achieved = float64(len(rs)) / send
		}
		load = append(load, field{"send_duration", send}, field{"requested_rate", st.Rate}, field{"achieved_rate", achieved})
		if st.MaxConcurrency > 0 {
			load = append(load, field{"concurrency", st.MaxConcurrency})
		}
	}
	per := func(v float64) float64 {
		if total > 0 {
			return v / total
		}
		return 0
	}
	var lat, ntpot, tpot, ttft, itl, sizes, outLens []float64
	var in, out float64
	mismatched := 0
	zeros := make([]float64, len(ok))
	var prompt []float64
	cached := 0.0
	for _, q := range ok {
		lat = append(lat, q.end-q.start)
		n := float64(q.outTokens)
		if n > 0 {
			ntpot = append(ntpot, (q.end-q.start)/n)
		} else {
			ntpot = append(ntpot, 0)
		}
		if len(q.tokenTimes) > 1 {
			ttft = append(ttft, q.tokenTimes[0]-q.start)
			if q.outTokens > 1 {
				tpot = append(tpot, (q.tokenTimes[len(q.tokenTimes)-1]-q.tokenTimes[0])/(n-1))
			}
			for i := 1; i < len(q.tokenTimes); i++ {
				itl = append(itl, q.tokenTimes[i]-q.tokenTimes[i-1])
			}
		}
		if !q.o.Unary && len(q.tokenTimes) != q.outTokens {
			mismatched++
		}
		sizes = append(sizes, float64(q.o.RequestBytes))
		outLens = append(outLens, n)
		prompt = append(prompt, float64(q.inputTokens))
		in += float64(q.inputTokens)
		out += n
		if q.o.CachedTokens != nil {
			cached += float64(*q.o.CachedTokens)
		}
	}
	promptTokens := object{{"total", in}, {"cached", cached}, {"uncached", max(in-cached, 0)}}
	if d, ok := x.ipSummary(prompt).(object); ok {
		promptTokens = append(promptTokens, d...)
	}
	outTokens := object{{"total", out}}
	if d, ok := x.ipSummary(outLens).(object); ok {
		outTokens = append(outTokens, d...)
	}
	successes := object{
		{"count", len(ok)},
		{"latency", object{{"request_latency", x.ipSummary(lat)}, {"normalized_time_per_output_token", x.ipSummary(ntpot)},
			{"time_per_output_token", x.ipSummary(tpot)}, {"time_to_first_token", x.ipSummary(ttft)}, {"inter_token_latency", x.ipSummary(itl)}}},
		{"throughput", object{{"input_tokens_per_sec", per(in)}, {"output_tokens_per_sec", per(out)}, {"total_tokens_per_sec", per(in + out)},
			{"requests_per_sec", per(float64(len(ok)))}, {"images_per_sec", 0.0}, {"videos_per_sec", 0.0}, {"audios_per_sec", 0.0}}},
		{"request_size_bytes", x.ipSummary(sizes)},
		// glassbox sends text only: no image, video or audio.
		{"image", object{{"count", x.ipSummary(zeros)}, {"pixels", nil}, {"bytes", nil}, {"aspect_ratio", nil}}},
		{"video", object{{"count", x.ipSummary(zeros)}, {"frames", nil}, {"pixels", nil}, {"bytes", nil}, {"aspect_ratio", nil}}},
		{"audio", object{{"count", x.ipSummary(zeros)}, {"seconds", nil}, {"bytes", nil}}},
		{"prompt_tokens", promptTokens},
		{"output_len", x.ipSummary(outLens)},
		{"output_tokens", outTokens},
		{"token_count_mismatches", mismatched},
	}
	if g := x.goodputMetrics(ok); g != nil {
		successes = append(successes, field{"goodput_metrics", g})
	}
	var failedLat []float64
	for _, q := range failed {
		failedLat = append(failedLat, q.end-q.start)
	}
	failedPrompt := object{{"total", 0.0}, {"cached", 0.0}, {"uncached", 0.0}}
	if d, ok := x.ipSummary(make([]float64, len(failed))).(object); ok {
		failedPrompt = append(failedPrompt, d...)
	}
	failures := object{{"count", len(failed)}, {"request_latency", x.ipSummary(failedLat)}, {"prompt_tokens", failedPrompt},
		{"by_label", x.errorCounts(failed)}}
	return object{{"benchmark_time_seconds", total}, {"load_summary", load}, {"successes", successes}, {"failures", failures}}
}

// ipSLOHeaders are the per-request TTFT and TPOT SLOs inference-perf reads
// from the request headers (x-slo-ttft-ms, x-slo-tpot-ms by default),
// in seconds.
func ipSLOHeaders(a *API) [2]*float64 {
	unit := "ms"
	if a.SLOUnit != nil {
		unit = *a.SLOUnit
	}
	names := [2]string{"x-slo-ttft-" + unit, "x-slo-tpot-" + unit}
	if a.SLOTTFTHeader != nil {
		names[0] = *a.SLOTTFTHeader
	}
	if a.SLOTPOTHeader != nil {
		names[1] = *a.SLOTPOTHeader
	}
	scale := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6}[unit]
	var out [2]*float64
	for k, v := range a.Headers {
		for i, n := range names {
			if strings.EqualFold(k, n) {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					s := f * scale
					out[i] = &s
				}
			}
		}
	}
	return out
}

// goodputMetrics is inference-perf's calculate_goodput_metrics: a request
// is good when it meets every SLO that applies to it (report.goodput's
// constraints, or the SLO headers of a streamed request).
func (x *ipContext) goodputMetrics(ok []*ipRecord) any {
	var cons map[string]float64
	if x.goodput != nil {
		cons = x.goodput.Constraints
	}
	if len(cons) == 0 && x.slo[0] == nil && x.slo[1] == nil || len(ok) == 0 {
		return nil
	}
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for _, q := range ok {
		minStart, maxEnd = min(minStart, q.start), max(maxEnd, q.end)
	}
	elapsed := maxEnd - minStart
	order := []string{"ttft", "tpot", "itl", "ntpot", "request_latency"}
	applicable, met := map[string]int{}, map[string]int{}
	good, goodTokens := 0, 0
	for _, q := range ok {
		streamed := len(q.tokenTimes) > 1
		var vals [5]*float64
		if streamed {
			t := q.tokenTimes[0] - q.start
			vals[0] = &t
			if q.outTokens > 1 {
				tp := (q.tokenTimes[len(q.tokenTimes)-1] - q.tokenTimes[0]) / float64(q.outTokens-1)
				vals[1] = &tp
			}
			il := (q.tokenTimes[len(q.tokenTimes)-1] - q.tokenTimes[0]) / float64(len(q.tokenTimes)-1)
			vals[2] = &il
		}
		nt := 0.0
		if q.outTokens > 0 {
			nt = (q.end - q.start) / float64(q.outTokens)
		}
		lat := q.end - q.start
		vals[3], vals[4] = &nt, &lat
		isGood := true
		for i, k := range order {
			slo, has := cons[k]
			sloPtr := &slo
			if !has {
				sloPtr = nil
			}
			if i < 2 && streamed && x.slo[i] != nil {
				sloPtr = x.slo[i] // a request's own header wins
			}
			if sloPtr == nil {
				continue
			}
			applicable[k]++
			if vals[i] != nil && *vals[i] <= *sloPtr {
				met[k]++
			} else {
				isGood = false
			}
		}
		if isGood {
			good++
			goodTokens += q.inputTokens + q.outTokens
		}
	}
	rate := func(v float64) float64 {
		if elapsed > 0 {
			return v / elapsed
		}
		return 0
	}
	o := object{{"goodput_percentage", float64(good) / float64(len(ok)) * 100}, {"request_goodput", rate(float64(good))},
		{"token_goodput", rate(float64(goodTokens))}, {"good_requests", good}, {"total_requests", len(ok)}}
	for _, k := range order {
		if n := applicable[k]; n > 0 {
			o = append(o, field{k + "_attainment_percentage", float64(met[k]) / float64(n) * 100})
		}
	}
	return o
}

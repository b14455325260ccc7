// inference-perf's Prometheus report, from the server's own /metrics.

package inferenceperf

import (
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
)

// prometheusSummary is inference-perf's Prometheus report from the
// server's /metrics read over [from, to] (the whole pass when nil): the
// counters' increase and rate, the histograms' mean, median, p90 and p99
// from their buckets' increase, the gauges over the readings. nil without
// two readings in the window.
func prometheusSummary(v *bench.ServerView, from, to *time.Time) object {
	readings := v.Readings()
	var snaps []bench.Snapshot
	for _, s := range readings {
		if (from == nil || !s.At.Before(*from)) && (to == nil || !s.At.After(*to)) {
			snaps = append(snaps, s)
		}
	}
	if from != nil {
		// The window's opening reading is the last one before it.
		before := -1
		for i, s := range readings {
			if s.At.Before(*from) {
				before = i
			}
		}
		if before >= 0 {
			snaps = append([]bench.Snapshot{readings[before]}, snaps...)
		}
	}
	if len(snaps) < 2 {
		return nil
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	secs := last.At.Sub(first.At).Seconds()
	inc := func(name string) float64 { return value(last, name) - value(first, name) }
	rate := func(name string) float64 {
		if secs <= 0 {
			return 0
		}
		return inc(name) / secs
	}
	hist := func(name string) object {
		h := bench.HistIncrease(first, last, name, []float64{50, 90, 99})
		q := func(i int) float64 {
			if i < len(h.Percentiles) {
				return h.Percentiles[i].Value / 1000
			}
			return 0
		}
		return object{{"mean", h.Mean / 1000}, {"median", q(0)}, {"p90", q(1)}, {"p99", q(2)}}
	}
	gauge := func(name string) object {
		var xs []float64
		for _, s := range snaps {
			xs = append(xs, value(s, name))
		}
		slices.Sort(xs)
		return object{{"mean", bench.Mean(xs)}, {"median", bench.SortedPercentile(xs, 50)}, {"p90", bench.SortedPercentile(xs, 90)}, {"p99", bench.SortedPercentile(xs, 99)}}
	}
	ratio := func(num, den string) float64 {
		if d := inc(den); d > 0 {
			return inc(num) / d * 100
		}
		return 0
	}
	const v0 = "vllm:"
	return object{
		{"benchmark_time_seconds", 0.0}, {"load_summary", object{}},
		{"successes", object{
			{"count", inc(v0 + "request_success_total")}, {"rate", rate(v0 + "request_success_total")},
			{"prompt_len", object{{"mean", rate(v0 + "prompt_tokens_total")}, {"rate", rate(v0 + "prompt_tokens_total")}}},
			{"output_len", object{{"mean", rate(v0 + "generation_tokens_total")}, {"rate", rate(v0 + "generation_tokens_total")}}},
			{"queue_len", object{{"mean", gauge(v0 + "num_requests_waiting")[0].Value}}},
			{"request_latency", hist(v0 + "e2e_request_latency_seconds")},
			{"time_to_first_token", hist(v0 + "time_to_first_token_seconds")},
			{"time_per_output_token", hist(v0 + "request_time_per_output_token_seconds")},
			{"kv_cache_usage_percentage", gauge(v0 + "kv_cache_usage_perc")},
			{"num_requests_swapped", object{{"mean", 0.0}}},
			{"num_preemptions_total", object{{"mean", inc(v0 + "num_preemptions_total")}}},
			{"prefix_cache_hit_percent", object{{"mean", ratio(v0+"prefix_cache_hits_total", v0+"prefix_cache_queries_total")}}},
			{"inter_token_latency", hist(v0 + "inter_token_latency_seconds")},
			{"num_requests_running", object{{"mean", gauge(v0 + "num_requests_running")[0].Value}}},
			{"request_queue_time", hist(v0 + "request_queue_time_seconds")},
			{"request_inference_time", hist(v0 + "request_inference_time_seconds")},
			{"request_prefill_time", hist(v0 + "request_prefill_time_seconds")},
			{"request_decode_time", hist(v0 + "request_decode_time_seconds")},
			{"request_prompt_tokens", hist(v0 + "request_prompt_tokens")},
			{"request_generation_tokens", hist(v0 + "request_generation_tokens")},
			{"request_max_num_generation_tokens", hist(v0 + "request_max_num_generation_tokens")},
			{"request_params_n", hist(v0 + "request_params_n")},
			{"request_params_max_tokens", hist(v0 + "request_params_max_tokens")},
			{"request_success_count", inc(v0 + "request_success_total")},
			{"iteration_tokens", hist(v0 + "iteration_tokens_total")},
			{"prompt_tokens_cached", inc(v0 + "prompt_tokens_cached_total")},
			{"external_prefix_cache_hit_percent", object{{"mean", ratio(v0+"external_prefix_cache_hits_total", v0+"external_prefix_cache_queries_total")}}},
			{"mm_cache_hit_percent", object{{"mean", ratio(v0+"mm_cache_hits_total", v0+"mm_cache_queries_total")}}},
			{"corrupted_requests", inc(v0 + "corrupted_requests_total")},
			{"request_prefill_kv_computed_tokens", hist(v0 + "request_prefill_kv_computed_tokens")},
			{"kv_block_idle_before_evict", hist(v0 + "kv_block_idle_before_evict_seconds")},
			{"kv_block_lifetime", hist(v0 + "kv_block_lifetime_seconds")},
			{"kv_block_reuse_gap", hist(v0 + "kv_block_reuse_gap_seconds")},
		}},
		{"failures", object{}},
	}
}

// value is a family of the reading summed over its label sets (0 when
// absent).
func value(s bench.Snapshot, name string) float64 {
	v, _ := s.Scrape.Sum(name, nil)
	return v
}

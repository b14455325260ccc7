package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// seriesValues scrapes reg and flattens it to "name{extra labels}" → value,
// leaving out model_name and engine; histograms give _count, _sum and
// _bucket{le=...} entries.
func seriesValues(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, mf := range parse(t, scrape(t, reg)) {
		for _, m := range mf.GetMetric() {
			var extra []string
			for _, lp := range m.GetLabel() {
				if n := lp.GetName(); n != labelModel && n != labelEngine {
					extra = append(extra, fmt.Sprintf("%s=%q", n, lp.GetValue()))
				}
			}
			key := func(suffix string, more ...string) string {
				l := append(slices.Clone(extra), more...)
				if len(l) == 0 {
					return name + suffix
				}
				return name + suffix + "{" + strings.Join(l, ",") + "}"
			}
			if h := m.GetHistogram(); h != nil {
				out[key("_count")] = float64(h.GetSampleCount())
				out[key("_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[key("_bucket", fmt.Sprintf("le=%q", metricspec.PyFloat(b.GetUpperBound())))] = float64(b.GetCumulativeCount())
				}
				continue
			}
			if s := m.GetSummary(); s != nil {
				out[key("_count")] = float64(s.GetSampleCount())
				out[key("_sum")] = s.GetSampleSum()
				continue
			}
			out[key("")] = seriesValue(m)
		}
	}
	return out
}

// checkSeries compares the listed series only.
func checkSeries(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	sub := map[string]float64{}
	for k := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("series %s is not exported", k)
			continue
		}
		sub[k] = v
	}
	if diff := cmp.Diff(want, sub, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

func TestObserveStep(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.ObserveStep(&engine.StepEvent{
		Start: t0, End: t0.Add(40 * time.Millisecond), ExecuteTime: 30 * time.Millisecond,
		PrefixQueries: 100, PrefixHits: 32, Preemptions: 1,
		PromptTokens: 100, CachedTokens: 32, GenerationTokens: 3, IterationTokens: 71,
		TTFTs: []float64{0.05}, ITLs: []float64{0.02, 0.03},
		FLOPs: 1e12, ReadBytes: 2e9, WriteBytes: 1e8,
	})
	m.ObserveStep(&engine.StepEvent{
		Start: t0, End: t0.Add(15 * time.Millisecond), ExecuteTime: 10 * time.Millisecond,
		GenerationTokens: 4, IterationTokens: 4, ITLs: []float64{0.02, 0.02, 0.02, 0.02},
	})
	// A step that only ran a chunk of a long prefill: no output, so no
	// iteration sample, but it was a step and it kept the executor busy.
	m.ObserveStep(&engine.StepEvent{
		Start: t0, End: t0.Add(5 * time.Millisecond), ExecuteTime: 5 * time.Millisecond,
		NumTokens: 2048, NumPrefillTokens: 2048, PrefixQueries: 4096,
	})
	checkSeries(t, seriesValues(t, reg), map[string]float64{
		"vllm:prompt_tokens_total":                                          100,
		`vllm:prompt_tokens_by_source_total{source="local_compute"}`:        68,
		`vllm:prompt_tokens_by_source_total{source="local_cache_hit"}`:      32,
		`vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}`: 0,
		"vllm:prompt_tokens_cached_total":                                   32,
		"vllm:generation_tokens_total":                                      7,
		"vllm:num_preemptions_total":                                        1,
		"vllm:prefix_cache_queries_total":                                   4196,
		"vllm:prefix_cache_hits_total":                                      32,
		"vllm:external_prefix_cache_queries_total":                          0,
		"vllm:estimated_flops_per_gpu_total":                                1e12,
		"vllm:estimated_read_bytes_per_gpu_total":                           2e9,
		"vllm:estimated_write_bytes_per_gpu_total":                          1e8,
		"glassbox_executor_busy_seconds_total":                              0.045,
		"glassbox_engine_steps_total":                                       3,
		"glassbox_engine_host_seconds_total":                                0.015,
		"glassbox_engine_step_duration_seconds_count":                       3,
		"glassbox_engine_step_duration_seconds_sum":                         0.06,
		"vllm:iteration_tokens_total_count":                                 2,
		"vllm:iteration_tokens_total_sum":                                   75,
		`vllm:iteration_tokens_total_bucket{le="1.0"}`:                      0,
		`vllm:iteration_tokens_total_bucket{le="8.0"}`:                      1,
		`vllm:iteration_tokens_total_bucket{le="128.0"}`:                    2,
		"vllm:time_to_first_token_seconds_count":                            1,
		`vllm:time_to_first_token_seconds_bucket{le="0.04"}`:                0,
		`vllm:time_to_first_token_seconds_bucket{le="0.06"}`:                1,
		"vllm:inter_token_latency_seconds_count":                            6,
		"vllm:inter_token_latency_seconds_sum":                              0.13,
		`vllm:inter_token_latency_seconds_bucket{le="0.025"}`:               5,
	})
}

// timeline builds a FinishedEvent's timestamps from offsets in
// milliseconds after arrival; a negative offset leaves the stamp zero.
func timeline(f *engine.FinishedEvent, queued, scheduled, first, last, finished int) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time {
		if ms < 0 {
			return time.Time{}
		}
		return t0.Add(time.Duration(ms) * time.Millisecond)
	}
	f.Arrival, f.Queued, f.FirstScheduled, f.FirstToken, f.LastToken, f.Finished =
		t0, at(queued), at(scheduled), at(first), at(last), at(finished)
}

func TestObserveFinished(t *testing.T) {
	tests := []struct {
		name string
		ev   engine.FinishedEvent
		tl   [5]int // queued, scheduled, first token, last token, finished (ms)
		want map[string]float64
	}{{
		name: "completed",
		ev:   engine.FinishedEvent{Reason: engine.FinishStop, PromptTokens: 300, CachedTokens: 100, GenerationTokens: 11, MaxTokens: 16},
		tl:   [5]int{10, 110, 410, 2410, 2420},
		want: map[string]float64{
			`vllm:request_success_total{finished_reason="stop"}`:  1,
			`vllm:request_success_total{finished_reason="abort"}`: 0,
			"vllm:e2e_request_latency_seconds_sum":                2.42,
			"vllm:request_queue_time_seconds_sum":                 0.1,
			"vllm:request_prefill_time_seconds_sum":               0.3,
			"vllm:request_decode_time_seconds_sum":                2.0,
			"vllm:request_inference_time_seconds_sum":             2.3,
			"vllm:request_time_per_output_token_seconds_count":    1,
			"vllm:request_time_per_output_token_seconds_sum":      0.2,
			"vllm:request_prompt_tokens_sum":                      300,
			"vllm:request_generation_tokens_sum":                  11,
			"vllm:request_prefill_kv_computed_tokens_sum":         200,
			"vllm:request_params_max_tokens_sum":                  16,
			"vllm:request_params_n_sum":                           1,
			"vllm:request_max_num_generation_tokens_sum":          11,
			`vllm:request_generation_tokens_bucket{le="10.0"}`:    0,
			`vllm:request_generation_tokens_bucket{le="20.0"}`:    1,
		},
	}, {
		// Every phase histogram counts every finished request (as vLLM's
		// do, so each _count equals request_success_total); the phases it
		// never reached count 0 seconds.
		name: "aborted in the queue",
		ev:   engine.FinishedEvent{Reason: engine.FinishAbort, PromptTokens: 50},
		tl:   [5]int{1, -1, -1, -1, 700},
		want: map[string]float64{
			`vllm:request_success_total{finished_reason="abort"}`: 1,
			"vllm:e2e_request_latency_seconds_count":              1,
			"vllm:e2e_request_latency_seconds_sum":                0.7,
			"vllm:request_queue_time_seconds_count":               1,
			"vllm:request_queue_time_seconds_sum":                 0,
			"vllm:request_prefill_time_seconds_count":             1,
			"vllm:request_decode_time_seconds_count":              1,
			"vllm:request_inference_time_seconds_count":           1,
			"vllm:request_inference_time_seconds_sum":             0,
			"vllm:request_time_per_output_token_seconds_count":    1,
			"vllm:request_num_preemptions_count":                  1,
			"vllm:request_num_preemptions_sum":                    0,
			"vllm:request_prompt_tokens_sum":                      50,
			"vllm:request_generation_tokens_count":                1,
			"vllm:request_params_max_tokens_count":                0,
			"vllm:request_params_n_count":                         1,
		},
	}, {
		name: "one output token",
		ev:   engine.FinishedEvent{Reason: engine.FinishLength, PromptTokens: 8, GenerationTokens: 1, MaxTokens: 1},
		tl:   [5]int{0, 5, 50, 50, 51},
		want: map[string]float64{
			`vllm:request_success_total{finished_reason="length"}`: 1,
			"vllm:request_decode_time_seconds_count":               1,
			"vllm:request_decode_time_seconds_sum":                 0,
			"vllm:request_time_per_output_token_seconds_count":     1,
			"vllm:request_time_per_output_token_seconds_sum":       0,
		},
	}, {
		name: "reason unknown to vLLM counts as error",
		ev:   engine.FinishedEvent{Reason: "exploded"},
		tl:   [5]int{0, -1, -1, -1, 1},
		want: map[string]float64{
			`vllm:request_success_total{finished_reason="error"}`: 1,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, reg := newTestMetrics(t, testConfig())
			ev := tt.ev
			timeline(&ev, tt.tl[0], tt.tl[1], tt.tl[2], tt.tl[3], tt.tl[4])
			m.ObserveFinished(&ev)
			checkSeries(t, seriesValues(t, reg), tt.want)
		})
	}
}

// TestParallelSampling checks that the per-parent histograms see one
// observation per group of n, when its last child finishes, while
// per-sequence ones see every child; two groups interleave.
func TestParallelSampling(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	finish := func(group string, size, gen int, reason engine.FinishReason) {
		ev := engine.FinishedEvent{Group: group, GroupSize: size, Reason: reason, PromptTokens: 10, GenerationTokens: gen}
		timeline(&ev, 0, 1, 2, 3, 4)
		m.ObserveFinished(&ev)
	}
	steps := []struct {
		group     string
		size, gen int
		reason    engine.FinishReason
		wantN     float64 // request_params_n_count after this child
	}{
		{"p", 3, 5, engine.FinishStop, 0},
		{"q", 2, 40, engine.FinishLength, 0},
		{"p", 3, 9, engine.FinishLength, 0},
		{"p", 3, 7, engine.FinishStop, 1},
		{"q", 2, 3, engine.FinishStop, 2},
	}
	for i, s := range steps {
		finish(s.group, s.size, s.gen, s.reason)
		if got := seriesValues(t, reg)["vllm:request_params_n_count"]; got != s.wantN {
			t.Fatalf("after child %d: request_params_n_count = %v, want %v", i, got, s.wantN)
		}
	}
	checkSeries(t, seriesValues(t, reg), map[string]float64{
		"vllm:request_params_n_sum":                            5,
		`vllm:request_params_n_bucket{le="2.0"}`:               1,
		`vllm:request_params_n_bucket{le="5.0"}`:               2,
		"vllm:request_max_num_generation_tokens_sum":           49, // 9 for p, 40 for q
		"vllm:request_generation_tokens_count":                 5,
		"vllm:request_generation_tokens_sum":                   64,
		`vllm:request_success_total{finished_reason="stop"}`:   3,
		`vllm:request_success_total{finished_reason="length"}`: 2,
	})
	if len(m.groups) != 0 {
		t.Errorf("%d groups still open after all children finished", len(m.groups))
	}
}

func TestGaugesReadStatsAtScrape(t *testing.T) {
	cfg := testConfig()
	var stats engine.Stats
	cfg.Stats = func() engine.Stats { return stats }
	_, reg := newTestMetrics(t, cfg)
	for _, s := range []engine.Stats{
		{Running: 3, Waiting: 5, KVBlocks: 100, KVFree: 40, KVCached: 15, KVUsage: 0.6},
		{Running: 1, Waiting: 0, KVBlocks: 100, KVFree: 99, KVCached: 90, KVUsage: 0.01},
	} {
		stats = s
		checkSeries(t, seriesValues(t, reg), map[string]float64{
			"vllm:num_requests_running":                              float64(s.Running),
			"vllm:num_requests_waiting":                              float64(s.Waiting),
			`vllm:num_requests_waiting_by_reason{reason="capacity"}`: float64(s.Waiting),
			`vllm:num_requests_waiting_by_reason{reason="deferred"}`: 0,
			"vllm:kv_cache_usage_perc":                               s.KVUsage,
			`glassbox_kv_cache_blocks{state="free"}`:                 float64(s.KVFree - s.KVCached),
			`glassbox_kv_cache_blocks{state="cached"}`:               float64(s.KVCached),
			`glassbox_kv_cache_blocks{state="used"}`:                 float64(s.KVBlocks - s.KVFree),
		})
	}
}

// TestObserveWhileScraping runs the engine-side calls against concurrent
// scrapes; -race checks that they share nothing unsafely.
func TestObserveWhileScraping(t *testing.T) {
	m, reg := newTestMetrics(t, testConfig())
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
		}
	})
	for i := range 200 {
		m.ObserveStep(&engine.StepEvent{GenerationTokens: 1, ITLs: []float64{0.01}})
		ev := engine.FinishedEvent{Reason: engine.FinishStop, Group: fmt.Sprint(i / 2), GroupSize: 2}
		m.ObserveFinished(&ev)
	}
	wg.Wait()
	checkSeries(t, seriesValues(t, reg), map[string]float64{
		"vllm:generation_tokens_total": 200,
		"vllm:request_params_n_count":  100,
	})
}

// TestHiddenFamiliesCarryTheirReplacements: with deprecated families
// shown, each reads what its replacement reads.
func TestHiddenFamiliesCarryTheirReplacements(t *testing.T) {
	cfg := testConfig()
	hidden, err := metricspec.HiddenFor("0.10")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stats = func() engine.Stats { return engine.Stats{KVUsage: 0.37} }
	m, reg := newTestMetrics(t, cfg)
	m.ObserveStep(&engine.StepEvent{PrefixQueries: 40, PrefixHits: 24, ITLs: []float64{0.02, 0.03}})
	got := seriesValues(t, WithHidden(reg, hidden))
	for hiddenName, of := range map[string]string{
		"vllm:gpu_cache_usage_perc":                "vllm:kv_cache_usage_perc",
		"vllm:gpu_prefix_cache_queries_total":      "vllm:prefix_cache_queries_total",
		"vllm:gpu_prefix_cache_hits_total":         "vllm:prefix_cache_hits_total",
		"vllm:time_per_output_token_seconds_count": "vllm:inter_token_latency_seconds_count",
		"vllm:time_per_output_token_seconds_sum":   "vllm:inter_token_latency_seconds_sum",
	} {
		if v, ok := got[hiddenName]; !ok || v != got[of] || v == 0 {
			t.Errorf("%s = %v (present %v), want %s's %v", hiddenName, v, ok, of, got[of])
		}
	}
}

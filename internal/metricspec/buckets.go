package metricspec

// Histogram bucket sets, copied from vLLM (vllm/v1/metrics/loggers.py at the
// basis commit of reference/vllm-observability.md §1a). They are part of the
// compatibility contract: dashboards and recording rules group by le, so a
// different boundary is a different series. Functions, not package
// variables, so that no caller can mutate a shared slice.

// TTFTBuckets is vLLM's set for vllm:time_to_first_token_seconds.
func TTFTBuckets() []float64 {
	return []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
}

// TokenStepBuckets is vLLM's set for inter-token latency and per-request
// time per output token.
func TokenStepBuckets() []float64 {
	return []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
}

// RequestLatencyBuckets is vLLM's set for e2e, queue, prefill, decode and
// inference time.
func RequestLatencyBuckets() []float64 {
	return []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
}

// IterationTokenBuckets is vLLM's fixed set for vllm:iteration_tokens_total;
// it does not follow --max-num-batched-tokens.
func IterationTokenBuckets() []float64 {
	return []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
}

// NumPreemptionsBuckets is vLLM's set for vllm:request_num_preemptions.
func NumPreemptionsBuckets() []float64 {
	return []float64{1, 2, 3, 4, 5, 10, 20}
}

// ParamsNBuckets is vLLM's set for vllm:request_params_n.
func ParamsNBuckets() []float64 {
	return []float64{1, 2, 5, 10, 20}
}

// StepDurationBuckets covers an engine step from a tiny CPU decode (100 µs)
// to a long prefill on a slow machine (10 s).
func StepDurationBuckets() []float64 {
	return []float64{
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
		0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	}
}

// HTTPDurationBuckets is prometheus-fastapi-instrumentator's low-resolution
// set for http_request_duration_seconds.
func HTTPDurationBuckets() []float64 {
	return []float64{0.1, 0.5, 1}
}

// HTTPHighResBuckets is the instrumentator's set for
// http_request_duration_highr_seconds.
func HTTPHighResBuckets() []float64 {
	return []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5,
		3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60,
	}
}

// OneTwoFiveBuckets is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, …
// stopping before the first value greater than maxValue. It sizes every
// token-count histogram from --max-model-len.
func OneTwoFiveBuckets(maxValue int) []float64 {
	var out []float64
	for scale := 1; ; scale *= 10 {
		for _, m := range [...]int{1, 2, 5} {
			v := m * scale
			if v > maxValue {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

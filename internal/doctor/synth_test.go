package doctor

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// load describes a synthetic target: gauges per reading, counters as
// rates per second, per-request times in seconds. It builds the windows
// the rule tests reason over, so each rule is tested on its signals alone.
type load struct {
	n                                int // readings, one second apart
	running, waiting, kv             func(i int) float64
	busy, steps, gen, prompt, cached float64
	host                             float64 // host seconds per second within steps
	restartAt                        int     // a reading at which the target restarted: every counter back to zero
	preempt, success, aborts         float64
	queries, hits                    float64
	queue, prefill, decode           float64 // per request
	ttft, itl                        func(i int) float64
	genRate                          func(i int) float64 // overrides gen when set
	maxSeqs, maxBatched, blocks      int
	prefix                           bool
	vllm                             bool    // no glassbox_* series
	dcgm                             float64 // DCGM's graphics-engine activity beside the target; 0 for no DCGM
	gpuName                          string  // DCGM's modelName
	// vLLM's work estimates per second (MFU and MBU), and the GPU's peaks
	// in glassbox's gauges (0: not exported).
	flops, readBytes, peakFLOPs, peakBW float64
	// engines are the data-parallel ranks (vLLM's engine label); the
	// counters above are their sums.
	engines int
	// quantization is glassbox_executor_info's (the weights' type).
	quantization string
	// offloadGiB is vllm:cache_config_info's kv_offloading_size (0: none).
	offloadGiB float64
	// dead is the reason glassbox_engine_dead names from reading deadAt
	// on ("": the engine serves throughout).
	dead   string
	deadAt int
	// Speculative decoding: verify passes per second and each draft
	// position's acceptance (accepted there per pass); no families when
	// specPasses is 0. specLen is the draft tokens per pass (k when 0).
	specPasses, specLen float64
	specPos             []float64
}

// speculating sets a speculative target: passes verify passes a second
// with k drafts each, accepted at the rate acc overall, the first
// positions more often than the last.
func (l *load) speculating(passes float64, k int, acc float64) {
	l.specPasses, l.specLen, l.specPos = passes, float64(k), make([]float64, k)
	for i := range k {
		// weights from 1.6 down to 0.4 (mean 1): position i's acceptance.
		w := 1.0
		if k > 1 {
			w = 1.6 - 1.2*float64(i)/float64(k-1)
		}
		l.specPos[i] = min(1, acc*w)
	}
}

// healthy is a lightly loaded glassbox target.
func healthy() load {
	return load{n: 20,
		running: constant(2), waiting: constant(0), kv: constant(0.1),
		busy: 0.3, steps: 100, gen: 200, prompt: 200, success: 2,
		queue: 0.005, prefill: 0.02, decode: 0.5,
		ttft: constantI(0.03), itl: constantI(0.006),
		maxSeqs: 256, maxBatched: 8192, blocks: 1000, prefix: true}
}

func testTime() time.Time { return time.Unix(1_700_000_000, 0) }

func constant(v float64) func(int) float64  { return func(int) float64 { return v } }
func constantI(v float64) func(int) float64 { return constant(v) }

var testBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, math.Inf(1)}

// tokenBuckets are vLLM's for vllm:iteration_tokens_total.
var tokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, math.Inf(1)}

func (l load) window() *Window {
	w := &Window{Source: "metrics", Target: "http://test/metrics", Selector: `{instance="test:8000"}`,
		Info: map[string]map[string]string{}, Present: map[string]bool{}}
	w.Info[metricspec.CacheConfigInfo] = map[string]string{"block_size": "16", "num_gpu_blocks": strconv.Itoa(l.blocks),
		"enable_prefix_caching": map[bool]string{true: "True", false: "False"}[l.prefix], "gpu_memory_utilization": "0.92",
		"kv_cache_memory_bytes": strconv.Itoa(l.blocks * 16 * 131072), "kv_offloading_size": "None"}
	if l.offloadGiB > 0 {
		w.Info[metricspec.CacheConfigInfo]["kv_offloading_size"] = strconv.FormatFloat(l.offloadGiB, 'g', -1, 64)
	}
	if !l.vllm {
		w.Info[metricspec.SchedulerConfigInfo] = map[string]string{"max_num_seqs": strconv.Itoa(l.maxSeqs), "max_num_batched_tokens": strconv.Itoa(l.maxBatched), "max_model_len": "4096"}
		w.Info[metricspec.ExecutorInfo] = map[string]string{"executor": "sim", "hardware": "h200", "model": "llama-3.1-8b", "tensor_parallel_size": "1"}
		if l.quantization != "" {
			w.Info[metricspec.ExecutorInfo]["quantization"] = l.quantization
		}
	}
	if l.engines > 1 {
		w.Info[InfoEngines] = map[string]string{"count": strconv.Itoa(l.engines)}
	}
	t0 := testTime()
	cum := map[string]float64{}
	buckets := map[string]map[float64]float64{}
	observe := func(family string, count, value float64) {
		cum[family+"_count"] += count
		cum[family+"_sum"] += count * value
		if buckets[family] == nil {
			buckets[family] = map[float64]float64{}
		}
		bounds := testBuckets
		if family == metricspec.IterationTokens {
			bounds = tokenBuckets
		}
		for _, le := range bounds {
			if value <= le {
				buckets[family][le] += count
			}
		}
	}
	for i := range l.n {
		if l.restartAt > 0 && i == l.restartAt {
			clear(cum)
			clear(buckets)
		}
		if i > 0 {
			gen := l.gen
			if l.genRate != nil {
				gen = l.genRate(i)
			}
			add := map[string]float64{metricspec.ExecutorBusySeconds: l.busy, metricspec.EngineHostSeconds: l.host, metricspec.EngineSteps: l.steps, metricspec.GenerationTokens: gen, metricspec.PromptTokens: l.prompt, metricspec.PromptTokensCached: l.cached,
				metricspec.EstimatedFLOPsPerGPU: l.flops, metricspec.EstimatedReadBytesPerGPU: l.readBytes,
				metricspec.NumPreemptions: l.preempt, metricspec.RequestSuccess: l.success, keyAborts: l.aborts, metricspec.PrefixCacheQueries: l.queries, metricspec.PrefixCacheHits: l.hits}
			if l.specPasses > 0 {
				add[metricspec.SpecDecodeDrafts], add[metricspec.SpecDecodeDraftTokens] = l.specPasses, l.specPasses*l.specLen
				for j, p := range l.specPos {
					add[keySpecPos(j)] = l.specPasses * p
					add[metricspec.SpecDecodeAcceptedTokens] += l.specPasses * p
				}
			}
			for k, v := range add {
				cum[k] += v
			}
			observe(metricspec.E2ERequestLatency, l.success, l.queue+l.prefill+l.decode)
			observe(metricspec.RequestQueueTime, l.success, l.queue)
			observe(metricspec.RequestPrefillTime, l.success, l.prefill)
			observe(metricspec.RequestDecodeTime, l.success, l.decode)
			observe(metricspec.RequestInferenceTime, l.success, l.prefill+l.decode)
			observe(metricspec.RequestGenerationTokens, l.success, gen/max(l.success, 1))
			observe(metricspec.TimeToFirstToken, l.success, l.ttft(i))
			observe(metricspec.InterTokenLatency, gen, l.itl(i))
			if l.steps > 0 {
				observe(metricspec.IterationTokens, l.steps, (l.prompt-l.cached+gen)/l.steps)
				observe(metricspec.EngineStepDuration, l.steps, (l.busy+l.host)/l.steps)
			}
		}
		s := Snapshot{T: t0.Add(time.Duration(i) * time.Second), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
		s.Values[metricspec.NumRequestsRunning], s.Values[metricspec.NumRequestsWaiting], s.Values[metricspec.KVCacheUsagePerc] = l.running(i), l.waiting(i), l.kv(i)
		for _, spec := range ScalarSeries() {
			if _, ok := s.Values[spec.Key]; !ok && spec.Key != metricspec.ExecutorPeakFLOPs {
				s.Values[spec.Key] = cum[spec.Key]
			}
		}
		if l.peakFLOPs > 0 {
			s.Values[metricspec.ExecutorPeakFLOPs], s.Values[metricspec.ExecutorPeakMemBandwidth] = l.peakFLOPs, l.peakBW
		}
		if l.dead != "" && i >= l.deadAt {
			s.Values[keyEngineDead(l.dead)] = 1
		}
		// Without speculation the families are absent; with it, positions
		// 0..k-1 exist.
		if l.specPasses == 0 {
			delete(s.Values, metricspec.SpecDecodeDrafts)
			delete(s.Values, metricspec.SpecDecodeDraftTokens)
			delete(s.Values, metricspec.SpecDecodeAcceptedTokens)
		}
		for j := len(l.specPos); j < maxSpecPositions; j++ {
			delete(s.Values, keySpecPos(j))
		}
		if l.vllm {
			for k := range s.Values {
				if strings.HasPrefix(k, "glassbox_") {
					delete(s.Values, k)
				}
			}
		}
		for _, f := range dcgmActivities {
			delete(s.Values, f)
		}
		if l.dcgm > 0 {
			s.Values[metricspec.DCGMGREngineActive], s.Values[metricspec.DCGMSMActive] = l.dcgm, 0.8*l.dcgm
			s.Values[metricspec.DCGMTensorActive], s.Values[metricspec.DCGMDRAMActive] = 0.1*l.dcgm, 0.5*l.dcgm
			w.Info[InfoDCGM] = map[string]string{"modelName": l.gpuName}
		}
		for f, b := range buckets {
			s.Buckets[f] = map[float64]float64{}
			for le, c := range b {
				s.Buckets[f][le] = c
			}
		}
		w.Snapshots = append(w.Snapshots, s)
	}
	for _, f := range append(requiredFamilies(), metricspec.CacheConfigInfo) {
		w.Present[f] = true
	}
	return w
}

// diagnose is the doctor with its default thresholds and no hints.
func diagnose(w *Window, client *ClientView) *Report {
	return NewDiagnoser(DefaultThresholds(), Hints{}).Diagnose(w, client)
}

package doctor

import (
	"math"
	"strconv"
	"time"
)

// load describes a synthetic target: gauges per reading, counters as
// rates per second, per-request times in seconds. It builds the windows
// the rule tests reason over, so each rule is tested on its signals alone.
type load struct {
	n                                int // readings, one second apart
	running, waiting, kv             func(i int) float64
	busy, steps, gen, prompt, cached float64
	preempt, success, aborts         float64
	queries, hits                    float64
	queue, prefill, decode           float64 // per request
	ttft, itl                        func(i int) float64
	genRate                          func(i int) float64 // overrides gen when set
	maxSeqs, maxBatched, blocks      int
	prefix                           bool
	vllm                             bool // no glassbox_* series
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

func (l load) window() *Window {
	w := &Window{Source: "metrics", Target: "http://test/metrics", Selector: `{instance="test:8000"}`,
		Info: map[string]map[string]string{}, Present: map[string]bool{}}
	w.Info[mCacheInfo] = map[string]string{"block_size": "16", "num_gpu_blocks": strconv.Itoa(l.blocks),
		"enable_prefix_caching": map[bool]string{true: "True", false: "False"}[l.prefix], "gpu_memory_utilization": "0.92",
		"kv_cache_memory_bytes": strconv.Itoa(l.blocks * 16 * 131072)}
	if !l.vllm {
		w.Info[mSchedInfo] = map[string]string{"max_num_seqs": strconv.Itoa(l.maxSeqs), "max_num_batched_tokens": strconv.Itoa(l.maxBatched), "max_model_len": "4096"}
		w.Info[mExecInfo] = map[string]string{"executor": "sim", "hardware": "h200", "model": "llama-3.1-8b", "tensor_parallel_size": "1"}
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
		for _, le := range testBuckets {
			if value <= le {
				buckets[family][le] += count
			}
		}
	}
	for i := range l.n {
		if i > 0 {
			gen := l.gen
			if l.genRate != nil {
				gen = l.genRate(i)
			}
			add := map[string]float64{mBusy: l.busy, mSteps: l.steps, mGenTokens: gen, mPromptTokens: l.prompt, mPromptCached: l.cached,
				mPreemptions: l.preempt, mSuccess: l.success, keyAborts: l.aborts, mPrefixQueries: l.queries, mPrefixHits: l.hits}
			for k, v := range add {
				cum[k] += v
			}
			observe(mE2E, l.success, l.queue+l.prefill+l.decode)
			observe(mQueueTime, l.success, l.queue)
			observe(mPrefillTime, l.success, l.prefill)
			observe(mDecodeTime, l.success, l.decode)
			observe(mInferenceTime, l.success, l.prefill+l.decode)
			observe(mReqGen, l.success, gen/max(l.success, 1))
			observe(mTTFT, l.success, l.ttft(i))
			observe(mITL, gen, l.itl(i))
		}
		s := Snapshot{T: t0.Add(time.Duration(i) * time.Second), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
		s.Values[mRunning], s.Values[mWaiting], s.Values[mKVUsage] = l.running(i), l.waiting(i), l.kv(i)
		for _, spec := range scalarSeries() {
			if _, ok := s.Values[spec.key]; !ok && spec.key != mPeakFLOPs {
				s.Values[spec.key] = cum[spec.key]
			}
		}
		if l.vllm {
			delete(s.Values, mBusy)
			delete(s.Values, mSteps)
		}
		for f, b := range buckets {
			s.Buckets[f] = map[float64]float64{}
			for le, c := range b {
				s.Buckets[f][le] = c
			}
		}
		w.Snapshots = append(w.Snapshots, s)
	}
	for _, f := range append(requiredFamilies(), mCacheInfo) {
		w.Present[f] = true
	}
	return w
}

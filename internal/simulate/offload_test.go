package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// cyclePrefixes sends n requests, one every gap, cycling over k prompts
// of a 1,504-token shared prefix each and a 32-token question of their
// own: a cyclic order that defeats an LRU cache smaller than the k
// prefixes.
func cyclePrefixes(n, k int, gap time.Duration) *workload.Plan {
	var samples []workload.Sample
	var offsets []time.Duration
	for i := range n {
		p := append(distinct(1504, 1600*(i%k)), distinct(32, 20000+i*32)...)
		samples = append(samples, workload.Sample{PromptIDs: p, PromptLen: len(p), OutputLen: 8})
		offsets = append(offsets, time.Duration(i)*gap)
	}
	return &workload.Plan{Prompts: samples, Stages: []workload.Stage{{Offsets: offsets, Duration: offsets[len(offsets)-1]}}}
}

// TestOffloadHitsSaveRecompute: eight 1,504-token prefixes in turn on a
// GPU whose 1 GiB of KV holds five of them: without an offload tier every
// request recomputes its prefix; with 2 GiB of host memory, every request
// after the first round loads its 94 blocks over PCIe instead (2 MiB a
// block, 188 MiB at the H100's 55 GB/s: 3.6 ms), so its prefill and TTFT
// shrink (78 ms to 40 ms when this was written).
func TestOffloadHitsSaveRecompute(t *testing.T) {
	run := func(offloadGiB float64) (cached int, meanTTFT time.Duration) {
		rc := server()
		rc.KVCacheMemoryBytes = 1 << 30
		rc.KVOffloadingSize = offloadGiB
		res, err := Run(context.Background(), Config{Replica: rc, Plan: cyclePrefixes(48, 8, 500*time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Outputs {
			if !o.Success || o.CachedTokens == nil {
				t.Fatalf("output %+v", o)
			}
			cached += *o.CachedTokens
			meanTTFT += o.TTFT / time.Duration(len(res.Outputs))
		}
		return cached, meanTTFT
	}
	offCached, offTTFT := run(0)
	onCached, onTTFT := run(2)
	if offCached > 40*32 { // a partial block or two at most
		t.Errorf("without offload %d prompt tokens were cached: the cycle should defeat the GPU's LRU", offCached)
	}
	if want := 40 * 1504; onCached < want {
		t.Errorf("with offload %d prompt tokens were cached, want at least %d (every request after the first 8 loads its prefix)", onCached, want)
	}
	if onTTFT*10 > offTTFT*7 { // the frontend's own time is the same in both
		t.Errorf("mean TTFT %v with offload, %v without: loading the prefix should save at least 30%%", onTTFT, offTTFT)
	}
	t.Logf("mean TTFT %v without offload, %v with; %d and %d cached prompt tokens", offTTFT, onTTFT, offCached, onCached)
}

// distinct are n token ids from the from'th on, none repeated within
// 30,000 (ids wraps at 1,000).
func distinct(n, from int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 300 + (from+i)%30000
	}
	return out
}

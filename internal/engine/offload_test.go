package engine

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// offloadRecorder keeps what the offload tier and the residency tracker
// report.
type offloadRecorder struct {
	mu                            sync.Mutex
	computed                      int // prompt tokens computed (prefill chunks)
	externalQueries, externalHits int
	externalTokens, cached        int
	loads, stores                 []Transfer
	storeBlocks                   []int
	evictions                     []BlockEviction
}

func (r *offloadRecorder) ObserveStep(s *StepEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.computed += s.NumPrefillTokens
	r.externalQueries += s.ExternalQueries
	r.externalHits += s.ExternalHits
	r.externalTokens += s.ExternalTokens
	r.cached += s.CachedTokens
	r.loads = append(r.loads, s.Offload.Loads...)
	r.stores = append(r.stores, s.Offload.Stores...)
	r.storeBlocks = append(r.storeBlocks, s.Offload.StoreBlocks...)
	r.evictions = append(r.evictions, s.BlockEvictions...)
}

func (r *offloadRecorder) ObserveFinished(*FinishedEvent) {}

// offloadConfig is a GPU cache of 64 blocks of 4 tokens (one 256-token
// context) beside a host tier of 200, each block 1 MiB over a 1 GB/s link.
func offloadConfig(host int) Config {
	cfg := testConfig()
	cfg.NumBlocks, cfg.MaxNumBatchedTokens = 64, 256
	if host > 0 {
		cfg.Offload = Offload{Blocks: host, BlockBytes: 1 << 20, Bandwidth: 1e9}
	}
	return cfg
}

// runEvicted serves a 200-token prompt, then an unrelated one that evicts
// it from the GPU's prefix cache, then the first prompt's prefix again,
// each a second after the last ended (its stores done): the third
// request's output and its TTFT.
func runEvicted(t *testing.T, cfg Config, rec *offloadRecorder) (last Output, ttft time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		e, stop := start(t, cfg, &countExec{}, rec)
		defer stop()
		shared := prompt(200, 5000)
		for i, p := range [][]int{append(shared, 1), prompt(252, 9000)} {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: p, Params: params(1)})
			if err != nil {
				t.Fatal(err)
			}
			collect(s)
			time.Sleep(time.Second) // the client's pause: the stores end
		}
		s, err := e.Submit(&Request{ID: "again", Prompt: append(shared, 2), Params: params(1)})
		if err != nil {
			t.Fatal(err)
		}
		_, last = collect(s)
		ttft = last.Timing.FirstToken.Sub(last.Timing.Arrival)
		synctest.Wait()
		if e.kv.NumFree() != e.kv.NumBlocks() {
			t.Errorf("%d of %d GPU blocks free at the end", e.kv.NumFree(), e.kv.NumBlocks())
		}
	})
	return last, ttft
}

// TestOffloadLoadsAnEvictedPrefix: a prefix evicted from the GPU's cache
// (all but its first block, by a 252-token prompt in 64 blocks) is loaded
// back from the host tier (49 blocks: 51.4 ms at 1 GB/s, which the request
// waits) instead of recomputed; every block computed was stored as it was
// produced; without the tier it is recomputed.
func TestOffloadLoadsAnEvictedPrefix(t *testing.T) {
	on := &offloadRecorder{}
	out, ttft := runEvicted(t, offloadConfig(200), on)
	off := &offloadRecorder{}
	outOff, _ := runEvicted(t, offloadConfig(0), off)

	if out.CachedTokens != 200 || outOff.CachedTokens != 4 {
		t.Errorf("cached tokens of the third request: %d with the tier, %d without; want 200 and 4", out.CachedTokens, outOff.CachedTokens)
	}
	if on.externalHits != 196 || on.externalTokens != 196 || on.externalQueries != 201+252+201 {
		t.Errorf("offload look-ups: %d hits, %d tokens loaded, %d queried; want 196, 196, 654", on.externalHits, on.externalTokens, on.externalQueries)
	}
	if off.externalQueries != 0 || len(off.loads)+len(off.stores) != 0 {
		t.Errorf("without a tier: %d queries, %d loads, %d stores", off.externalQueries, len(off.loads), len(off.stores))
	}
	if on.computed != off.computed-196 {
		t.Errorf("prompt tokens computed: %d with the tier, %d without: the load should save 196", on.computed, off.computed)
	}
	want := 49 * float64(1<<20) / 1e9
	if len(on.loads) != 1 || on.loads[0].Bytes != 49<<20 || math.Abs(on.loads[0].Seconds-want) > 1e-6 {
		t.Fatalf("loads %+v, want one of 49 MiB in %.4fs", on.loads, want)
	}
	if ttft < time.Duration(want*float64(time.Second)) {
		t.Errorf("TTFT %v is shorter than the load it waited for (%.4fs)", ttft, want)
	}
	// 50 blocks of the first prompt, 63 of the second; the third's 50
	// are held already.
	blocks := 0
	for _, n := range on.storeBlocks {
		blocks += n
	}
	if blocks != 113 || len(on.stores) != len(on.storeBlocks) {
		t.Errorf("stores started %v (%d blocks), %d completed; want 113 blocks, each completed", on.storeBlocks, blocks, len(on.stores))
	}
}

// TestAbortMidLoadFreesEverything: a request aborted while its prefix
// loads ends as aborted, and its GPU blocks and host pins are released.
func TestAbortMidLoadFreesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := offloadConfig(200)
		cfg.Offload.Bandwidth = 1e6 // 1 s a block: the load outlives the abort
		e, stop := start(t, cfg, &countExec{}, nil)
		defer stop()
		shared := prompt(200, 5000)
		for i, p := range [][]int{append(shared, 1), prompt(252, 9000)} {
			s, _ := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: p, Params: params(1)})
			collect(s)
		}
		time.Sleep(time.Hour) // the stores end
		s, _ := e.Submit(&Request{ID: "again", Prompt: append(shared, 2), Params: params(1)})
		time.Sleep(time.Second)
		if st := e.Stats(); st.Offload.LoadsInFlight != 1 || st.Offload.Loading != 49 || st.Waiting != 1 {
			t.Fatalf("mid-load: %+v, waiting %d; want one load of 49 blocks in flight", st.Offload, st.Waiting)
		}
		e.Abort("again")
		_, last := collect(s)
		if last.FinishReason != FinishAbort {
			t.Errorf("finished %q, want abort", last.FinishReason)
		}
		synctest.Wait()
		st := e.Stats()
		if st.KVFree != st.KVBlocks || st.Offload.Loading != 0 || st.Offload.LoadsInFlight != 0 || st.Waiting != 0 {
			t.Errorf("after the abort: %d of %d GPU blocks free, offload %+v, waiting %d", st.KVFree, st.KVBlocks, st.Offload, st.Waiting)
		}
	})
}

// TestKVCacheMetricsSampleEvictions: with every block sampled, a block
// evicted reports its lifetime (allocation to eviction), its idle time
// (last hit to eviction) and the gap between its hits.
func TestKVCacheMetricsSampleEvictions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := offloadConfig(0)
		cfg.KVCacheMetrics, cfg.KVCacheMetricsSample = true, 1
		rec := &offloadRecorder{}
		e, stop := start(t, cfg, &countExec{}, rec)
		defer stop()
		shared := prompt(200, 5000)
		run := func(id string, p []int) {
			s, _ := e.Submit(&Request{ID: id, Prompt: p, Params: params(1)})
			collect(s)
		}
		run("a", append(shared, 1))
		time.Sleep(10 * time.Second)
		run("b", append(shared, 2)) // hits the prefix
		time.Sleep(20 * time.Second)
		run("c", append(shared, 3)) // hits it again
		time.Sleep(30 * time.Second)
		run("d", prompt(252, 9000)) // evicts it
		synctest.Wait()
		var full *BlockEviction
		for i := range rec.evictions {
			if ev := &rec.evictions[i]; ev.NumGaps == 1 {
				full = ev
			}
		}
		if full == nil {
			t.Fatalf("no eviction of a block hit twice among %d", len(rec.evictions))
		}
		if full.Lifetime < 60 || full.Idle < 30 || full.Idle >= full.Lifetime || full.Gaps[0] < 20 || full.Gaps[0] > 21 {
			t.Errorf("eviction %+v: want a lifetime over 60 s, 30 s idle and a 20 s gap", *full)
		}
	})
}

func TestOffloadAndSampleRefusedByName(t *testing.T) {
	for _, c := range []func(*Config){
		func(c *Config) {
			c.Offload = Offload{Blocks: 4, BlockBytes: 1, Bandwidth: 1}
			c.EnablePrefixCaching = false
		},
		func(c *Config) { c.Offload = Offload{Blocks: 4} },
		func(c *Config) { c.KVCacheMetrics, c.KVCacheMetricsSample = true, 1.5 },
	} {
		cfg := testConfig()
		c(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v validated", cfg)
		}
	}
}

// TestStoresInFlightDoNotHoldANewRequest: the stores still in flight when
// the engine goes idle settle in a wait that a new request ends, as
// vLLM's asynchronous stores never hold its scheduler: the request is
// scheduled when it arrives, not when the stores end (about 50 s here),
// and the stores still complete.
func TestStoresInFlightDoNotHoldANewRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := offloadConfig(200)
		cfg.Offload.Bandwidth = 1e6 // about 1 s a block
		e, stop := start(t, cfg, &countExec{}, nil)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(200, 5000), Params: params(1)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		time.Sleep(time.Second) // idle, its stores in flight
		if st := e.Stats(); st.Offload.Storing == 0 {
			t.Fatalf("no store in flight when the engine went idle: %+v", st.Offload)
		}
		s, err = e.Submit(&Request{ID: "b", Prompt: prompt(8, 9000), Params: params(1)})
		if err != nil {
			t.Fatal(err)
		}
		_, last := collect(s)
		if tm := last.Timing; !tm.FirstScheduled.Equal(tm.Arrival) {
			t.Errorf("arrived at %v, first scheduled %v later: it waited on the stores", tm.Arrival, tm.FirstScheduled.Sub(tm.Arrival))
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if st := e.Stats(); st.Offload.Storing != 0 || st.Offload.Held != 52 {
			t.Errorf("an hour later: %+v; want every store done, 52 blocks held (50 of a, 2 of b)", st.Offload)
		}
	})
}

// spinGuard is synctest's clock counting the engine's readings: past
// limit it reports a spin and jumps an hour on, so that a loop spinning
// in a bubble's frozen time ends and the test fails instead of hanging.
type spinGuard struct {
	t     *testing.T
	limit int64
	n     atomic.Int64
	skew  atomic.Int64
}

func (c *spinGuard) Now() time.Time {
	if c.n.Add(1) == c.limit {
		c.t.Errorf("the engine read the clock %d times: it spins", c.limit)
		c.skew.Store(int64(time.Hour))
	}
	return time.Now().Add(time.Duration(c.skew.Load()))
}

func (*spinGuard) Sleep(d time.Duration)                  { time.Sleep(d) }
func (*spinGuard) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TestASubmissionDuringALoadDoesNotSpin: a request submitted while the
// only other one waits on its load runs, and the engine then waits for
// the load again rather than spinning on the submission's wake-up.
func TestASubmissionDuringALoadDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := offloadConfig(200)
		clock := &spinGuard{t: t, limit: 100_000}
		cfg.Clock = clock
		e, stop := start(t, cfg, &countExec{}, nil)
		defer stop()
		shared := prompt(200, 5000)
		for i, p := range [][]int{append(shared, 1), prompt(252, 9000)} {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: p, Params: params(1)})
			if err != nil {
				t.Fatal(err)
			}
			collect(s)
			time.Sleep(time.Second) // the stores end
		}
		again, err := e.Submit(&Request{ID: "again", Prompt: append(shared, 2), Params: params(1)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // its load of 51 ms is in flight
		if st := e.Stats(); st.Offload.LoadsInFlight != 1 {
			t.Fatalf("no load in flight: %+v", st.Offload)
		}
		other, err := e.Submit(&Request{ID: "other", Prompt: prompt(8, 7000), Params: params(1)})
		if err != nil {
			t.Fatal(err)
		}
		collect(other)
		if _, last := collect(again); last.CachedTokens != 200 {
			t.Errorf("the loaded request: %d cached tokens, want 200", last.CachedTokens)
		}
	})
}

// loadChecker checks after every step, on the engine goroutine, that a
// waiting request counts as loaded (its load done, waiting to run: the
// completed_waiting stage of vllm:num_requests_kv_fetch_by_stage)
// only while it holds what it loaded.
type loadChecker struct {
	t         *testing.T
	e         *Engine
	preempted int
}

func (c *loadChecker) ObserveStep(ev *StepEvent) {
	c.preempted += len(ev.Preempted)
	for _, q := range c.e.sched.Waiting() {
		if rs := c.e.slots[q.ID]; rs.loaded && q.NumComputed == 0 {
			c.t.Errorf("step %d: %s counts as loaded but holds no block (%d waiting loaded)", c.e.steps, rs.req.ID, c.e.offloadStats(c.e.clock.Now()).LoadsDone)
		}
	}
}

func (*loadChecker) ObserveFinished(*FinishedEvent) {}

// TestUnblockedLoadIsNotLoaded: two requests whose loads, done, hold the
// free blocks that each needs to go on wait for each other until the
// scheduler frees the later one's (unblock); that one then holds nothing,
// waits to start again and is no longer counted as a load done.
func TestUnblockedLoadIsNotLoaded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &loadChecker{t: t}
		e, stop := start(t, offloadConfig(200), &countExec{}, c)
		c.e = e
		defer stop()
		// run serves its requests together, then pauses while the stores end.
		run := func(reqs ...*Request) {
			var streams []*Stream
			for _, r := range reqs {
				r.Params = params(1)
				s, err := e.Submit(r)
				if err != nil {
					t.Fatal(err)
				}
				streams = append(streams, s)
			}
			for _, s := range streams {
				if _, last := collect(s); last.Err != nil {
					t.Fatal(last.Err)
				}
			}
			time.Sleep(time.Second)
		}
		run(&Request{ID: "p0", Prompt: prompt(121, 1000)})  // 30 blocks of p stored
		run(&Request{ID: "q0", Prompt: prompt(121, 3000)})  // 30 of q
		run(&Request{ID: "big", Prompt: prompt(252, 9000)}) // both evicted from the GPU
		// Each loads 30 blocks, then needs 10 more of the 4 free.
		run(&Request{ID: "p1", Prompt: prompt(160, 1000)}, &Request{ID: "q1", Prompt: prompt(160, 3000)})
		if c.preempted == 0 {
			t.Fatal("no request was freed to unblock the other: the test shows nothing")
		}
	})
}

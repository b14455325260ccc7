package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestBalancerScoresAsVLLM: the rank of least waiting×4 + running wins,
// the first on a tie; counts are read again only after DPStatsInterval,
// and each pick counts one more waiting request on its rank meanwhile.
func TestBalancerScoresAsVLLM(t *testing.T) {
	counts := [][2]int{{1, 0}, {0, 3}, {0, 5}}
	reads := 0
	read := func(r int) (int, int) { reads++; return counts[r][0], counts[r][1] }
	b := NewBalancer(3)
	t0 := time.Unix(1000, 0)
	var got []int
	for i := range 5 {
		got = append(got, b.Pick(t0.Add(time.Duration(i)*10*time.Millisecond), read))
	}
	// Scores 4, 3, 5 → rank 1 (then 7) → rank 0 (then 8) → rank 2 (then 9)
	// → rank 1 (then 11) → rank 0.
	if fmt.Sprint(got) != "[1 0 2 1 0]" || reads != 3 {
		t.Errorf("picks %v with %d reads, want [1 0 2 1 0] with one reading of 3 ranks", got, reads)
	}
	counts = [][2]int{{0, 0}, {0, 0}, {0, 0}}
	if r := b.Pick(t0.Add(DPStatsInterval), read); r != 0 || reads != 6 {
		t.Errorf("after %v: rank %d with %d reads, want a fresh reading and rank 0", DPStatsInterval, r, reads)
	}
}

// TestDataParallelSpreadsAndAborts: two ranks behind one API share a burst
// evenly, each request runs on one rank only, a group's aborts reach the
// ranks its members run on, and every rank ends with its blocks free.
func TestDataParallelSpreadsAndAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ranks []*Engine
		var recs []*recorder
		for range 2 {
			rec := &recorder{}
			e, stop := start(t, testConfig(), &countExec{}, rec)
			defer stop()
			ranks, recs = append(ranks, e), append(recs, rec)
		}
		dp, err := NewDataParallel(ranks)
		if err != nil {
			t.Fatal(err)
		}
		var streams []*Stream
		for i := range 10 {
			s, err := dp.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(8, 100*i), Params: params(4)})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s)
		}
		for _, s := range streams {
			collect(s)
		}
		synctest.Wait()
		for i, rec := range recs {
			if n := rec.finished[FinishLength]; n != 5 {
				t.Errorf("rank %d finished %d requests, want 5 of 10", i, n)
			}
		}
		// A group of two prompts on two ranks, aborted mid-way.
		time.Sleep(time.Second) // the counts are read again: both ranks idle
		g := dp.NewGroup("g", 1)
		for i := range 2 {
			if err := g.Add(Request{Prompt: prompt(8, 7000+i), Params: params(200)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if g.engines[0] == g.engines[1] {
			t.Fatal("both prompts of the group went to one rank")
		}
		time.Sleep(5 * time.Millisecond)
		g.Abort()
		aborted := 0
		for {
			_, o, ok := g.Next(context.Background())
			if !ok {
				break
			}
			if o.Finished && o.FinishReason == FinishAbort {
				aborted++
			}
		}
		synctest.Wait()
		if aborted != 2 {
			t.Errorf("%d members aborted, want 2", aborted)
		}
		if st := rankStats(dp); st.KVFree != st.KVBlocks || st.Running+st.Waiting != 0 {
			t.Errorf("after the abort: %+v", st)
		}
		snap, err := dp.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := testConfig().NumBlocks; snap.Blocks.Total != 2*n || snap.Blocks.Free != 2*n || snap.Config.NumBlocks != 2*n {
			t.Errorf("snapshot's pool %+v (config %d blocks), want both ranks' %d", snap.Blocks, snap.Config.NumBlocks, 2*n)
		}
	})
}

// TestDataParallelDiesWithARank: one rank's executor dying is the server
// dead, as vLLM's engine client sees it: Health and Stats name the rank's
// reason, and every new request, whichever rank the balancer would pick,
// is refused with it.
func TestDataParallelDiesWithARank(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		live, stop := start(t, testConfig(), &countExec{}, nil)
		defer stop()
		dying, stopDying := start(t, testConfig(), &faultExec{good: 1}, nil)
		defer stopDying()
		dp, err := NewDataParallel([]*Engine{live, dying})
		if err != nil {
			t.Fatal(err)
		}
		s, err := dying.Submit(&Request{ID: "x", Prompt: prompt(5, 0), Params: params(10)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		synctest.Wait()
		if err := dp.Health(); !errors.Is(err, ErrEngineDead) {
			t.Fatalf("Health with a dead rank: %v, want the rank's DeadError", err)
		}
		if st := rankStats(dp); st.Dead != DeathExecutorError {
			t.Errorf("Stats.Dead %q, want %q", st.Dead, DeathExecutorError)
		}
		for i := range 4 {
			if _, err := dp.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(5, 10*i), Params: params(2)}); !errors.Is(err, ErrEngineDead) {
				t.Errorf("request %d: %v, want refused as dead", i, err)
			}
		}
	})
}

// rankStats adds the ranks' counts up; gauges of one rank (KV usage) are
// their mean.
func rankStats(d *DataParallel) Stats {
	var s Stats
	for _, e := range d.ranks {
		st := e.Stats()
		s.Running += st.Running
		s.Waiting += st.Waiting
		s.Steps += st.Steps
		s.KVBlocks += st.KVBlocks
		s.KVFree += st.KVFree
		s.KVCached += st.KVCached
		s.KVUsage += st.KVUsage / float64(len(d.ranks))
		s.Preemptions += st.Preemptions
		s.Deferred += st.Deferred
		if s.Dead == "" {
			s.Dead = st.Dead
		}
	}
	return s
}

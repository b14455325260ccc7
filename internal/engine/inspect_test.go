package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// timelineRecorder keeps a copy of every finished event and checks every
// step event's per-sequence list against its totals.
type timelineRecorder struct {
	t         *testing.T
	mu        sync.Mutex
	finished  map[string]FinishedEvent
	preempted int
}

func (r *timelineRecorder) ObserveStep(s *StepEvent) {
	n := 0
	for _, q := range s.Seqs {
		n += q.Tokens
	}
	if n != s.NumTokens || len(s.Seqs) != s.NumSeqs || len(s.Preempted) != s.Preemptions {
		r.t.Errorf("step: seqs %+v sum to %d tokens over %d seqs, preempted %v; event says %d tokens, %d seqs, %d preemptions",
			s.Seqs, n, len(s.Seqs), s.Preempted, s.NumTokens, s.NumSeqs, s.Preemptions)
	}
	r.mu.Lock()
	r.preempted += len(s.Preempted)
	r.mu.Unlock()
}

func (r *timelineRecorder) ObserveFinished(f *FinishedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished == nil {
		r.finished = map[string]FinishedEvent{}
	}
	c := *f
	c.Phases = slices.Clone(f.Phases) // the engine reuses nothing here, but observers must not rely on it
	r.finished[f.ID] = c
}

func TestPhasesRecordChunksDecodeAndTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxNumBatchedTokens = 4 // a 10-token prompt takes chunks of 4, 4 and 2
		cfg.RecordPhases = true
		rec := &timelineRecorder{t: t}
		e, stop := start(t, cfg, &countExec{}, rec)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(10, 100), Params: params(5), TraceParent: "00-tp", TraceState: "k=v"})
		if err != nil {
			t.Fatal(err)
		}
		_, last := collect(s)
		synctest.Wait()
		f := rec.finished["a"]
		type phase struct {
			Kind          PhaseKind
			Tokens, Steps int
		}
		var got []phase
		for _, p := range f.Phases {
			got = append(got, phase{p.Kind, p.Tokens, p.Steps})
			if p.End.Before(p.Start) {
				t.Errorf("phase %+v ends before it starts", p)
			}
		}
		// The last prefill chunk samples the first token; four decode steps follow.
		want := []phase{{PhasePrefill, 4, 1}, {PhasePrefill, 4, 1}, {PhasePrefill, 2, 1}, {PhaseDecode, 4, 4}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("phases (-want +got):\n%s", diff)
		}
		wantTiming := Timing{Arrival: f.Arrival, Queued: f.Queued, FirstScheduled: f.FirstScheduled,
			FirstToken: f.FirstToken, LastToken: f.LastToken, Finished: f.Finished}
		if diff := cmp.Diff(wantTiming, last.Timing); diff != "" {
			t.Errorf("final output timing differs from the finished event (-event +output):\n%s", diff)
		}
		tm := last.Timing
		if tm.PrefillTime() <= 0 || tm.DecodeTime() <= 0 || math.Abs(tm.InferenceTime()-tm.PrefillTime()-tm.DecodeTime()) > 1e-9 {
			t.Errorf("timing %+v: prefill %v decode %v inference %v", tm, tm.PrefillTime(), tm.DecodeTime(), tm.InferenceTime())
		}
		if f.Phases[2].End != f.FirstToken || f.Phases[3].End != f.LastToken {
			t.Errorf("phase ends %v, %v; want first token %v and last token %v", f.Phases[2].End, f.Phases[3].End, f.FirstToken, f.LastToken)
		}
		if f.Request == nil || f.Request.TraceParent != "00-tp" || f.Request.TraceState != "k=v" {
			t.Errorf("finished event request %+v: trace context not carried", f.Request)
		}
	})
}

func TestPhasesOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &timelineRecorder{t: t}
		e, stop := start(t, testConfig(), &countExec{}, rec)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(10, 100), Params: params(5)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		synctest.Wait()
		if p := rec.finished["a"].Phases; p != nil {
			t.Errorf("phases recorded without RecordPhases: %+v", p)
		}
	})
}

func TestPhasesRecordPreemptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.NumBlocks = 24
		cfg.MaxModelLen = 64
		cfg.EnablePrefixCaching = false
		cfg.RecordPhases = true
		rec := &timelineRecorder{t: t}
		e, stop := start(t, cfg, &countExec{}, rec)
		defer stop()
		var wg sync.WaitGroup
		for i := range 8 {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(10, 1000*i), Params: params(30)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { collect(s) })
		}
		wg.Wait()
		synctest.Wait()
		total := 0
		for id, f := range rec.finished {
			n := 0
			for _, p := range f.Phases {
				if p.Kind == PhasePreempted {
					n++
				}
			}
			if n != f.Preemptions {
				t.Errorf("request %s: %d preempted phases, %d preemptions", id, n, f.Preemptions)
			}
			total += n
		}
		if total == 0 || total != rec.preempted {
			t.Errorf("%d preempted phases, %d in step events; want the same, above 0", total, rec.preempted)
		}
	})
}

// TestSnapshotShowsQueuesAndBlocks drives the engine by hand so the state
// between two steps is known exactly.
func TestSnapshotShowsQueuesAndBlocks(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNumSeqs = 2
	cfg.MaxNumBatchedTokens = 12
	e, err := New(cfg, &countExec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	arrival := time.Now().Add(-time.Second)
	for i, n := range []int{8, 10, 6} {
		if _, err := e.Submit(&Request{ID: fmt.Sprint("r", i), Group: "g", Prompt: prompt(n, 100*i), Params: params(4), Arrival: arrival}); err != nil {
			t.Fatal(err)
		}
	}
	e.drain()
	e.step() // r0 prefills all 8 tokens, r1 its first 4; r2 waits for a slot
	snap := e.snapshot(time.Now())
	want := &Snapshot{
		Steps: 1,
		Config: SnapshotConfig{MaxNumSeqs: 2, MaxNumBatchedTokens: 12, MaxModelLen: 256, BlockSize: 4, NumBlocks: 128,
			EnablePrefixCaching: true, MaxWaiting: 100},
		Running: []RequestState{
			{ID: "r0", Group: "g", State: "running", PromptTokens: 8, PromptComputed: 8, OutputTokens: 1, MaxTokens: 4, BlocksHeld: 2},
			{ID: "r1", Group: "g", State: "running", PromptTokens: 10, PromptComputed: 4, OutputTokens: 0, MaxTokens: 4, BlocksHeld: 1},
		},
		Waiting: []RequestState{
			{ID: "r2", Group: "g", State: "waiting", PromptTokens: 6, MaxTokens: 4},
		},
		Blocks: BlockPoolState{Total: 128, Free: 125, InUse: 3, Usage: 3.0 / 128},
	}
	opts := cmp.Options{
		cmpopts.IgnoreFields(Snapshot{}, "Time"),
		cmpopts.IgnoreFields(RequestState{}, "AgeSeconds"),
		cmpopts.EquateApprox(0, 1e-12),
	}
	if diff := cmp.Diff(want, snap, opts); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	for _, r := range append(snap.Running, snap.Waiting...) {
		if r.AgeSeconds < 1 {
			t.Errorf("%s: age %v s, want at least the second since its arrival", r.ID, r.AgeSeconds)
		}
	}
}

func TestSnapshotIsAnsweredByTheEngineGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, stop := start(t, testConfig(), &countExec{}, nil)
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(10, 100), Params: params(5)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		synctest.Wait() // the engine is idle, blocked in its select
		snap, err := e.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if snap.Steps != e.Stats().Steps || snap.Steps == 0 || len(snap.Running)+len(snap.Waiting) != 0 {
			t.Errorf("idle snapshot: steps %d (stats %d), %d running, %d waiting", snap.Steps, e.Stats().Steps, len(snap.Running), len(snap.Waiting))
		}
		if snap.Blocks.InUse != 0 || snap.Blocks.Free != snap.Blocks.Total || snap.Blocks.Cached == 0 {
			t.Errorf("idle block pool %+v: want everything free, the prompt's full blocks still cached", snap.Blocks)
		}
		stop()
		if _, err := e.Snapshot(context.Background()); err != ErrClosed {
			t.Errorf("snapshot after shutdown: %v, want ErrClosed", err)
		}
	})
}

func TestObserversFanOutInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &recorder{}, &recorder{}
		e, stop := start(t, testConfig(), &countExec{}, Observers{a, b})
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(10, 100), Params: params(5)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		synctest.Wait()
		for i, r := range []*recorder{a, b} {
			if r.generated != 5 || r.finished[FinishLength] != 1 {
				t.Errorf("observer %d saw %d tokens and %v, want 5 and one length finish", i, r.generated, r.finished)
			}
		}
	})
}

package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

// groupSeen records what the observer heard of each member.
type groupSeen struct {
	mu   sync.Mutex
	reqs map[string]*Request
}

func (g *groupSeen) ObserveStep(*StepEvent) {}
func (g *groupSeen) ObserveFinished(f *FinishedEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reqs == nil {
		g.reqs = map[string]*Request{}
	}
	g.reqs[f.ID] = f.Request
}

func TestGroupNumbersMembersAndSeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := &groupSeen{}
		e, stop := start(t, testConfig(), &countExec{}, seen)
		defer stop()
		g := e.NewGroup("job", 3)
		p := params(4)
		p.Seed, p.HasSeed = 100, true
		for i := range 2 {
			if err := g.Add(Request{Prompt: prompt(5, 10*i), Params: p}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if g.Len() != 6 {
			t.Fatalf("Len %d, want 6", g.Len())
		}
		tokens := make([][]int, 6)
		finals := 0
		for {
			m, out, ok := g.Next(context.Background())
			if !ok {
				break
			}
			tokens[m] = append(tokens[m], out.Tokens...)
			if out.Finished {
				finals++
			}
		}
		if finals != 6 {
			t.Fatalf("%d final outputs, want 6", finals)
		}
		for m, toks := range tokens {
			// countExec continues the prompt's last token.
			if want := 10*(m/3) + 5; len(toks) != 4 || toks[0] != want {
				t.Errorf("member %d: tokens %v, want 4 starting at %d", m, toks, want)
			}
		}
		synctest.Wait()
		for m := range 6 {
			id := "job-" + string(rune('0'+m))
			r := seen.reqs[id]
			if r == nil {
				t.Fatalf("no member %s finished", id)
			}
			if r.Group != "job" || r.GroupSize != 3 || r.Params.Seed != 100+int64(m%3) {
				t.Errorf("member %s: group %q size %d seed %d; want job, 3, %d", id, r.Group, r.GroupSize, r.Params.Seed, 100+m%3)
			}
		}
	})
}

func TestGroupAddIsAllOrNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxWaiting = 4
		e, err := New(cfg, &countExec{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := e.NewGroup("g", 3)
		if err := g.Add(Request{Prompt: prompt(3, 0), Params: params(2)}, nil); err != nil {
			t.Fatal(err)
		}
		// Three more do not fit in a queue of four: none is queued.
		if err := g.Add(Request{Prompt: prompt(3, 0), Params: params(2)}, nil); !errors.Is(err, ErrOverloaded) {
			t.Fatalf("second add: %v, want ErrOverloaded", err)
		}
		if g.Len() != 3 || e.queued.Load() != 3 {
			t.Errorf("after a refused add: %d members, %d queued; want 3, 3", g.Len(), e.queued.Load())
		}
		if err := e.AwaitRoom(context.Background(), 5); !errors.Is(err, ErrOverloaded) {
			t.Errorf("AwaitRoom beyond the queue: %v, want ErrOverloaded at once", err)
		}
	})
}

// TestAwaitRoomWakesWhenTheQueueShrinks: a caller waiting for room is
// woken by the engine admitting others, with no polling.
func TestAwaitRoomWakesWhenTheQueueShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxWaiting = 2
		cfg.MaxNumSeqs = 1 // one runs, the rest wait
		e, stop := start(t, cfg, &countExec{}, nil)
		defer stop()
		g := e.NewGroup("g", 1)
		added := 0
		for added < 6 {
			err := g.Add(Request{Prompt: prompt(3, 0), Params: params(3)}, nil)
			if errors.Is(err, ErrOverloaded) {
				if err := e.AwaitRoom(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			added++
		}
		n := 0
		for {
			_, out, ok := g.Next(context.Background())
			if !ok {
				break
			}
			if out.Finished {
				if out.FinishReason != FinishLength {
					t.Errorf("member ended %q, want length", out.FinishReason)
				}
				n++
			}
		}
		if n != 6 {
			t.Errorf("%d members finished, want 6", n)
		}
		stop()
		if err := e.AwaitRoom(context.Background(), 1); !errors.Is(err, ErrClosed) {
			t.Errorf("AwaitRoom after shutdown: %v, want ErrClosed", err)
		}
	})
}

func TestGroupCloseAbortsAndFreesBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		e, stop := start(t, testConfig(), &countExec{}, rec)
		defer stop()
		g := e.NewGroup("g", 4)
		if err := g.Add(Request{Prompt: prompt(20, 0), Params: params(200)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := g.Next(context.Background()); !ok {
			t.Fatal("no output")
		}
		g.Close()
		if st := e.Stats(); st.Running != 0 || st.Waiting != 0 || st.KVFree != st.KVBlocks {
			t.Errorf("after Close: %+v", st)
		}
		if _, _, ok := g.Next(context.Background()); ok {
			t.Error("Next after Close returned an output")
		}
		synctest.Wait()
		if rec.finished[FinishAbort] != 4 {
			t.Errorf("finished %v, want 4 aborts", rec.finished)
		}
	})
}

// embedExec pools each Embed sequence into one number: the tokens it saw
// computed, summed over its chunks.
type embedExec struct{ seen map[int]int }

func (x *embedExec) Capabilities() Capabilities { return Capabilities{Embeddings: true} }

func (x *embedExec) Execute(b *Batch, r *StepResult) error {
	if x.seen == nil {
		x.seen = map[int]int{}
	}
	for i, s := range b.Seqs {
		if !s.Embed {
			continue
		}
		if s.Pos == 0 {
			x.seen[s.Seq] = 0
		}
		x.seen[s.Seq] += len(s.Tokens)
		if s.Sample {
			r.Embeddings[i] = []float32{float32(x.seen[s.Seq])}
		}
	}
	return nil
}

// TestEmbedRequestsPoolTheWholePrompt: an embedding request ends with its
// prefill, chunked or not, with the executor's vector and no token, and
// computes its whole prompt even when the prefix cache holds it.
func TestEmbedRequestsPoolTheWholePrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		e, stop := start(t, testConfig(), &embedExec{}, rec)
		defer stop()
		for round := range 2 {
			g := e.NewGroup("e", 1)
			for i := range 3 {
				if err := g.Add(Request{Prompt: prompt(100+i, 7), Params: params(1), Embed: true}, nil); err != nil {
					t.Fatal(err)
				}
			}
			for {
				m, out, ok := g.Next(context.Background())
				if !ok {
					break
				}
				if !out.Finished || out.FinishReason != FinishStop || len(out.Tokens) != 0 || out.CachedTokens != 0 {
					t.Fatalf("round %d member %d: %+v", round, m, out)
				}
				if len(out.Embedding) != 1 || out.Embedding[0] != float32(100+m) {
					t.Errorf("round %d member %d: embedding %v, want [%d]: every prompt token computed", round, m, out.Embedding, 100+m)
				}
			}
		}
		synctest.Wait()
		if rec.generated != 0 || rec.finished[FinishStop] != 6 || len(rec.ttfts) != 0 {
			t.Errorf("observer: %d generated, %v finished, %d TTFTs; want 0, 6 stop, none", rec.generated, rec.finished, len(rec.ttfts))
		}
		if rec.prompt != 2*(100+101+102) {
			t.Errorf("prompt tokens counted %d, want %d", rec.prompt, 2*(100+101+102))
		}
	})
}

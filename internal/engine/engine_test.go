package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// countExec emits last-token+1 and takes a virtual millisecond per step plus
// a microsecond per token, so prefill work shows in the timeline.
type countExec struct {
	eosAt int          // token value that is emitted as EOS (0: never)
	caps  Capabilities // what it declares (its steps do the same either way)
}

func (x *countExec) Capabilities() Capabilities { return x.caps }

const testEOS = 999

func (x *countExec) Execute(b *Batch, r *StepResult) error {
	time.Sleep(time.Millisecond + time.Duration(b.NumTokens)*time.Microsecond)
	return x.sample(b, r)
}

// sample gives each sampling sequence the token after its last.
func (x *countExec) sample(b *Batch, r *StepResult) error {
	for i, s := range b.Seqs {
		if !s.Sample {
			continue
		}
		next := s.History[len(s.History)-1] + 1
		if x.eosAt > 0 && next >= x.eosAt && !slices.Contains(s.Banned, testEOS) {
			next = testEOS
		}
		r.Samples[i] = sampling.Result{Token: next, Logprob: -0.5}
	}
	return nil
}

// recorder is an Observer that sums what the engine reports.
type recorder struct {
	mu          sync.Mutex
	generated   int
	prompt      int
	cached      int
	preemptions int
	finished    map[FinishReason]int
	ttfts       []float64
}

func (r *recorder) ObserveStep(s *StepEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.generated += s.GenerationTokens
	r.prompt += s.PromptTokens
	r.cached += s.CachedTokens
	r.preemptions += s.Preemptions
	r.ttfts = append(r.ttfts, s.TTFTs...)
}

func (r *recorder) ObserveFinished(f *FinishedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished == nil {
		r.finished = map[FinishReason]int{}
	}
	r.finished[f.Reason]++
}

func testConfig() Config {
	return Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxModelLen: 256, BlockSize: 4,
		NumBlocks: 128, EnablePrefixCaching: true, MaxWaiting: 100, EOS: []int{testEOS}}
}

func params(maxTokens int) sampling.Params {
	p := sampling.Defaults()
	p.Temperature = 0
	p.MaxTokens = maxTokens
	return p
}

// start runs an engine in the current synctest bubble and returns a stop func.
func start(t *testing.T, cfg Config, x Executor, obs Observer) (*Engine, func()) {
	t.Helper()
	e, err := New(cfg, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	return e, func() { cancel(); <-done }
}

// collect reads a stream to its end.
func collect(s *Stream) (tokens []int, last Output) {
	for {
		o, ok := s.Next(context.Background())
		if !ok {
			return tokens, last
		}
		tokens = append(tokens, o.Tokens...)
		last = o
	}
}

func prompt(n, base int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = base + i
	}
	return p
}

func TestGenerateToMaxTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		e, stop := start(t, testConfig(), &countExec{}, rec)
		defer stop()
		var wg sync.WaitGroup
		for i := range 20 {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(10+i, 100*i), Params: params(5 + i)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				toks, last := collect(s)
				if len(toks) != 5+i || last.FinishReason != FinishLength {
					t.Errorf("request %d: %d tokens, reason %q; want %d, length", i, len(toks), last.FinishReason, 5+i)
				}
				if toks[0] != 100*i+10+i {
					t.Errorf("request %d: first token %d, want %d", i, toks[0], 100*i+10+i)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		st := e.Stats()
		if st.Running != 0 || st.Waiting != 0 || st.KVUsage != 0 {
			t.Errorf("after all finished: %+v", st)
		}
		want := 0
		for i := range 20 {
			want += 5 + i
		}
		if rec.generated != want || rec.finished[FinishLength] != 20 || len(rec.ttfts) != 20 {
			t.Errorf("observer saw %d tokens, %v finishes, %d TTFTs; want %d tokens, 20 length, 20 TTFTs",
				rec.generated, rec.finished, len(rec.ttfts), want)
		}
	})
}

func TestStopConditions(t *testing.T) {
	cases := []struct {
		name   string
		params func(*sampling.Params)
		want   int
		reason FinishReason
		stop   int
	}{
		{"eos", func(p *sampling.Params) {}, 3, FinishStop, testEOS},
		{"ignore_eos", func(p *sampling.Params) { p.IgnoreEOS = true }, 8, FinishLength, -1},
		{"min_tokens", func(p *sampling.Params) { p.MinTokens = 5 }, 6, FinishStop, testEOS},
		{"stop_token_ids", func(p *sampling.Params) { p.StopTokenIDs = []int{11} }, 2, FinishStop, 11},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, stop := start(t, testConfig(), &countExec{eosAt: 12}, nil)
				defer stop()
				p := params(8)
				c.params(&p)
				s, err := e.Submit(&Request{ID: "r", Prompt: prompt(10, 0), Params: p})
				if err != nil {
					t.Fatal(err)
				}
				toks, last := collect(s)
				if len(toks) != c.want || last.FinishReason != c.reason || last.StopToken != c.stop {
					t.Errorf("got %v reason %q stop %d; want %d tokens, %q, stop %d", toks, last.FinishReason, last.StopToken, c.want, c.reason, c.stop)
				}
			})
		})
	}
}

func TestSubmitErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxWaiting = 2
		e, err := New(cfg, &countExec{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Not running: submissions queue up.
		for i := range 2 {
			if _, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(3, 0), Params: params(2)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Submit(&Request{ID: "x", Prompt: prompt(3, 0), Params: params(2)}); !errors.Is(err, ErrOverloaded) {
			t.Errorf("third submit: %v, want ErrOverloaded", err)
		}
		if _, err := e.Submit(&Request{ID: "0", Prompt: prompt(3, 0), Params: params(2)}); err == nil {
			t.Error("duplicate id accepted")
		}
		if _, err := e.Submit(&Request{ID: "wraps", Prompt: prompt(10, 0), Params: params(math.MaxInt)}); !errors.Is(err, ErrPromptTooLong) {
			t.Errorf("max_tokens that wraps len+max_tokens: %v, want ErrPromptTooLong", err)
		}
		if _, err := e.Submit(&Request{ID: "long", Prompt: prompt(250, 0), Params: params(10)}); !errors.Is(err, ErrPromptTooLong) {
			t.Errorf("long prompt: %v, want ErrPromptTooLong", err)
		}
		var pe *sampling.ParamError
		if _, err := e.Submit(&Request{ID: "empty", Params: params(1)}); !errors.As(err, &pe) || pe.Param != "prompt" {
			t.Errorf("empty prompt: %v", err)
		}
	})
}

func TestAbortFreesBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		e, stop := start(t, testConfig(), &countExec{}, rec)
		defer stop()
		var streams []*Stream
		for i := range 6 {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(20, 0), Params: params(200)})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s)
		}
		for i, s := range streams {
			if _, ok := s.Next(context.Background()); !ok {
				t.Fatalf("stream %d ended early", i)
			}
		}
		for i := range streams {
			e.Abort(fmt.Sprint(i))
		}
		for i, s := range streams {
			if _, last := collect(s); last.FinishReason != FinishAbort {
				t.Errorf("stream %d: reason %q, want abort", i, last.FinishReason)
			}
		}
		synctest.Wait()
		if st := e.Stats(); st.Running != 0 || st.KVUsage != 0 || st.KVFree != st.KVBlocks {
			t.Errorf("after aborts: %+v", st)
		}
		if rec.finished[FinishAbort] != 6 {
			t.Errorf("finished %v, want 6 aborts", rec.finished)
		}
	})
}

func TestPreemptionCompletesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.NumBlocks = 24 // 96 tokens for 8 sequences that each grow to 40
		cfg.MaxModelLen = 64
		cfg.EnablePrefixCaching = false
		rec := &recorder{}
		e, stop := start(t, cfg, &countExec{}, rec)
		defer stop()
		var wg sync.WaitGroup
		for i := range 8 {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(10, 1000*i), Params: params(30)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				toks, _ := collect(s)
				for j, tok := range toks {
					if tok != 1000*i+10+j {
						t.Errorf("request %d token %d = %d: recompute changed the output", i, j, tok)
						return
					}
				}
				if len(toks) != 30 {
					t.Errorf("request %d: %d tokens, want 30", i, len(toks))
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if st := e.Stats(); st.Preemptions == 0 || rec.preemptions == 0 {
			t.Errorf("no preemption under KV pressure: stats %+v", st)
		}
		if rec.generated != 8*30 || rec.prompt != 8*10 {
			t.Errorf("observer: %d generated, %d prompt; want 240, 80 (recompute is not counted twice)", rec.generated, rec.prompt)
		}
	})
}

func TestPrefixCachingLowersTTFT(t *testing.T) {
	ttft := func(prefix bool) (mean float64, cached int) {
		synctest.Test(t, func(t *testing.T) {
			cfg := testConfig()
			cfg.EnablePrefixCaching = prefix
			cfg.MaxNumBatchedTokens = 256
			rec := &recorder{}
			e, stop := start(t, cfg, &countExec{}, rec)
			defer stop()
			shared := prompt(200, 5000)
			for i := range 10 {
				p := append(append([]int{}, shared...), i)
				s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: p, Params: params(2)})
				if err != nil {
					t.Fatal(err)
				}
				collect(s) // one after the other, so later ones can hit
			}
			synctest.Wait()
			for _, v := range rec.ttfts {
				mean += v / float64(len(rec.ttfts))
			}
			cached = rec.cached
		})
		return mean, cached
	}
	on, hits := ttft(true)
	off, none := ttft(false)
	if hits == 0 || none != 0 {
		t.Fatalf("cached prompt tokens: %d with caching, %d without", hits, none)
	}
	if on >= off {
		t.Errorf("mean TTFT with prefix caching %.6fs, without %.6fs: caching should be faster", on, off)
	}
}

func TestShutdownAbortsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, stop := start(t, testConfig(), &countExec{}, nil)
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(4, 0), Params: params(200)})
		if err != nil {
			t.Fatal(err)
		}
		s.Next(context.Background())
		stop()
		if _, last := collect(s); last.FinishReason != FinishAbort {
			t.Errorf("reason %q, want abort", last.FinishReason)
		}
		if _, err := e.Submit(&Request{ID: "b", Prompt: prompt(4, 0), Params: params(2)}); !errors.Is(err, ErrClosed) {
			t.Errorf("submit after shutdown: %v, want ErrClosed", err)
		}
	})
}

// readFirst is an Observer that yields to every other goroutine before
// recording a finished request, and notes when that request's client had
// already read its end: the client must never be ahead of the counts.
type readFirst struct {
	mu     sync.Mutex
	read   map[string]bool // clients that have their final output
	ahead  []string
	counts int
}

func (r *readFirst) ObserveStep(*StepEvent) {}
func (r *readFirst) ObserveFinished(f *FinishedEvent) {
	for range 10 {
		runtime.Gosched() // let a client that already has its output run
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts++
	if r.read[f.ID] {
		r.ahead = append(r.ahead, f.ID)
	}
}

// TestFinalOutputComesAfterItIsCounted: when a client reads a request's
// final output, the observer has already counted it and Stats no longer
// shows it, so /metrics scraped the moment a response ends agrees with what
// the client saw.
func TestFinalOutputComesAfterItIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &readFirst{read: map[string]bool{}}
		e, stop := start(t, testConfig(), &countExec{}, obs)
		defer stop()
		var wg sync.WaitGroup
		for i := range 10 {
			id := fmt.Sprint(i)
			s, err := e.Submit(&Request{ID: id, Prompt: prompt(8, 10*i), Params: params(3 + i)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				collect(s)
				obs.mu.Lock()
				obs.read[id] = true
				obs.mu.Unlock()
				if st := e.Stats(); st.Running+st.Waiting > 10-1 {
					t.Errorf("request %s ended while Stats still counts %d requests", id, st.Running+st.Waiting)
				}
			})
		}
		wg.Wait()
		if len(obs.ahead) > 0 || obs.counts != 10 {
			t.Errorf("clients read their end before it was counted: %v (%d counted)", obs.ahead, obs.counts)
		}
	})
}

// TestAwaitIdle returns once every request submitted before it has ended
// and been observed, and at once on an idle engine; after shutdown it fails.
func TestAwaitIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		e, stop := start(t, testConfig(), &countExec{}, rec)
		if err := e.AwaitIdle(context.Background()); err != nil {
			t.Fatalf("idle engine: %v", err)
		}
		for i := range 12 {
			if _, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(20, 0), Params: params(30)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.AwaitIdle(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		n := rec.finished[FinishLength]
		rec.mu.Unlock()
		if n != 12 {
			t.Errorf("AwaitIdle returned with %d of 12 requests observed", n)
		}
		stop()
		if err := e.AwaitIdle(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("after shutdown: %v, want ErrClosed", err)
		}
	})
}

// hostExec takes 3 ms on the accelerator and reports 2 ms of host work.
type hostExec struct{ countExec }

func (x *hostExec) Execute(b *Batch, r *StepResult) error {
	time.Sleep(3 * time.Millisecond)
	if err := x.countExec.sample(b, r); err != nil {
		return err
	}
	r.HostTime = 2 * time.Millisecond
	return nil
}

// stepTimes records the step events' times.
type stepTimes struct {
	mu                 sync.Mutex
	execute, host, all []time.Duration
}

func (s *stepTimes) ObserveStep(ev *StepEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execute, s.host, s.all = append(s.execute, ev.ExecuteTime), append(s.host, ev.HostTime), append(s.all, ev.End.Sub(ev.Start))
}
func (s *stepTimes) ObserveFinished(*FinishedEvent) {}

// TestHostTimeIsNotBusyTime: the host work an executor reports passes on
// the engine's clock after Execute, inside the step but outside its busy
// (execute) time.
func TestHostTimeIsNotBusyTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &stepTimes{}
		e, stop := start(t, testConfig(), &hostExec{}, obs)
		defer stop()
		s, err := e.Submit(&Request{ID: "a", Prompt: prompt(4, 0), Params: params(5)})
		if err != nil {
			t.Fatal(err)
		}
		collect(s)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		for i := range obs.execute {
			if obs.execute[i] != 3*time.Millisecond || obs.host[i] != 2*time.Millisecond || obs.all[i] != 5*time.Millisecond {
				t.Errorf("step %d: execute %v, host %v, whole %v; want 3ms, 2ms, 5ms", i, obs.execute[i], obs.host[i], obs.all[i])
			}
		}
	})
}

// TestLoRAAdapters: a request names a served adapter or is refused; the
// stats list the adapters running and waiting, and --max-loras holds the
// third adapter back while two run (the deferred count says so).
func TestLoRAAdapters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.LoRAs, cfg.MaxLoRAs = []string{"a", "b", "c"}, 2
		e, stop := start(t, cfg, &blockingExec{countExec: countExec{caps: Capabilities{LoRA: true}}, release: make(chan struct{})}, nil)
		defer stop()
		if _, err := e.Submit(&Request{ID: "x", Prompt: prompt(2, 1), Params: params(4), LoRA: "nope"}); err == nil {
			t.Fatal("an unknown adapter was accepted")
		}
		var streams []*Stream
		for i, name := range []string{"a", "b", "c", ""} {
			st, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(3, 1), Params: params(3), LoRA: name})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		synctest.Wait()
		x := e.exec.(*blockingExec)
		// Two steps: the first may have been planned before every
		// request was submitted (the engine runs while they arrive); by
		// the second all four are planned, and none has finished.
		for range 2 {
			x.release <- struct{}{}
			synctest.Wait()
		}
		s := e.Stats()
		if s.RunningLoRA != "a,b" || s.WaitingLoRA != "c" || s.Deferred != 1 || s.Running != 3 {
			t.Errorf("stats %+v; want a,b running (and the base request), c waiting, deferred 1", s)
		}
		close(x.release)
		for _, st := range streams {
			if _, last := collect(st); !last.Finished {
				t.Error("a request did not finish")
			}
		}
	})
}

// blockingExec is countExec that waits for release before each step.
type blockingExec struct {
	countExec
	release chan struct{}
}

func (x *blockingExec) Execute(b *Batch, r *StepResult) error {
	<-x.release
	return x.sample(b, r)
}

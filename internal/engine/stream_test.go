package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestTryNextIntoReadsWhatTryNextReads: the same pushes read through
// TryNextInto, into one reused Output, give the outputs TryNext gives, and
// once its slices have grown a step's token costs no allocation.
func TestTryNextIntoReadsWhatTryNextReads(t *testing.T) {
	pushes := []Output{
		{Tokens: []int{1, 2}, PromptTokens: 5, CachedTokens: 4},
		{Tokens: []int{3}, Text: "x", PromptTokens: 5, CachedTokens: 4},
		{Tokens: []int{4}, Finished: true, FinishReason: FinishLength, StopToken: -1, Err: errors.New("e"), PromptTokens: 5},
	}
	a, b := newStream("a"), newStream("b")
	var got Output
	if b.TryNextInto(&got) {
		t.Fatal("TryNextInto read an output before any push")
	}
	for i := range pushes {
		a.push(&pushes[i])
		b.push(&pushes[i])
		if i == 0 {
			continue // two pushes merge into one output
		}
		want, ok := a.TryNext()
		if !ok || !b.TryNextInto(&got) {
			t.Fatalf("push %d: nothing to read", i)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.EquateErrors()); d != "" {
			t.Errorf("push %d: TryNextInto differs from TryNext (-TryNext +TryNextInto):\n%s", i, d)
		}
	}
	if b.TryNextInto(&got) || got.Tokens[0] != 4 {
		t.Errorf("a read after the final output returned %v, or changed the last one", got)
	}

	s := newStream("c")
	step := &Output{Tokens: []int{7}, PromptTokens: 5}
	s.push(step) // the first read grows got's and the stream's slices
	s.TryNextInto(&got)
	if n := testing.AllocsPerRun(100, func() {
		s.push(step)
		s.TryNextInto(&got)
	}); n != 0 {
		t.Errorf("a step's token read through TryNextInto allocates %v times", n)
	}
}

// TestDrivenEngineStreamsTakeNoLocks: an engine handed to a driver (Drive)
// generates what an engine on its own goroutine does, read through
// TryNextInto between Advances, and its streams take no locks: pushing to
// one and reading it while its mutex is held does not wait (a stream that
// locked would wait here for ever, which the test binary's -timeout
// reports). Run on it is a bug.
func TestDrivenEngineStreamsTakeNoLocks(t *testing.T) {
	var want [][]int
	synctest.Test(t, func(t *testing.T) {
		e, stop := start(t, testConfig(), &countExec{}, nil)
		defer stop()
		for i := range 3 {
			s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(5+i, 10*i), Params: params(4 + i)})
			if err != nil {
				t.Fatal(err)
			}
			toks, _ := collect(s)
			want = append(want, toks)
		}
	})

	synctest.Test(t, func(t *testing.T) { driven(t, want) })
}

func driven(t *testing.T, want [][]int) {
	e, err := New(testConfig(), &countExec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Drive()
	var streams []*Stream
	for i := range 3 {
		s, err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: prompt(5+i, 10*i), Params: params(4 + i)})
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock() // held for good: a driven stream must not need it
		streams = append(streams, s)
	}
	got := make([][]int, len(streams))
	var o Output
	for busy := true; busy; {
		busy = e.Advance()
		for i, s := range streams {
			for s.TryNextInto(&o) {
				got[i] = append(got[i], o.Tokens...)
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("a driven engine's outputs differ from Run's (-Run +driven):\n%s", d)
	}

	defer func() {
		if recover() == nil {
			t.Error("Run on a driven engine did not panic")
		}
	}()
	e.Run(context.Background())
}

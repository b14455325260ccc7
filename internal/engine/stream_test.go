package engine

import (
	"errors"
	"testing"

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

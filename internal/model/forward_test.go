package model

import (
	"bytes"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// TestForwardSteadyStateAllocs: once the runner's buffers have grown, a
// step (decode of several sequences, then a prefill chunk) allocates
// nothing, with the compute pool in use.
func TestForwardSteadyStateAllocs(t *testing.T) {
	shape, _ := LookupShape("tiny")
	shape.Hidden, shape.FFN = 512, 1024 // big enough for the pool to split matmuls
	var buf bytes.Buffer
	if err := WriteRandom(&buf, RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(w, 16, 16, 2)
	defer r.Close()
	decode := []Seq{
		{Tokens: []int{5}, Pos: 20, BlockTable: []int{0, 1}, LogitsFrom: 0},
		{Tokens: []int{6}, Pos: 3, BlockTable: []int{2}, LogitsFrom: 0},
		{Tokens: []int{7}, Pos: 40, BlockTable: []int{3, 4, 5}, LogitsFrom: 0},
	}
	prefill := []Seq{{Tokens: []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, Pos: 0, BlockTable: []int{6}, LogitsFrom: 8}}
	step := func() {
		if err := r.Forward(decode); err != nil {
			t.Fatal(err)
		}
		if err := r.Forward(prefill); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("%v allocations per step, want 0", n)
	}
}

// TestRunnerCloseThenForward: after Close the runner still computes the same
// logits, on the calling goroutine.
func TestRunnerCloseThenForward(t *testing.T) {
	shape, _ := LookupShape("tiny")
	var buf bytes.Buffer
	if err := WriteRandom(&buf, RandomSpec{Shape: shape, Type: gguf.Q4_0, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	f, _ := gguf.Parse(buf.Bytes())
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	seqs := []Seq{{Tokens: []int{1, 2, 3}, BlockTable: []int{0}, LogitsFrom: 2}}
	a, b := NewRunner(w, 4, 16, 2), NewRunner(w, 4, 16, 2)
	defer a.Close()
	b.Close()
	if err := a.Forward(seqs); err != nil {
		t.Fatal(err)
	}
	if err := b.Forward(seqs); err != nil {
		t.Fatal(err)
	}
	for i := range a.Logits {
		if a.Logits[i] != b.Logits[i] {
			t.Fatalf("logit %d: %v with the pool, %v after Close", i, a.Logits[i], b.Logits[i])
		}
	}
}

// TestForwardAllocatesNothing: once buffers have grown, decode and prefill
// steps allocate nothing, repacked weights included (an embedding lookup
// or a kernel's scratch escaping to the heap would show here).
func TestForwardAllocatesNothing(t *testing.T) {
	shape := Shape{Name: "k", Arch: "llama", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Context: 256, RopeBase: 10000, NormEps: 1e-5}
	for _, spec := range []RandomSpec{{Shape: shape, Type: gguf.Q8_0, Seed: 1}, {Shape: shape, Mix: "Q4_K_M", Seed: 1}} {
		var buf bytes.Buffer
		if err := WriteRandom(&buf, spec); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		f.Owned = true
		w, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(w, 8, 16, 2)
		table := []int{0, 1, 2, 3}
		steps := []Seq{{Tokens: []int{5, 6, 7, 8, 9}, BlockTable: table, LogitsFrom: 4}, {Tokens: []int{10}, Pos: 5, BlockTable: table}}
		for _, s := range steps {
			batch := []Seq{s}
			if err := r.Forward(batch); err != nil { // grow buffers
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(5, func() { r.Forward(batch) }); n != 0 {
				t.Errorf("%v%s: %d tokens: %v allocations per step", spec.Type, spec.Mix, len(s.Tokens), n)
			}
		}
		r.Close()
	}
}

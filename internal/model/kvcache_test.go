package model

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

func TestKVDtype(t *testing.T) {
	c := Config{Layers: 24, KVHeads: 2, HeadDim: 64}
	if got, want := c.KVBytesPerTokenOf(KVF32), int64(24*2*128*4); got != want {
		t.Errorf("fp32: %d bytes per token, want %d", got, want)
	}
	if c.KVBytesPerTokenOf(KVF16)*2 != c.KVBytesPerTokenOf(KVF32) || c.KVBytesPerToken() != c.KVBytesPerTokenOf(DefaultKVDtype) {
		t.Error("fp16 is not half of fp32, or the default is not what KVBytesPerToken counts")
	}
	for in, want := range map[string]KVDtype{"": KVF16, "auto": KVF16, "fp16": KVF16, "f16": KVF16, "fp32": KVF32, "float32": KVF32} {
		if got, err := ParseKVDtype(in); err != nil || got != want {
			t.Errorf("ParseKVDtype(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseKVDtype("fp8"); err == nil {
		t.Error("fp8 accepted")
	}
	if KVF16.String() != "fp16" || KVF32.String() != "fp32" {
		t.Errorf("names %v %v", KVF16, KVF32)
	}
}

// TestBlockSizes: the logits do not depend on the cache's block size, in
// place (multiples of 16) or gathered (others), for either cache type;
// and fp16 stays close to fp32.
func TestBlockSizes(t *testing.T) {
	shape, _ := LookupShape("tiny")
	var buf bytes.Buffer
	if err := WriteRandom(&buf, RandomSpec{Shape: shape, Type: gguf.F32, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	f, _ := gguf.Parse(buf.Bytes())
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt := make([]int, 70)
	for i := range prompt {
		prompt[i] = (i*37 + 11) % w.Vocab
	}
	run := func(dt KVDtype, bs int) []float32 {
		r := NewRunnerWith(w, RunnerConfig{NumBlocks: 2 * (100 + bs - 1) / bs, BlockSize: bs, Threads: 2, KVDtype: dt})
		defer r.Close()
		table := make([]int, r.KV.NumBlocks/2)
		for i := range table {
			table[i] = 2*len(table) - 1 - 2*i // scattered, backwards
		}
		var out []float32
		// A prefill chunk, then two decode steps.
		steps := []Seq{{Tokens: prompt[:68], BlockTable: table, LogitsFrom: 0}, {Tokens: prompt[68:69], Pos: 68, BlockTable: table}, {Tokens: prompt[69:], Pos: 69, BlockTable: table}}
		for _, s := range steps {
			if err := r.Forward([]Seq{s}); err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Logits...)
		}
		return out
	}
	for _, dt := range []KVDtype{KVF16, KVF32} {
		want := run(dt, 16)
		for _, bs := range []int{1, 8, 32, 48} {
			t.Run(fmt.Sprintf("%s/bs%d", dt, bs), func(t *testing.T) {
				got := run(dt, bs)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("logit %d: %v with blocks of %d, %v with 16", i, got[i], bs, want[i])
					}
				}
			})
		}
	}
	a, b := run(KVF16, 16), run(KVF32, 16)
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-2 {
			t.Fatalf("logit %d: fp16 cache %v, fp32 %v", i, a[i], b[i])
		}
	}
}

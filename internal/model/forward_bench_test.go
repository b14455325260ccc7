package model

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// BenchmarkForward measures decode (one token per step, batch 1, 4 and 8)
// and prefill (128 tokens) on random-weight models of real shapes. It
// reports tokens per second, the weight bytes streamed per second (once per
// step: the decode bandwidth the machine's ceiling bounds) and allocations
// per step, which must be zero in steady state. The model is generated in
// memory first (seconds).
func BenchmarkForward(b *testing.B) {
	for _, shape := range []string{"smollm-135m", "qwen2.5-0.5b"} {
		s, _ := LookupShape(shape)
		var buf bytes.Buffer
		if err := WriteRandom(&buf, RandomSpec{Shape: s, Type: gguf.Q8_0, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		f.Owned = true // as serve reads models: repacked where the CPU has kernels for it
		w, err := Load(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name       string
			seqs, toks int
		}{{"decode-b1", 1, 1}, {"decode-b4", 4, 1}, {"decode-b8", 8, 1}, {"prefill-128", 1, 128}} {
			b.Run(fmt.Sprintf("%s/%s", shape, c.name), func(b *testing.B) {
				r := NewRunner(w, 8*40, 16, 2)
				defer r.Close()
				seqs := make([]Seq, c.seqs)
				for i := range seqs {
					table := make([]int, 40)
					for j := range table {
						table[j] = i*40 + j
					}
					toks := make([]int, c.toks)
					for j := range toks {
						toks[j] = 100 + j
					}
					seqs[i] = Seq{Tokens: toks, Pos: 64, BlockTable: table, LogitsFrom: c.toks - 1}
				}
				if err := r.Forward(seqs); err != nil { // buffers grow once
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := r.Forward(seqs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*c.seqs*c.toks)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(b.N)*float64(weightBytes(w))/b.Elapsed().Seconds()/1e9, "weightGB/s")
			})
		}
	}
}

// weightBytes is what one step reads of the matmul weights (the embedding
// table only when it is also the output matrix).
func weightBytes(w *Weights) int {
	n := len(w.Output.Data)
	for _, l := range w.Layers {
		for _, m := range []*tensor.Matrix{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			n += len(m.Data)
		}
	}
	return n
}

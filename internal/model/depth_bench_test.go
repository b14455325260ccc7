package model

import (
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

var benchModel = flag.String("model", "", "GGUF file for BenchmarkDepth (default: a random Qwen2.5-0.5B-shaped Q8_0 model made in memory)")

// BenchmarkDepth measures long context, as llama-bench's pp4000 and
// decode after a 4000-token prompt: "prefill" runs a 4000-token prompt in
// chunks of 512 (llama-bench's ubatch), "decode" one token at position
// 4000 of a context whose K/V were filled by KVCache.Fill; for both cache
// types. Run it with -benchtime 1x (prefill) or a few hundred x (decode)
// and -count 3.
func BenchmarkDepth(b *testing.B) {
	const depth, chunk = 4000, 512
	w := depthWeights(b)
	for _, dt := range []KVDtype{KVF16, KVF32} {
		blocks := (depth + 64) / 16
		table := make([]int, blocks)
		for i := range table {
			table[i] = i
		}
		b.Run(fmt.Sprintf("prefill%d/kv=%s", depth, dt), func(b *testing.B) {
			r := NewRunnerWith(w, RunnerConfig{NumBlocks: blocks, BlockSize: 16, Threads: 2, KVDtype: dt})
			defer r.Close()
			toks := make([]int, depth)
			for i := range toks {
				toks[i] = (100 + 7*i) % w.Vocab
			}
			for b.Loop() {
				for p := 0; p < depth; p += chunk {
					n := min(chunk, depth-p)
					if err := r.Forward([]Seq{{Tokens: toks[p : p+n], Pos: p, BlockTable: table, LogitsFrom: n - 1}}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*depth)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(fmt.Sprintf("decode@%d/kv=%s", depth, dt), func(b *testing.B) {
			r := NewRunnerWith(w, RunnerConfig{NumBlocks: blocks, BlockSize: 16, Threads: 2, KVDtype: dt})
			defer r.Close()
			r.KV.Fill(table, depth, 1)
			seqs := []Seq{{Tokens: []int{100}, Pos: depth, BlockTable: table}}
			if err := r.Forward(seqs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Forward(seqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// depthWeights loads -model, or makes a Qwen2.5-0.5B-shaped Q8_0 model,
// read into memory (repacked) as serve does.
func depthWeights(b *testing.B) *Weights {
	var f *gguf.File
	var err error
	if *benchModel != "" {
		f, err = gguf.ReadInMemory(*benchModel)
	} else {
		s, _ := LookupShape("qwen2.5-0.5b")
		var buf bytes.Buffer
		if err = WriteRandom(&buf, RandomSpec{Shape: s, Type: gguf.Q8_0, Seed: 1}); err == nil {
			f, err = gguf.Parse(buf.Bytes())
			f.Owned = true
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	w, err := Load(f)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

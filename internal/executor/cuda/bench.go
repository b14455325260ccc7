package cuda

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// BenchConfig is `glassbox model bench` on the GPU: a prefill of Prompt
// tokens, and Gen decode steps of Batch sequences, both after Depth
// tokens of context, each repeated Reps times after a warm-up.
type BenchConfig struct {
	Prompt, Gen, Batch, Depth, Reps int
}

// BenchResult is one test's step times: wall (Execute, host work and
// copies included) and GPU (events around the forward pass and sampling).
type BenchResult struct {
	Test         string    `json:"test"` // pp2048, tg64 b64 @ d2048
	Batch        int       `json:"batch"`
	Depth        int       `json:"depth"`
	Tokens       int       `json:"tokens_per_step"`
	StepMS       []float64 `json:"step_ms"`
	MedianMS     float64   `json:"median_ms"`
	MinMS        float64   `json:"min_ms"`
	GPUMedianMS  float64   `json:"gpu_median_ms"`
	TokensPerSec float64   `json:"tokens_per_s"`
	Graphs       bool      `json:"cuda_graphs"`
	Kernels      string    `json:"attention_kernels"`
}

// BenchSizes is the step sizes a benchmark needs.
func BenchSizes(c BenchConfig, blockSize int) Sizes {
	return Sizes{MaxTokens: max(c.Prompt, c.Batch, 1), MaxSeqs: max(c.Batch, 1), MaxModelLen: c.Depth + max(c.Prompt, c.Gen) + 1, BlockSize: blockSize}
}

// Bench runs the tests on l (whose sizes must be BenchSizes(cfg)) with
// an executor of its own, closed at the end: l stays loaded.
func Bench(l *Loaded, cfg BenchConfig, eager bool) ([]BenchResult, error) {
	if cfg.Reps < 1 || cfg.Prompt < 0 || cfg.Gen < 0 || cfg.Depth < 0 || cfg.Batch < 1 {
		return nil, fmt.Errorf("bench: need a repetition, a batch and non-negative lengths, got %+v", cfg)
	}
	B := l.sizes.BlockSize
	per := (cfg.Depth + max(cfg.Prompt, cfg.Gen) + 1 + B - 1) / B
	e, err := l.Start(Config{Sizes: l.sizes, NumBlocks: per * cfg.Batch, Eager: eager})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// Made-up K/V for the context (ones): attention costs the same
	// whatever the values.
	ones := uint32(0x3c003c00) // fp16
	if kvType(l.w.dt) == cuda.BF16 {
		ones = 0x3f803f80
	}
	if err := e.dev.Do(func() error {
		if err := e.dev.stream.Fill32(e.kv, ones, e.kvBytes/4); err != nil {
			return err
		}
		return e.dev.stream.Synchronize()
	}); err != nil {
		return nil, err
	}
	tables := make([][]int, cfg.Batch)
	for i := range tables {
		for j := range per {
			tables[i] = append(tables[i], i*per+j)
		}
	}
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	V := l.w.c.Vocab
	tok := func(i int) int { return 1 + i*7919%(V-1) }
	suffix := ""
	if cfg.Depth > 0 {
		suffix = fmt.Sprintf(" @ d%d", cfg.Depth)
	}
	var results []BenchResult
	var r engine.StepResult
	r.Samples = make([]sampling.Result, cfg.Batch)
	measure := func(res BenchResult, steps int, batch func(step int) *engine.Batch) error {
		var gpu []float64
		for rep := range cfg.Reps + 1 {
			for s := range steps {
				b := batch(s)
				start := time.Now()
				if err := e.Execute(b, &r); err != nil {
					return err
				}
				if rep > 0 { // the first is the warm-up (and captures graphs)
					res.StepMS = append(res.StepMS, float64(time.Since(start))/1e6)
					gpu = append(gpu, float64(r.DeviceTime)/1e6)
				}
			}
		}
		res.MedianMS, res.MinMS, res.GPUMedianMS = median(res.StepMS), slices.Min(res.StepMS), median(gpu)
		res.TokensPerSec = float64(res.Tokens) / res.MedianMS * 1000
		results = append(results, res)
		return nil
	}
	if cfg.Prompt > 0 {
		prompt := make([]int, cfg.Prompt)
		for i := range prompt {
			prompt[i] = tok(i)
		}
		b := &engine.Batch{NumTokens: cfg.Prompt, Seqs: []engine.SeqBatch{{Seq: 0, Tokens: prompt, Pos: cfg.Depth, BlockTable: tables[0], Sample: true, Params: &greedy}}}
		res := BenchResult{Test: fmt.Sprintf("pp%d", cfg.Prompt) + suffix, Batch: 1, Depth: cfg.Depth, Tokens: cfg.Prompt, Kernels: e.Kernels()}
		if err := measure(res, 1, func(int) *engine.Batch { return b }); err != nil {
			return nil, err
		}
	}
	if cfg.Gen > 0 {
		b := &engine.Batch{NumTokens: cfg.Batch, Seqs: make([]engine.SeqBatch, cfg.Batch)}
		toks := make([][]int, cfg.Batch)
		for i := range b.Seqs {
			toks[i] = []int{tok(i)}
			b.Seqs[i] = engine.SeqBatch{Seq: i, Tokens: toks[i], BlockTable: tables[i], Sample: true, Params: &greedy}
		}
		res := BenchResult{Test: fmt.Sprintf("tg%d b%d", cfg.Gen, cfg.Batch) + suffix, Batch: cfg.Batch, Depth: cfg.Depth, Tokens: cfg.Batch,
			Graphs: !eager && cfg.Batch <= e.buckets[len(e.buckets)-1], Kernels: e.Kernels()}
		if err := measure(res, cfg.Gen, func(step int) *engine.Batch {
			for i := range b.Seqs {
				b.Seqs[i].Pos = cfg.Depth + step
				if t := r.Samples[i].Token; step > 0 && t >= 0 && t < V {
					toks[i][0] = t // the model's own continuation
				}
			}
			return b
		}); err != nil {
			return nil, err
		}
	}
	return results, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

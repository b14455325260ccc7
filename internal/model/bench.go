package model

import (
	"fmt"
	"slices"
	"time"
)

// BenchConfig is a llama-bench-style measurement: prompt processing (one
// forward pass over Prompt tokens) and generation (Gen single-token steps),
// each repeated Reps times after a warm-up run, as llama-bench's pp and tg
// tests do, so the two can be compared side by side.
type BenchConfig struct {
	Prompt, Gen int // tokens of the pp and tg tests; 0 skips a test
	// Depth runs both tests after a context of this many tokens (llama-bench's
	// -d): the KV cache is filled with made-up keys and values, which cost
	// attention the same as real ones.
	Depth   int
	Reps    int
	Threads int
	// ReadCeiling measures the weights' read rate (Runner.ReadRate) just
	// before and just after each tg test's timed runs.
	ReadCeiling bool
}

// ceilingPasses is how many passes over the weights each read-rate
// measurement takes the best of.
const ceilingPasses = 5

// BenchResult is one test's throughputs.
type BenchResult struct {
	Test    string    `json:"test"` // pp512, tg128
	Threads int       `json:"threads"`
	Samples []float64 `json:"samples_ts"` // tokens per second, one per repetition
	Min     float64   `json:"min_ts"`
	Median  float64   `json:"median_ts"`
	// Kernels is the kernel set and weight layout that ran
	// (Weights.Kernels: "avx2, repacked (Q8_0 Q6_K)", or "avx2, rows" for a
	// mapped file), so that a result says which code it measured, not only
	// which CPU.
	Kernels string `json:"kernels"`
	// BytesPerToken is what a tg step reads from memory, the weights and
	// the cached K/V of the context (mean over the test), and GBps the
	// rate that makes at the median: decode's achieved bandwidth.
	BytesPerToken int64   `json:"bytes_per_token,omitempty"`
	GBps          float64 `json:"gb_s,omitempty"`
	// WeightBytesByType splits the weights' part of BytesPerToken by
	// format, from the matrices' own sizes.
	WeightBytesByType map[string]int64 `json:"weight_bytes_by_type,omitempty"`
	// ReadBeforeGBps and ReadAfterGBps are the weights' read rate on the
	// runner's own threads and pages (Runner.ReadRate), measured just
	// before and just after the timed runs (BenchConfig.ReadCeiling): the
	// ceiling as a range, since a shared machine moves it.
	ReadBeforeGBps float64 `json:"read_before_gb_s,omitempty"`
	ReadAfterGBps  float64 `json:"read_after_gb_s,omitempty"`
	// ReadCeilingGBps is the higher of the two, and CeilingShare GBps over
	// it: above 1 only when memory ran faster during the test than at
	// either end of it.
	ReadCeilingGBps float64 `json:"read_ceiling_gb_s,omitempty"`
	CeilingShare    float64 `json:"ceiling_share,omitempty"`
}

// Bench runs the tests on w with a KV cache just large enough.
func Bench(w *Weights, cfg BenchConfig) ([]BenchResult, error) {
	if cfg.Reps < 1 || cfg.Prompt < 0 || cfg.Gen < 0 || cfg.Depth < 0 {
		return nil, fmt.Errorf("bench: need at least one repetition and non-negative lengths, got %+v", cfg)
	}
	const bs = 16
	d := cfg.Depth
	blocks := (d + cfg.Prompt + cfg.Gen + bs) / bs
	r := NewRunner(w, blocks, bs, cfg.Threads)
	defer r.Close()
	table := make([]int, blocks)
	for i := range table {
		table[i] = i
	}
	if d > 0 {
		r.KV.Fill(table, d, 1)
	}
	suffix := ""
	if d > 0 {
		suffix = fmt.Sprintf(" @ d%d", d) // llama-bench's name for a test at depth
	}
	tok := func(i int) int { return 1 + i*7919%(w.Vocab-1) }
	var results []BenchResult
	measure := func(name string, tokens int, ceiling bool, run func() error) error {
		res := BenchResult{Test: name, Threads: cfg.Threads, Kernels: w.Kernels().String()}
		if err := run(); err != nil { // warm-up, as llama-bench does
			return err
		}
		readRate := func(gbps *float64) error {
			if !ceiling {
				return nil
			}
			bw, err := r.ReadRate(ceilingPasses)
			*gbps = bw / 1e9
			return err
		}
		if err := readRate(&res.ReadBeforeGBps); err != nil {
			return err
		}
		for range cfg.Reps {
			start := time.Now()
			if err := run(); err != nil {
				return err
			}
			res.Samples = append(res.Samples, float64(tokens)/time.Since(start).Seconds())
		}
		if err := readRate(&res.ReadAfterGBps); err != nil {
			return err
		}
		res.ReadCeilingGBps = max(res.ReadBeforeGBps, res.ReadAfterGBps)
		s := slices.Sorted(slices.Values(res.Samples))
		res.Min, res.Median = s[0], s[len(s)/2]
		results = append(results, res)
		return nil
	}
	if cfg.Prompt > 0 {
		prompt := make([]int, cfg.Prompt)
		for i := range prompt {
			prompt[i] = tok(i)
		}
		if err := measure(fmt.Sprintf("pp%d", cfg.Prompt)+suffix, cfg.Prompt, false, func() error {
			return r.Forward([]Seq{{Tokens: prompt, Pos: d, BlockTable: table, LogitsFrom: cfg.Prompt - 1}})
		}); err != nil {
			return nil, err
		}
	}
	if cfg.Gen > 0 {
		if err := measure(fmt.Sprintf("tg%d", cfg.Gen)+suffix, cfg.Gen, cfg.ReadCeiling, func() error {
			for i := range cfg.Gen {
				if err := r.Forward([]Seq{{Tokens: []int{tok(i)}, Pos: d + i, BlockTable: table}}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		res := &results[len(results)-1]
		meanContext := int64(d) + int64(cfg.Gen+1)/2 // positions attended, averaged over the test
		res.BytesPerToken = w.StreamedBytes() + meanContext*w.KVBytesPerToken()
		res.GBps = res.Median * float64(res.BytesPerToken) / 1e9
		res.WeightBytesByType = w.StreamedBytesByType()
		if res.ReadCeilingGBps > 0 {
			res.CeilingShare = res.GBps / res.ReadCeilingGBps
		}
	}
	return results, nil
}

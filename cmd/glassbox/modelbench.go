package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// benchResult is one llama-bench-style measurement.
type benchResult struct {
	Test    string    `json:"test"` // pp512, tg128
	Threads int       `json:"threads"`
	Samples []float64 `json:"samples_ts"` // tokens per second, one per repetition
	Min     float64   `json:"min_ts"`
	Median  float64   `json:"median_ts"`
}

// runModelBench measures prompt processing (one forward pass over -p
// tokens) and generation (-n single-token steps) the way llama-bench's pp
// and tg tests do, so the two can be compared side by side.
func runModelBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	p := fs.Int("p", 512, "prompt tokens (pp test; 0 skips it)")
	n := fs.Int("n", 128, "generated tokens (tg test; 0 skips it)")
	reps := fs.Int("r", 3, "repetitions")
	threads := fs.Int("t", runtime.NumCPU(), "threads")
	asJSON := fs.Bool("json", false, "print JSON")
	mmap := fs.Bool("mmap", false, "map the file instead of reading it into (huge-page) memory, as serve --mmap")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the measured runs to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *reps < 1 || *p < 0 || *n < 0 {
		return errors.New("model bench: give one GGUF file (and -r >= 1)")
	}
	open := gguf.ReadInMemory
	if *mmap {
		open = gguf.Open
	}
	f, err := open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := model.Load(f)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	const bs = 16
	blocks := (*p + *n + bs) / bs
	r := model.NewRunner(w, blocks, bs, *threads)
	table := make([]int, blocks)
	for i := range table {
		table[i] = i
	}
	tok := func(i int) int { return 1 + i*7919%(w.Vocab-1) }
	var results []benchResult
	measure := func(name string, tokens int, run func() error) error {
		res := benchResult{Test: name, Threads: *threads}
		if err := run(); err != nil { // warm-up, as llama-bench does
			return err
		}
		for range *reps {
			start := time.Now()
			if err := run(); err != nil {
				return err
			}
			res.Samples = append(res.Samples, float64(tokens)/time.Since(start).Seconds())
		}
		s := slices.Sorted(slices.Values(res.Samples))
		res.Min, res.Median = s[0], s[len(s)/2]
		results = append(results, res)
		return nil
	}
	if *p > 0 {
		prompt := make([]int, *p)
		for i := range prompt {
			prompt[i] = tok(i)
		}
		if err := measure(fmt.Sprintf("pp%d", *p), *p, func() error {
			return r.Forward([]model.Seq{{Tokens: prompt, BlockTable: table, LogitsFrom: *p - 1}})
		}); err != nil {
			return err
		}
	}
	if *n > 0 {
		if err := measure(fmt.Sprintf("tg%d", *n), *n, func() error {
			for i := range *n {
				if err := r.Forward([]model.Seq{{Tokens: []int{tok(i)}, Pos: i, BlockTable: table}}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(results)
	}
	for _, res := range results {
		fmt.Fprintf(stdout, "%-8s threads %d  %8.2f tok/s median  %8.2f min  (%d runs)\n", res.Test, res.Threads, res.Median, res.Min, len(res.Samples))
	}
	return nil
}

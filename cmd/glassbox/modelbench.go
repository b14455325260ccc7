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
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
)

func shapeNames() []string {
	var names []string
	for _, s := range model.Shapes() {
		names = append(names, s.Name)
	}
	return names
}

// runModelBench is llama-bench's pp and tg tests on a GGUF file.
func runModelBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg model.BenchConfig
	fs.IntVar(&cfg.Prompt, "p", 512, "prompt tokens (pp test; 0 skips it)")
	fs.IntVar(&cfg.Gen, "n", 128, "generated tokens (tg test; 0 skips it)")
	fs.IntVar(&cfg.Depth, "d", 0, "run both tests after a context of this many tokens (llama-bench's -d)")
	fs.IntVar(&cfg.Reps, "r", 3, "repetitions")
	fs.IntVar(&cfg.Threads, "t", runtime.NumCPU(), "threads")
	asJSON := fs.Bool("json", false, "print JSON")
	device := fs.String("device", "cpu", "cpu, or cuda: run the tests on an NVIDIA GPU (step times, wall and GPU)")
	batch := fs.Int("b", 1, "with -device cuda: sequences decoding together in the tg test")
	shape := fs.String("shape", "", "with -device cuda: instead of a file, random weights of this shape made on the GPU ("+strings.Join(shapeNames(), ", ")+")")
	typ := fs.String("type", "bf16", "with -shape: the weights' type (f32, f16, bf16)")
	eager := fs.Bool("enforce-eager", false, "with -device cuda: no CUDA graphs for the decode steps")
	mmap := fs.Bool("mmap", false, "map the file instead of reading it into (huge-page) memory, as serve --mmap")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the measured runs to this file")
	fs.BoolVar(&cfg.ReadCeiling, "read-bandwidth", false, "measure decode's memory ceiling just before and after each tg test: how fast the same threads stream the weights themselves (a STREAM-like read, best of 5 passes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *device == "cuda" {
		return runModelBenchCUDA(fs, cfg, *batch, *shape, *typ, *eager, *asJSON, stdout)
	}
	if *device != "cpu" {
		return fmt.Errorf("model bench: -device %q: want cpu or cuda", *device)
	}
	if *batch != 1 || *shape != "" {
		return errors.New("model bench: -b and -shape are for -device cuda")
	}
	if fs.NArg() != 1 {
		return errors.New("model bench: give one GGUF file")
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
	results, err := model.Bench(w, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(results)
	}
	if len(results) > 0 {
		fmt.Fprintf(stdout, "kernels: %s\n", results[0].Kernels)
	}
	for _, res := range results {
		fmt.Fprintf(stdout, "%-8s threads %d  %8.2f tok/s median  %8.2f min  (%d runs)", res.Test, res.Threads, res.Median, res.Min, len(res.Samples))
		if res.GBps > 0 {
			fmt.Fprintf(stdout, "  %.1f GB/s of weights and K/V", res.GBps)
		}
		if res.ReadCeilingGBps > 0 {
			fmt.Fprintf(stdout, ", %s", ceilingText(res))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// ceilingText is a tg test's share of the read ceiling measured around it,
// saying why when the share is above 100%.
func ceilingText(r model.BenchResult) string {
	s := fmt.Sprintf("%.0f%% of the read ceiling (%.1f GB/s before, %.1f after)", 100*r.CeilingShare, r.ReadBeforeGBps, r.ReadAfterGBps)
	if r.CeilingShare > 1 {
		s += ": above it, so memory ran faster during the test than at either end (a shared machine); run it again"
	}
	return s
}

//go:build !nocuda

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	cudaexec "github.com/glassbox-llm/glassbox/internal/executor/cuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// runModelBenchCUDA is model bench on the GPU: a GGUF file's weights, or
// random ones of a shape made on the device.
func runModelBenchCUDA(fs *flag.FlagSet, cfg model.BenchConfig, batch int, shape, typ string, eager, asJSON bool, stdout io.Writer) error {
	if (shape == "") == (fs.NArg() == 0) || fs.NArg() > 1 {
		return errors.New("model bench -device cuda: give one GGUF file, or -shape")
	}
	c := cudaConfig(os.Getenv)
	dev, err := cudaexec.OpenDevice(cudaexec.DeviceConfig{Ordinal: c.Ordinal, BLASLt: c.BLASLt, BLASLtDirs: c.BLASLtDirs})
	if err != nil {
		return fmt.Errorf("model bench -device cuda: %w", err)
	}
	defer dev.Close()
	bc := cudaexec.BenchConfig{Prompt: cfg.Prompt, Gen: cfg.Gen, Batch: batch, Depth: cfg.Depth, Reps: cfg.Reps}
	sizes := cudaexec.BenchSizes(bc, 16)
	var l *cudaexec.Loaded
	name := shape
	if shape != "" {
		s, err := model.LookupShape(shape)
		if err != nil {
			return err
		}
		dt := map[string]cuda.DType{"f32": cuda.F32, "f16": cuda.F16, "bf16": cuda.BF16}[strings.ToLower(typ)]
		if dt == 0 && strings.ToLower(typ) != "f32" {
			return fmt.Errorf("model bench -type %q: want f32, f16 or bf16", typ)
		}
		name = fmt.Sprintf("random %s (%s)", shape, dt)
		if l, err = dev.UploadRandom(s.Config(), dt, sizes); err != nil {
			return err
		}
		defer l.Close()
	} else {
		f, err := gguf.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		w, err := model.Load(f)
		if err != nil {
			return err
		}
		name = fs.Arg(0)
		if l, err = dev.Upload(w, sizes); err != nil {
			return err
		}
		defer l.Close()
	}
	results, err := cudaexec.Bench(l, bc, eager)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"device": dev.Describe(), "model": name, "results": results})
	}
	fmt.Fprintf(stdout, "%s on %s\n", name, dev.Describe())
	if len(results) > 0 {
		fmt.Fprintf(stdout, "attention: %s\n", results[0].Kernels)
	}
	for _, r := range results {
		graphs := ""
		if r.Graphs {
			graphs = ", CUDA graphs"
		}
		fmt.Fprintf(stdout, "%-20s %8.2f ms/step median (min %.2f, GPU %.2f)  %10.1f tok/s  (%d steps%s)\n",
			r.Test, r.MedianMS, r.MinMS, r.GPUMedianMS, r.TokensPerSec, len(r.StepMS), graphs)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
)

func runModel(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("model: give a command: inspect FILE.gguf, or random -o FILE.gguf")
	}
	switch args[0] {
	case "inspect":
		return runModelInspect(args[1:], stdout, stderr)
	case "random":
		return runModelRandom(args[1:], stdout, stderr)
	case "bench":
		return runModelBench(args[1:], stdout, stderr)
	}
	return fmt.Errorf("model: unknown command %q (inspect, random, bench)", args[0])
}

func runModelInspect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("model inspect: give one GGUF file")
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	return model.Inspect(stdout, fs.Arg(0), f)
}

func runModelRandom(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model random", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range model.Shapes() {
		names = append(names, s.Name)
	}
	arch := fs.String("arch", "", "llama, qwen2 or qwen3 (default: the shape's)")
	shape := fs.String("shape", "tiny", "shape: "+strings.Join(names, ", "))
	typ := fs.String("type", "q8_0", "2-D weight type: f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q5_k, q6_k, or one of llama-quantize's mixes q4_k_m, q4_k_s, q5_k_m, q5_k_s")
	out := fs.String("o", "", "output file (required)")
	seed := fs.Uint64("seed", 1, "random seed")
	pooling := fs.String("pooling", "none", "make an embedding model that pools its hidden states this way: none, mean, cls or last")
	vocab := fs.String("vocab", "", "a GGUF (a model, or llama.cpp's ggml-vocab-*.gguf) whose real tokenizer to use instead of a synthetic one; its size replaces the shape's vocabulary")
	layers := fs.Int("layers", 0, "layers (default: the shape's)")
	quietFrom := fs.Int("quiet-from", 0, "layers from this one on write to the residual stream at -quiet times the usual scale: a target that the model of its first N layers (-layers N, the same -seed) drafts well, for speculative decoding")
	quiet := fs.Float64("quiet", 0.05, "the scale of -quiet-from's layers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("model random: -o FILE is required")
	}
	s, err := model.LookupShape(*shape)
	if err != nil {
		return err
	}
	if *layers < 0 || *quietFrom < 0 || math.IsNaN(*quiet) || math.IsInf(*quiet, 0) {
		return fmt.Errorf("model random: -layers %d, -quiet-from %d and -quiet %v must be finite and not negative", *layers, *quietFrom, *quiet)
	}
	if *layers > 0 {
		s.Layers = *layers
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["quiet"] && *quietFrom == 0:
		return errors.New("model random: -quiet scales the layers from -quiet-from on; give -quiet-from too")
	case *quietFrom >= s.Layers:
		return fmt.Errorf("model random: -quiet-from %d is past the model's %d layers (0 to %d)", *quietFrom, s.Layers, s.Layers-1)
	}
	spec := model.RandomSpec{Arch: *arch, Shape: s, Seed: *seed, QuietFrom: *quietFrom, Quiet: *quiet}
	if spec.Pooling, err = model.ParsePooling(*pooling); err != nil {
		return fmt.Errorf("model random --pooling: %w", err)
	}
	if *vocab != "" {
		vf, err := gguf.Open(*vocab)
		if err != nil {
			return fmt.Errorf("model random --vocab: %w", err)
		}
		for _, e := range vf.KV {
			if strings.HasPrefix(e.Key, "tokenizer.") {
				spec.Tokenizer = append(spec.Tokenizer, e)
			}
		}
		defer vf.Close()
	}
	if up := strings.ToUpper(*typ); slices.Contains(model.Mixes(), up) {
		spec.Mix = up
	} else if spec.Type, err = gguf.ParseTensorType(strings.ToUpper(*typ)); err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := model.WriteRandom(f, spec); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: random %s-shaped %s model (%s weights)\n", *out, s.Name, orDefault(*arch, s.Arch), strings.ToUpper(*typ))
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

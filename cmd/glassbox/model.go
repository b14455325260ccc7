package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
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
	return inspect(stdout, fs.Arg(0), f)
}

func inspect(w io.Writer, path string, f *gguf.File) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	name, _ := f.String("general.name")
	fmt.Fprintf(w, "file:          %s (%.1f MB, GGUF v%d, %d tensors, %d metadata keys)\n", path, float64(st.Size())/1e6, f.Version, len(f.Tensors), len(f.KV))
	if name != "" {
		fmt.Fprintf(w, "name:          %s\n", name)
	}
	c, cerr := model.ConfigFromGGUF(f)
	arch, _ := f.String("general.architecture")
	fmt.Fprintf(w, "architecture:  %s", arch)
	if cerr != nil {
		fmt.Fprintf(w, " (not servable: %v)\n", cerr)
	} else {
		fmt.Fprintf(w, ": %d layers, hidden %d, %d heads / %d KV heads of %d, FFN %d, vocab %d, context %d, RoPE base %g\n",
			c.Layers, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab, c.ContextLen, c.RopeBase)
	}
	var params int64
	types := map[string]int{}
	typeBytes := map[string]int64{}
	for _, t := range f.Tensors {
		params += t.Elements()
		types[t.Type.String()]++
		typeBytes[t.Type.String()] += t.Size
	}
	fmt.Fprintf(w, "parameters:    %.3g\n", float64(params))
	var names []string
	for k := range types {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s x%d (%.1f MB)", k, types[k], float64(typeBytes[k])/1e6))
	}
	fmt.Fprintf(w, "weight types:  %s\n", strings.Join(parts, ", "))
	tm, _ := f.String("tokenizer.ggml.model")
	pre, _ := f.String("tokenizer.ggml.pre")
	toks, _ := f.Get("tokenizer.ggml.tokens")
	ntok := 0
	if s, ok := toks.Value.([]string); ok {
		ntok = len(s)
	}
	bos, hasBOS := f.Uint("tokenizer.ggml.bos_token_id")
	eos, hasEOS := f.Uint("tokenizer.ggml.eos_token_id")
	fmt.Fprintf(w, "tokenizer:     %s (pre %q), %d tokens", orNone(tm), pre, ntok)
	if hasBOS {
		fmt.Fprintf(w, ", bos %d", bos)
	}
	if hasEOS {
		fmt.Fprintf(w, ", eos %d", eos)
	}
	fmt.Fprintln(w)
	if tmpl, ok := f.String("tokenizer.chat_template"); ok {
		first, _, _ := strings.Cut(strings.TrimSpace(tmpl), "\n")
		if len(first) > 100 {
			first = first[:100] + "…"
		}
		fmt.Fprintf(w, "chat template: %d bytes: %s\n", len(tmpl), first)
	} else {
		fmt.Fprintln(w, "chat template: none (ChatML is used)")
	}
	if cerr == nil {
		fmt.Fprintf(w, "KV cache:      %d bytes per token (float32 K and V, all layers); %.1f MB for the full context\n",
			c.KVBytesPerToken(), float64(c.KVBytesPerToken())*float64(c.ContextLen)/1e6)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
	typ := fs.String("type", "q8_0", "2-D weight type: f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q5_k, q6_k, or the mix q4_k_m")
	out := fs.String("o", "", "output file (required)")
	seed := fs.Uint64("seed", 1, "random seed")
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
	spec := model.RandomSpec{Arch: *arch, Shape: s, Seed: *seed}
	if strings.EqualFold(*typ, "q4_k_m") {
		spec.Mix = "Q4_K_M"
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

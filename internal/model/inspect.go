package model

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Inspect prints what a GGUF file holds: architecture, weights, tokenizer,
// chat template and KV-cache cost, the way `glassbox model inspect` shows it.
func Inspect(w io.Writer, path string, f *gguf.File) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	name, _ := f.String("general.name")
	fmt.Fprintf(w, "file:          %s (%.1f MB, GGUF v%d, %d tensors, %d metadata keys)\n", path, float64(st.Size())/1e6, f.Version, len(f.Tensors), len(f.KV))
	if name != "" {
		fmt.Fprintf(w, "name:          %s\n", name)
	}
	c, cerr := ConfigFromGGUF(f)
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

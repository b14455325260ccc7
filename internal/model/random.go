package model

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// Shape is a named real architecture shape for random-weight models.
type Shape struct {
	Name                                string
	Arch                                string // default architecture
	Hidden, Layers, Heads, KVHeads, FFN int
	HeadDim                             int // 0: Hidden/Heads
	Vocab, Context                      int
	RopeBase, NormEps                   float32
	Tied                                bool
}

// Shapes lists the shapes `glassbox model random` knows, from the models'
// published config.json files.
func Shapes() []Shape {
	return []Shape{
		{Name: "tiny", Arch: "llama", Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 512, Context: 512, RopeBase: 10000, NormEps: 1e-5},
		{Name: "qwen2.5-0.5b", Arch: "qwen2", Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864, Vocab: 151936, Context: 32768, RopeBase: 1e6, NormEps: 1e-6, Tied: true},
		{Name: "qwen3-0.6b", Arch: "qwen3", Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072, Vocab: 151936, Context: 40960, RopeBase: 1e6, NormEps: 1e-6, Tied: true},
		{Name: "tinyllama-1.1b", Arch: "llama", Hidden: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000, Context: 2048, RopeBase: 10000, NormEps: 1e-5},
		{Name: "llama-3.1-8b", Arch: "llama", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 128256, Context: 131072, RopeBase: 500000, NormEps: 1e-5},
		{Name: "smollm-135m", Arch: "llama", Hidden: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536, Vocab: 49152, Context: 2048, RopeBase: 10000, NormEps: 1e-5, Tied: true},
	}
}

// Config is the shape's hyperparameters as a GGUF of it would give them
// (for runs on random weights made elsewhere, such as on a GPU).
func (s Shape) Config() Config {
	c := Config{Arch: s.Arch, Layers: s.Layers, Hidden: s.Hidden, Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, FFN: s.FFN,
		Vocab: s.Vocab, ContextLen: s.Context, RopeBase: s.RopeBase, NormEps: s.NormEps, TiedEmbedded: s.Tied}
	if c.HeadDim == 0 {
		c.HeadDim = s.Hidden / s.Heads
	}
	c.RopeDims = c.HeadDim
	switch s.Arch {
	case "qwen2":
		c.RopeMode = RopeNeoX
	case "qwen3":
		c.RopeMode, c.QKNorm = RopeNeoX, true
	}
	return c
}

// LookupShape finds a shape by name.
func LookupShape(name string) (Shape, error) {
	var names []string
	for _, s := range Shapes() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Shape{}, fmt.Errorf("unknown shape %q (known: %v)", name, names)
}

// RandomSpec says what WriteRandom makes.
type RandomSpec struct {
	Arch  string // llama, qwen2 or qwen3; empty takes the shape's
	Shape Shape
	Type  gguf.TensorType // of the 2-D weights; norms and biases stay F32
	// Mix chooses per-tensor types as llama-quantize does for one of its
	// K-quant mixes (Mixes): "Q4_K_M" is Q4_K, with Q6_K for the output
	// head and for attn_v/ffn_down in a subset of layers. It overrides
	// Type.
	Mix  string
	Seed uint64
	// Tokenizer, when set, is a real vocabulary's tokenizer.* metadata
	// (read from another GGUF) to write instead of the synthetic one; the
	// vocabulary's size then replaces the shape's. Random weights with a
	// real vocabulary measure what depends on the tokens themselves, such
	// as structured outputs' masks.
	Tokenizer []gguf.KV
	// QuietFrom, when above 0, makes the layers from it on write to the
	// residual stream at Quiet times the usual scale (attn_output and
	// ffn_down): a target that the model of its first QuietFrom layers
	// (Shape.Layers = QuietFrom, the same Seed) drafts well, for
	// speculative decoding's benchmarks. The random draws are the same
	// either way, so the first layers are the draft's exactly.
	QuietFrom int
	Quiet     float64
	// Pooling, when set, makes it an embedding model ({arch}.pooling_type).
	Pooling Pooling
}

// chatML is the chat template the random models carry: Qwen2.5's ChatML,
// tools in Hermes' format included, so that random models exercise tool
// calling as Qwen's do (without Qwen's default system prompt).
const chatML = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`

// WriteRandom writes a GGUF model of a real architecture and shape with
// random weights (normal, σ 0.02; norms near 1) and a synthetic tokenizer
// of the shape's vocabulary size: SentencePiece for llama, byte-level BPE
// for qwen. It is for tests and benchmarks without downloads.
func WriteRandom(out io.Writer, spec RandomSpec) error {
	s := spec.Shape
	arch := spec.Arch
	if arch == "" {
		arch = s.Arch
	}
	if !slices.Contains([]string{"llama", "qwen2", "qwen3"}, arch) {
		return fmt.Errorf("random model: architecture %q is not one of llama, qwen2, qwen3", arch)
	}
	headDim := s.HeadDim
	if headDim == 0 {
		headDim = s.Hidden / s.Heads
	}
	w := gguf.NewWriter()
	kv := func(k string, v any) {
		if err := w.AddKV(k, v); err != nil {
			panic("BUG: model: " + err.Error())
		}
	}
	kv("general.architecture", arch)
	kv("general.name", fmt.Sprintf("random %s %s", s.Name, spec.Type))
	kv(arch+".block_count", uint32(s.Layers))
	kv(arch+".embedding_length", uint32(s.Hidden))
	kv(arch+".feed_forward_length", uint32(s.FFN))
	kv(arch+".attention.head_count", uint32(s.Heads))
	kv(arch+".attention.head_count_kv", uint32(s.KVHeads))
	kv(arch+".attention.key_length", uint32(headDim))
	kv(arch+".attention.value_length", uint32(headDim))
	kv(arch+".context_length", uint32(s.Context))
	kv(arch+".rope.freq_base", s.RopeBase)
	kv(arch+".rope.dimension_count", uint32(headDim))
	kv(arch+".attention.layer_norm_rms_epsilon", s.NormEps)
	if spec.Pooling != PoolNone {
		kv(arch+".pooling_type", uint32(spec.Pooling))
	}
	if spec.Tokenizer != nil {
		n := 0
		for _, e := range spec.Tokenizer {
			if e.Key == "tokenizer.chat_template" {
				continue // the random models' own, which knows tools
			}
			if e.Key == "tokenizer.ggml.tokens" {
				if toks, ok := e.Value.([]string); ok {
					n = len(toks)
				}
			}
			kv(e.Key, e.Value)
		}
		if n == 0 {
			return errors.New("random model: the vocabulary has no tokenizer.ggml.tokens")
		}
		s.Vocab = n
	} else {
		tokenizerKVs(kv, arch, s.Vocab)
	}
	kv("tokenizer.chat_template", chatML)

	g := &generator{rng: rand.New(rand.NewPCG(spec.Seed, 0x5eed)), typ: spec.Type, w: w, layers: s.Layers, tied: s.Tied, scale: 1}
	if spec.Mix != "" {
		i := slices.Index(Mixes(), spec.Mix)
		if i < 0 {
			return fmt.Errorf("random model: unknown mix %q (known: %s)", spec.Mix, strings.Join(Mixes(), ", "))
		}
		g.mix = spec.Mix
		g.typ = map[byte]gguf.TensorType{'4': gguf.Q4_K, '5': gguf.Q5_K}[spec.Mix[1]]
	}
	qDim, kvDim := s.Heads*headDim, s.KVHeads*headDim
	g.matrix("token_embd.weight", s.Vocab, s.Hidden)
	g.norm("output_norm.weight", s.Hidden)
	if !s.Tied {
		g.matrix("output.weight", s.Vocab, s.Hidden)
	}
	for i := range s.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		g.norm(p+"attn_norm.weight", s.Hidden)
		g.matrix(p+"attn_q.weight", qDim, s.Hidden)
		g.matrix(p+"attn_k.weight", kvDim, s.Hidden)
		g.matrix(p+"attn_v.weight", kvDim, s.Hidden)
		if arch == "qwen2" {
			g.bias(p+"attn_q.bias", qDim)
			g.bias(p+"attn_k.bias", kvDim)
			g.bias(p+"attn_v.bias", kvDim)
		}
		if arch == "qwen3" {
			g.norm(p+"attn_q_norm.weight", headDim)
			g.norm(p+"attn_k_norm.weight", headDim)
		}
		if spec.QuietFrom > 0 && i >= spec.QuietFrom {
			g.scale = spec.Quiet
		}
		g.matrix(p+"attn_output.weight", s.Hidden, qDim)
		g.scale = 1
		g.norm(p+"ffn_norm.weight", s.Hidden)
		g.matrix(p+"ffn_gate.weight", s.FFN, s.Hidden)
		g.matrix(p+"ffn_up.weight", s.FFN, s.Hidden)
		if spec.QuietFrom > 0 && i >= spec.QuietFrom {
			g.scale = spec.Quiet
		}
		g.matrix(p+"ffn_down.weight", s.Hidden, s.FFN)
		g.scale = 1
	}
	if g.err != nil {
		return fmt.Errorf("random model: %w", g.err)
	}
	_, err := w.WriteTo(out)
	return err
}

// Mixes are the llama-quantize K-quant mixes WriteRandom makes.
func Mixes() []string { return []string{"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S"} }

type generator struct {
	rng    *rand.Rand
	typ    gguf.TensorType // the mix's default type
	mix    string          // one of Mixes, or ""
	layers int
	tied   bool    // token_embd is also the output head
	scale  float64 // of the next matrix's σ
	w      *gguf.Writer
	buf    []float32
	err    error
}

func (g *generator) add(name string, typ gguf.TensorType, dims []int64, fill func(i int) float32) {
	if g.err != nil {
		return
	}
	n := int(dims[0])
	if len(dims) == 2 {
		n *= int(dims[1])
	}
	g.buf = slices.Grow(g.buf[:0], n)[:n]
	for i := range g.buf {
		g.buf[i] = fill(i)
	}
	data, err := tensor.Quantize(typ, g.buf, nil)
	if err == nil {
		err = g.w.AddTensor(name, typ, dims, data)
	}
	if err != nil {
		g.err = fmt.Errorf("tensor %s: %w", name, err)
	}
}

func (g *generator) matrix(name string, rows, cols int) {
	typ := g.typeOf(name)
	if cols%typ.BlockElems() != 0 {
		// As llama-quantize falls back for rows that are not whole blocks.
		typ = map[gguf.TensorType]gguf.TensorType{gguf.Q4_K: gguf.Q5_0, gguf.Q5_K: gguf.Q5_1, gguf.Q6_K: gguf.Q8_0}[typ]
		if typ == 0 || typ == gguf.Q5_1 {
			typ = gguf.Q8_0
		}
	}
	g.add(name, typ, []int64{int64(cols), int64(rows)}, func(int) float32 { return float32(g.rng.NormFloat64() * 0.02 * g.scale) })
}

// typeOf is the tensor's type: the spec's, or the mix's choice as
// llama-quantize's llama_tensor_get_type makes it for a dense model
// without an importance matrix (the fallback for rows that are not whole
// K-quant blocks is matrix's).
func (g *generator) typeOf(name string) gguf.TensorType {
	if g.mix == "" {
		return g.typ
	}
	if name == "output.weight" || (g.tied && name == "token_embd.weight") {
		return gguf.Q6_K
	}
	var layer int
	var kind string
	if _, err := fmt.Sscanf(name, "blk.%d.%s", &layer, &kind); err != nil {
		return g.typ
	}
	if !strings.HasPrefix(kind, "attn_v.") && !strings.HasPrefix(kind, "ffn_down.") {
		return g.typ
	}
	switch g.mix {
	case "Q4_K_M", "Q5_K_M":
		if moreBits(layer, g.layers) {
			return gguf.Q6_K
		}
	case "Q4_K_S":
		// attn_v counts its own tensors (one a layer, so the layer) < 4;
		// ffn_down the first eighth of the layers.
		if strings.HasPrefix(kind, "attn_v.") && layer < 4 || strings.HasPrefix(kind, "ffn_down.") && layer < g.layers/8 {
			return gguf.Q5_K
		}
	}
	return g.typ
}

// moreBits is llama-quantize's use_more_bits: the first and last eighth of
// the layers and every third one between.
func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

func (g *generator) norm(name string, n int) {
	g.add(name, gguf.F32, []int64{int64(n)}, func(int) float32 { return float32(1 + 0.1*g.rng.NormFloat64()) })
}

func (g *generator) bias(name string, n int) {
	g.add(name, gguf.F32, []int64{int64(n)}, func(int) float32 { return float32(0.1 * g.rng.NormFloat64()) })
}

// tokenizerKVs writes a synthetic vocabulary of size n: for llama a
// SentencePiece one (<unk>, <s>, </s>, 256 byte tokens, then pieces), for
// qwen a GPT-2 byte-level one (the 256 byte symbols, filler pieces, then
// Qwen's special tokens at the end).
func tokenizerKVs(kv func(string, any), arch string, n int) {
	tokens := make([]string, 0, n)
	types := make([]int32, 0, n)
	if arch == "llama" {
		tokens = append(tokens, "<unk>", "<s>", "</s>")
		types = append(types, 2, 3, 3)
		for b := range 256 {
			tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
			types = append(types, 6)
		}
		tokens = append(tokens, "▁")
		types = append(types, 1)
		for i := 0; len(tokens) < n; i++ {
			tokens = append(tokens, fmt.Sprintf("▁w%d", i))
			types = append(types, 1)
		}
		scores := make([]float32, len(tokens))
		for i := range scores {
			scores[i] = -float32(i)
		}
		kv("tokenizer.ggml.model", "llama")
		kv("tokenizer.ggml.pre", "default")
		kv("tokenizer.ggml.tokens", tokens)
		kv("tokenizer.ggml.scores", scores)
		kv("tokenizer.ggml.token_type", types)
		kv("tokenizer.ggml.bos_token_id", uint32(1))
		kv("tokenizer.ggml.eos_token_id", uint32(2))
		kv("tokenizer.ggml.unknown_token_id", uint32(0))
		kv("tokenizer.ggml.add_bos_token", true)
		return
	}
	tokens = append(tokens, byteSymbols()...)
	for range tokens {
		types = append(types, 1)
	}
	specials := []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
	for i := 0; len(tokens) < n-len(specials); i++ {
		tokens = append(tokens, fmt.Sprintf("Ġw%d", i))
		types = append(types, 1)
	}
	for _, sp := range specials {
		tokens = append(tokens, sp)
		types = append(types, 3)
	}
	kv("tokenizer.ggml.model", "gpt2")
	kv("tokenizer.ggml.pre", "qwen2")
	kv("tokenizer.ggml.tokens", tokens)
	kv("tokenizer.ggml.token_type", types)
	kv("tokenizer.ggml.merges", []string{})
	kv("tokenizer.ggml.bos_token_id", uint32(n-3))
	kv("tokenizer.ggml.eos_token_id", uint32(n-1))
	kv("tokenizer.ggml.padding_token_id", uint32(n-3))
	kv("tokenizer.ggml.add_bos_token", false)
}

// byteSymbols is GPT-2's bytes_to_unicode table in byte order: printable
// bytes map to themselves, the rest to U+0100 onwards.
func byteSymbols() []string {
	var keep []int
	for b := '!'; b <= '~'; b++ {
		keep = append(keep, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		keep = append(keep, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		keep = append(keep, b)
	}
	sort.Ints(keep)
	sym := make([]string, 256)
	next := 256
	for b := range 256 {
		if _, ok := slices.BinarySearch(keep, b); ok {
			sym[b] = string(rune(b))
		} else {
			sym[b] = string(rune(next))
			next++
		}
	}
	return sym
}

// Package model binds a GGUF file's tensors to a Llama-family architecture
// (llama, qwen2, qwen3) and runs its forward pass over a batch of sequences
// whose K/V live in paged blocks addressed by block tables.
//
// It uses gguf and tensor; it must not import the engine, server, metrics
// or executor packages (the cpu executor adapts it to the engine).
package model

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// RopeMode is how RoPE pairs dimensions.
type RopeMode int

const (
	RopeNormal RopeMode = iota // adjacent pairs (2i, 2i+1): llama
	RopeNeoX                   // halves (i, i+d/2): qwen2, qwen3
)

// Config is an architecture's hyperparameters, read from GGUF metadata.
type Config struct {
	Arch         string
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	FFN          int
	Vocab        int
	ContextLen   int
	RopeBase     float32
	RopeDims     int
	RopeMode     RopeMode
	NormEps      float32
	QKNorm       bool // qwen3: RMSNorm on each q and k head
	TiedEmbedded bool // output matrix is token_embd
	// Pooling is how an embedding model turns a prompt's hidden states
	// into one vector ({arch}.pooling_type); PoolNone for generative ones.
	Pooling Pooling
}

// Pooling is llama.cpp's pooling_type: which hidden states make a
// prompt's embedding.
type Pooling int

// The pooling types, with llama.cpp's numbers.
const (
	PoolNone Pooling = 0
	PoolMean Pooling = 1 // the mean over the prompt's tokens
	PoolCLS  Pooling = 2 // the first token's
	PoolLast Pooling = 3 // the last token's (Qwen3-Embedding)
	PoolRank Pooling = 4 // rerankers' classification head: not supported
)

func (p Pooling) String() string {
	switch p {
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	case PoolRank:
		return "rank"
	}
	return "none"
}

// ParsePooling reads a pooling type's name (none, mean, cls, last).
func ParsePooling(s string) (Pooling, error) {
	for _, p := range []Pooling{PoolNone, PoolMean, PoolCLS, PoolLast} {
		if s == p.String() {
			return p, nil
		}
	}
	return PoolNone, fmt.Errorf("unknown pooling %q (none, mean, cls, last)", s)
}

// ConfigFromGGUF reads the hyperparameters of a supported architecture.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	arch, _ := f.String("general.architecture")
	c := Config{Arch: arch}
	switch arch {
	case "llama", "mistral":
		c.RopeMode = RopeNormal
	case "qwen2":
		c.RopeMode = RopeNeoX
	case "qwen3":
		c.RopeMode = RopeNeoX
		c.QKNorm = true
	default:
		return c, fmt.Errorf("architecture %q is not supported (llama, mistral, qwen2, qwen3 are)", arch)
	}
	need := func(key string) int {
		v, ok := f.Uint(arch + "." + key)
		if !ok && c.Layers >= 0 {
			c.Layers = -1 // marks the error; reported below
		}
		return int(v)
	}
	c.Layers = need("block_count")
	c.Hidden = need("embedding_length")
	c.Heads = need("attention.head_count")
	c.FFN = need("feed_forward_length")
	if c.Layers <= 0 || c.Hidden <= 0 || c.Heads <= 0 || c.FFN <= 0 {
		return c, fmt.Errorf("%s: block_count, embedding_length, attention.head_count and feed_forward_length must be present and positive", arch)
	}
	c.KVHeads = c.Heads
	if v, ok := f.Uint(arch + ".attention.head_count_kv"); ok {
		c.KVHeads = int(v)
	}
	c.HeadDim = c.Hidden / c.Heads
	if v, ok := f.Uint(arch + ".attention.key_length"); ok {
		c.HeadDim = int(v)
	}
	if v, ok := f.Uint(arch + ".pooling_type"); ok {
		c.Pooling = Pooling(v)
		if c.Pooling > PoolLast {
			return c, fmt.Errorf("%s: pooling_type %d (rank: a reranker's) is not supported", arch, v)
		}
	}
	c.RopeDims = c.HeadDim
	if v, ok := f.Uint(arch + ".rope.dimension_count"); ok {
		c.RopeDims = int(v)
	}
	c.ContextLen = 2048
	if v, ok := f.Uint(arch + ".context_length"); ok {
		c.ContextLen = int(v)
	}
	c.RopeBase = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeBase = float32(v)
	}
	c.NormEps = 1e-5
	if v, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon"); ok {
		c.NormEps = float32(v)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return c, fmt.Errorf("%s: no 2-D token_embd.weight", arch)
	}
	c.Vocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.TiedEmbedded = !hasOut
	switch {
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return c, fmt.Errorf("%s: %d heads do not group over %d KV heads", arch, c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.RopeDims > c.HeadDim || c.RopeDims%2 != 0:
		return c, fmt.Errorf("%s: head dim %d and rope dims %d do not fit", arch, c.HeadDim, c.RopeDims)
	case c.Layers > 1024 || c.Hidden > 1<<16 || c.HeadDim > 1024 || c.FFN > 1<<18:
		return c, fmt.Errorf("%s: implausible shape (%d layers, hidden %d, head dim %d, ffn %d)", arch, c.Layers, c.Hidden, c.HeadDim, c.FFN)
	}
	return c, nil
}

// KVDim is the width of one token's K (or V) in one layer.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// KVBytesPerToken is the cache cost of one token over all layers, K and
// V, in the default cache type (what NewRunner allocates).
func (c *Config) KVBytesPerToken() int64 { return c.KVBytesPerTokenOf(DefaultKVDtype) }

// KVBytesPerTokenOf is KVBytesPerToken for a cache of dt: a cache sized
// in bytes holds twice the tokens in fp16 as in fp32.
func (c *Config) KVBytesPerTokenOf(dt KVDtype) int64 {
	return int64(c.Layers) * 2 * int64(c.KVDim()) * int64(dt.Bytes())
}

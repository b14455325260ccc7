package model

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm       []float32
	Q, K, V, O     *tensor.Matrix
	QBias, KBias   []float32 // qwen2
	VBias          []float32
	QNorm, KNorm   []float32 // qwen3, per head dim
	FFNNorm        []float32
	Gate, Up, Down *tensor.Matrix
}

// Weights is a whole model bound to its file's memory.
type Weights struct {
	Config
	Embed      *tensor.Matrix
	OutputNorm []float32
	Output     *tensor.Matrix
	Layers     []Layer
	repacked   map[string]bool // the types repack rearranged
}

// CanDraftFor refuses, by what differs, a draft model (w) that cannot
// draft for target in speculative decoding: another vocabulary, or hidden
// states only (an embedding model).
func (w *Weights) CanDraftFor(target *Weights) error {
	if w.Config.Pooling != PoolNone {
		return fmt.Errorf("the draft model is an embedding model (pooling %v)", w.Config.Pooling)
	}
	if w.Vocab != target.Vocab {
		return fmt.Errorf("the draft model has %d embeddings, the target %d: a draft must share the target's vocabulary", w.Vocab, target.Vocab)
	}
	return nil
}

// Kernels is the kernel set these weights run on and the layout they
// have: "repacked" with the types the loader rearranged, or GGUF's rows
// (a mapped file, or no type this CPU repacks).
func (w *Weights) Kernels() tensor.Kernels {
	k := tensor.KernelInfo()
	var types []string
	for _, t := range k.Repacked {
		if w.repacked[t] {
			types = append(types, t)
		}
	}
	k.Repacked, k.Layout = types, "rows"
	if len(types) > 0 {
		k.Layout = "repacked"
	}
	return k
}

// Load binds f's tensors; quantised matrices alias the file's mapping, and
// small 1-D tensors are dequantised to float32.
func Load(f *gguf.File) (*Weights, error) {
	c, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	w := &Weights{Config: c, Layers: make([]Layer, c.Layers)}
	b := binder{f: f}
	w.Embed = b.matrix("token_embd.weight", c.Vocab, c.Hidden)
	w.OutputNorm = b.vector("output_norm.weight", c.Hidden)
	if c.TiedEmbedded {
		w.Output = w.Embed
	} else {
		w.Output = b.matrix("output.weight", c.Vocab, c.Hidden)
	}
	qDim, kvDim := c.Heads*c.HeadDim, c.KVDim()
	for i := range w.Layers {
		l := &w.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		l.AttnNorm = b.vector(p+"attn_norm.weight", c.Hidden)
		l.Q = b.matrix(p+"attn_q.weight", qDim, c.Hidden)
		l.K = b.matrix(p+"attn_k.weight", kvDim, c.Hidden)
		l.V = b.matrix(p+"attn_v.weight", kvDim, c.Hidden)
		l.O = b.matrix(p+"attn_output.weight", c.Hidden, qDim)
		l.QBias = b.optVector(p+"attn_q.bias", qDim)
		l.KBias = b.optVector(p+"attn_k.bias", kvDim)
		l.VBias = b.optVector(p+"attn_v.bias", kvDim)
		if c.QKNorm {
			l.QNorm = b.vector(p+"attn_q_norm.weight", c.HeadDim)
			l.KNorm = b.vector(p+"attn_k_norm.weight", c.HeadDim)
		}
		l.FFNNorm = b.vector(p+"ffn_norm.weight", c.Hidden)
		l.Gate = b.matrix(p+"ffn_gate.weight", c.FFN, c.Hidden)
		l.Up = b.matrix(p+"ffn_up.weight", c.FFN, c.Hidden)
		l.Down = b.matrix(p+"ffn_down.weight", c.Hidden, c.FFN)
	}
	if b.err != nil {
		return nil, fmt.Errorf("load %s weights: %w", c.Arch, b.err)
	}
	if f.Owned {
		w.repack()
	}
	return w, nil
}

// Streamed lists what one decode step reads of the weights: every matrix
// a token is multiplied by, the output head included; of the embedding
// table it reads one row, and norms and biases are noise beside the
// matrices.
func (w *Weights) Streamed() []*tensor.Matrix {
	ms := []*tensor.Matrix{w.Output}
	for _, l := range w.Layers {
		ms = append(ms, l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down)
	}
	return ms
}

// StreamedBytes is the size of Streamed: the bytes a decode step reads of
// the weights, in their format (repacking keeps the size).
func (w *Weights) StreamedBytes() int64 {
	var n int64
	for _, m := range w.Streamed() {
		n += int64(len(m.Data))
	}
	return n
}

// StreamedBytesByType splits StreamedBytes by weight format (Q4_K_M files
// mix Q4_K and Q6_K, Qwen2.5's fall back to Q5_0 and Q8_0).
func (w *Weights) StreamedBytesByType() map[string]int64 {
	by := map[string]int64{}
	for _, m := range w.Streamed() {
		by[m.Type.String()] += int64(len(m.Data))
	}
	return by
}

// repack rearranges, in the file's own memory, the matrices the CPU has
// faster kernels for in another layout (tensor.Matrix.Repack). The
// embedding table may be one of them: Row reads either layout.
func (w *Weights) repack() {
	ms := []*tensor.Matrix{w.Embed}
	if w.Output != w.Embed {
		ms = append(ms, w.Output)
	}
	for _, l := range w.Layers {
		ms = append(ms, l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down)
	}
	w.repacked = map[string]bool{}
	for _, m := range ms {
		if m.Repack(m.Data) {
			w.repacked[m.Type.String()] = true
		}
	}
}

// binder looks tensors up and checks their shapes, keeping the first error.
type binder struct {
	f   *gguf.File
	err error
}

func (b *binder) info(name string, dims ...int) *gguf.TensorInfo {
	if b.err != nil {
		return nil
	}
	t, ok := b.f.Tensor(name)
	if !ok {
		b.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	if len(t.Dims) != len(dims) {
		b.err = fmt.Errorf("tensor %s has shape %v, want %v", name, t.Dims, dims)
		return nil
	}
	for i, d := range dims {
		if t.Dims[i] != int64(d) {
			b.err = fmt.Errorf("tensor %s has shape %v, want %v", name, t.Dims, dims)
			return nil
		}
	}
	return t
}

func (b *binder) matrix(name string, rows, cols int) *tensor.Matrix {
	t := b.info(name, cols, rows)
	if t == nil {
		return nil
	}
	m, err := tensor.NewMatrix(t.Type, rows, cols, b.f.TensorData(t))
	if err != nil {
		b.err = fmt.Errorf("tensor %s: %w", name, err)
	}
	return m
}

func (b *binder) vector(name string, n int) []float32 {
	t := b.info(name, n)
	if t == nil {
		return nil
	}
	v := make([]float32, n)
	if err := tensor.Dequantize(t.Type, b.f.TensorData(t), v); err != nil {
		b.err = fmt.Errorf("tensor %s: %w", name, err)
	}
	return v
}

func (b *binder) optVector(name string, n int) []float32 {
	if _, ok := b.f.Tensor(name); !ok {
		return nil
	}
	return b.vector(name, n)
}

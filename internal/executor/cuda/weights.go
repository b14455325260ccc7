package cuda

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// devLayer is one layer's weights in device memory: the projections
// fused where they share an input (Q, K and V; gate and up), in the
// model's one GEMM type; norms and biases in float32.
type devLayer struct {
	attnNorm, ffnNorm    cuda.Ptr
	qkv, o, gateUp, down cuda.Ptr
	bias                 cuda.Ptr // Q, K and V biases concatenated (qwen2), or 0
	qNorm, kNorm         cuda.Ptr // qwen3, or 0
}

// devWeights is a model in device memory.
type devWeights struct {
	c         model.Config
	dt        cuda.DType // every matrix's type, and the GEMMs' input type
	embedType cuda.DType
	embed     cuda.Ptr
	outNorm   cuda.Ptr
	output    cuda.Ptr
	layers    []devLayer
	rope      cuda.Ptr // cos/sin of every position below ropeLen
	ropeLen   int
	Bytes     int64 // device memory held
	allocs    []cuda.Ptr
	scratch   cuda.Ptr // staging for conversions, freed after the upload
	scratchN  int64
}

// deviceType is the type a GGUF matrix has on the device: its own for
// the float formats, fp16 for Q8_0 (dequantised at load).
func deviceType(t gguf.TensorType) (cuda.DType, error) {
	switch t {
	case gguf.F32:
		return cuda.F32, nil
	case gguf.F16, gguf.Q8_0:
		return cuda.F16, nil
	case gguf.BF16:
		return cuda.BF16, nil
	}
	return 0, fmt.Errorf("%s weights are not supported on the GPU yet (F32, F16, BF16 and Q8_0 are)", t)
}

// GEMMType names the type the GPU holds w's matrices in (and runs its
// GEMMs with): f32, f16 (Q8_0 too) or bf16.
func GEMMType(w *model.Weights) (string, error) {
	t, err := deviceType(w.Layers[0].Q.Type)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// KVCacheType names the KV cache's element type for w on the GPU, as
// vLLM's --kv-cache-dtype auto takes the model's: bf16 for a BF16 model,
// fp16 for the others (F16 and Q8_0; F32 models too: no fp32 cache is
// built). flag is --kv-cache-dtype: empty or auto, or that type by one of
// its names; anything else is refused by name.
func KVCacheType(w *model.Weights, flag string) (string, error) {
	t, err := deviceType(w.Layers[0].Q.Type)
	if err != nil {
		return "", err
	}
	kv := kvType(t)
	name := map[cuda.DType]string{cuda.F16: "fp16", cuda.BF16: "bf16"}[kv]
	switch flag {
	case "", "auto":
		return name, nil
	case "fp16", "f16", "float16", "half":
		if kv == cuda.F16 {
			return name, nil
		}
	case "bf16", "bfloat16":
		if kv == cuda.BF16 {
			return name, nil
		}
	}
	return "", fmt.Errorf("--kv-cache-dtype %s: the GPU executor keeps a %s model's K/V in %s (auto)", flag, w.Layers[0].Q.Type, name)
}

// CheckWeights reports whether the GPU executor runs w, before any
// device memory is spent on it.
func CheckWeights(w *model.Weights) error {
	if w.Pooling != model.PoolNone {
		return fmt.Errorf("embedding models (pooling %s) are not on the GPU executor yet", w.Pooling)
	}
	if _, err := deviceType(w.Embed.Type); err != nil {
		return fmt.Errorf("token_embd: %w", err)
	}
	if _, err := deviceType(w.Output.Type); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	for i, l := range w.Layers {
		for _, m := range []*tensor.Matrix{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			if _, err := deviceType(m.Type); err != nil {
				return fmt.Errorf("layer %d: %w", i, err)
			}
		}
	}
	if w.HeadDim > 1024 {
		return fmt.Errorf("head dim %d: the GPU kernels take at most 1024", w.HeadDim)
	}
	return nil
}

// WeightBytes is the device memory uploadWeights will take for w with a
// RoPE table of ropeLen positions.
func WeightBytes(w *model.Weights, ropeLen int) int64 {
	dt, _ := deviceType(w.Layers[0].Q.Type)
	c := &w.Config
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	per := int64(dt.Size()) * int64(c.Hidden) * int64(qd+2*kvd+qd+3*c.FFN)
	n := per*int64(c.Layers) + int64(4*c.Layers*(2*c.Hidden+qd+2*kvd+2*c.HeadDim))
	et, _ := deviceType(w.Embed.Type)
	n += int64(et.Size()) * int64(c.Vocab) * int64(c.Hidden)
	if !(w.Output == w.Embed && et == dt) {
		n += int64(dt.Size()) * int64(c.Vocab) * int64(c.Hidden)
	}
	return n + int64(4*c.Hidden) + int64(4*ropeLen*c.RopeDims)
}

// uploadWeights copies w to the device (inside Do).
func (d *Device) uploadWeights(w *model.Weights, ropeLen int) (dw *devWeights, err error) {
	if err := CheckWeights(w); err != nil {
		return nil, err
	}
	c := w.Config
	dt, _ := deviceType(w.Layers[0].Q.Type)
	dw = &devWeights{c: c, dt: dt, ropeLen: ropeLen, layers: make([]devLayer, c.Layers)}
	defer func() {
		d.ctx.Free(dw.scratch)
		dw.scratch = 0
		if err != nil {
			dw.free(d)
		}
	}()
	if dw.embedType, err = deviceType(w.Embed.Type); err != nil {
		return nil, err
	}
	if dw.embed, err = d.uploadMatrices(dw, dw.embedType, w.Embed); err != nil {
		return nil, fmt.Errorf("upload token_embd: %w", err)
	}
	if w.Output == w.Embed && dw.embedType == dt {
		dw.output = dw.embed
	} else if dw.output, err = d.uploadMatrices(dw, dt, w.Output); err != nil {
		return nil, fmt.Errorf("upload output: %w", err)
	}
	if dw.outNorm, err = d.uploadFloats(dw, w.OutputNorm); err != nil {
		return nil, err
	}
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	for i := range w.Layers {
		l, dl := &w.Layers[i], &dw.layers[i]
		for _, m := range []struct {
			dst *cuda.Ptr
			ms  []*tensor.Matrix
		}{{&dl.qkv, []*tensor.Matrix{l.Q, l.K, l.V}}, {&dl.o, []*tensor.Matrix{l.O}},
			{&dl.gateUp, []*tensor.Matrix{l.Gate, l.Up}}, {&dl.down, []*tensor.Matrix{l.Down}}} {
			if *m.dst, err = d.uploadMatrices(dw, dt, m.ms...); err != nil {
				return nil, fmt.Errorf("upload layer %d: %w", i, err)
			}
		}
		for _, v := range []struct {
			dst *cuda.Ptr
			v   []float32
		}{{&dl.attnNorm, l.AttnNorm}, {&dl.ffnNorm, l.FFNNorm}, {&dl.qNorm, l.QNorm}, {&dl.kNorm, l.KNorm}} {
			if v.v == nil {
				continue
			}
			if *v.dst, err = d.uploadFloats(dw, v.v); err != nil {
				return nil, err
			}
		}
		if l.QBias != nil || l.KBias != nil || l.VBias != nil {
			b := make([]float32, qd+2*kvd)
			copy(b, l.QBias)
			copy(b[qd:], l.KBias)
			copy(b[qd+kvd:], l.VBias)
			if dl.bias, err = d.uploadFloats(dw, b); err != nil {
				return nil, err
			}
		}
	}
	if dw.rope, err = d.uploadFloats(dw, c.RopeTable(ropeLen)); err != nil {
		return nil, err
	}
	return dw, d.stream.Synchronize()
}

func (dw *devWeights) free(d *Device) {
	for _, p := range dw.allocs {
		d.ctx.Free(p)
	}
	dw.allocs = nil
}

func (d *Device) alloc(dw *devWeights, n int64) (cuda.Ptr, error) {
	p, err := d.ctx.Alloc(n)
	if err != nil {
		return 0, err
	}
	dw.allocs = append(dw.allocs, p)
	dw.Bytes += n
	return p, nil
}

func (d *Device) uploadFloats(dw *devWeights, v []float32) (cuda.Ptr, error) {
	p, err := d.alloc(dw, int64(4*len(v)))
	if err != nil {
		return 0, err
	}
	return p, cuda.CopyIn(d.stream, p, v)
}

// uploadMatrices stacks ms's rows (same columns) into one matrix of type
// dt: a fused projection.
func (d *Device) uploadMatrices(dw *devWeights, dt cuda.DType, ms ...*tensor.Matrix) (cuda.Ptr, error) {
	cols, rows := ms[0].Cols, 0
	for _, m := range ms {
		if m.Cols != cols {
			return 0, fmt.Errorf("fuse %d×%d with %d columns", m.Rows, m.Cols, cols)
		}
		rows += m.Rows
	}
	p, err := d.alloc(dw, int64(rows)*int64(cols)*int64(dt.Size()))
	if err != nil {
		return 0, err
	}
	at := p
	for _, m := range ms {
		if err := d.uploadMatrix(dw, dt, m, at); err != nil {
			return 0, err
		}
		at = at.Add(int64(m.Rows) * int64(m.Cols) * int64(dt.Size()))
	}
	return p, nil
}

// uploadMatrix writes m at dst as dt: copied as it is when the types
// agree; else staged raw, then dequantised or converted on the device.
func (d *Device) uploadMatrix(dw *devWeights, dt cuda.DType, m *tensor.Matrix, dst cuda.Ptr) error {
	n := int64(m.Rows) * int64(m.Cols)
	own, err := deviceType(m.Type)
	if err != nil {
		return err
	}
	if own == dt && m.Type != gguf.Q8_0 {
		return cuda.CopyIn(d.stream, dst, m.Data)
	}
	need := int64(len(m.Data))
	if m.Type == gguf.Q8_0 && own != dt {
		need += 2 * n // the fp16 values before conversion
	}
	if need > dw.scratchN {
		// The previous conversion may still read the old scratch: wait
		// for it before freeing it.
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		d.ctx.Free(dw.scratch)
		dw.scratch, dw.scratchN = 0, 0
		if dw.scratch, err = d.ctx.Alloc(need); err != nil {
			return err
		}
		dw.scratchN = need
	}
	// The copy is queued on the stream behind the previous conversion
	// (which may still read the scratch) and ahead of this one's kernels.
	if err := cuda.CopyIn(d.stream, dw.scratch, m.Data); err != nil {
		return err
	}
	src, st := dw.scratch, own
	if m.Type == gguf.Q8_0 {
		if own == dt {
			return d.dequantQ80(dw.scratch, dst, n)
		}
		src = dw.scratch.Add(int64(len(m.Data)))
		if err := d.dequantQ80(dw.scratch, src, n); err != nil {
			return err
		}
	}
	return d.convert(src, st, dst, dt, n)
}

package cuda

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// The kernels' launches, one method each; they queue work on the
// device's stream and must run on its thread (inside Do).

// launch queues k over grid blocks of block threads, after checking the
// launch against k's bounds and the GPU's limits (a recording device
// records it instead: the tests' GPU-less launches).
func (d *Device) launch(k *kernel, grid, block cuda.Dim, shared int) error {
	if err := k.fits(grid, block, shared, d.Info.SharedOptin); err != nil {
		return err
	}
	if d.record != nil {
		return d.record(k, grid, block, shared)
	}
	d.tl.begin(k.Name)
	defer d.tl.end()
	return k.Launch(d.stream, grid, block, shared, &d.args)
}

func threads(n int) int { return min(1024, max(32, (n+31)&^31)) }

// embed: x[t] = table[tokens[t]] for n tokens of H.
func (d *Device) embed(dt cuda.DType, table, tokens, x cuda.Ptr, n, H int) error {
	d.args.Reset().Ptr(table).Ptr(tokens).Ptr(x).Int(H)
	return d.launch(d.k.embed[dt], cuda.Dim{X: n}, cuda.Dim{X: threads(min(H, 256))}, 0)
}

// rmsnorm: out[i] = rmsnorm(x[r] (+ delta[r]·dscale[r])) · w for m rows r
// = rows[i] (rows 0: i; dscale 0: 1); writeback stores the sum into x.
func (d *Device) rmsnorm(dt cuda.DType, x, delta, dscale, rows, w, out cuda.Ptr, m, H int, eps float32, writeback bool) error {
	wb := 0
	if writeback {
		wb = 1
	}
	d.args.Reset().Ptr(x).Ptr(delta).Ptr(dscale).Ptr(rows).Ptr(w).Ptr(out).Int(H).Float(eps).Int(wb)
	return d.launch(d.k.rmsnorm[dt], cuda.Dim{X: m}, cuda.Dim{X: threads(min(H, 1024))}, 0)
}

// ropeArgs are qkv_rope's shapes.
type ropeArgs struct {
	heads, kvHeads, headDim, ropeDims, blockSize int
	neox                                         bool
	eps                                          float32
}

// qkvRope finishes n tokens' fused QKV rows of a model of activation type
// dt: biases, q/k norms, RoPE, K/V into the cache (of kvType(dt)) at their
// slots.
func (d *Device) qkvRope(dt cuda.DType, a ropeArgs, qkv, bias, qnorm, knorm, rope, pos, slots, kc, vc cuda.Ptr, n int) error {
	neox := 0
	if a.neox {
		neox = 1
	}
	d.args.Reset().Ptr(qkv).Ptr(bias).Ptr(qnorm).Ptr(knorm).Ptr(rope).Ptr(pos).Ptr(slots).Ptr(kc).Ptr(vc).
		Int(a.heads).Int(a.kvHeads).Int(a.headDim).Int(a.ropeDims).Int(neox).Int(a.blockSize).Float(a.eps)
	return d.launch(d.k.qkvRope[dt], cuda.Dim{X: n, Y: a.heads + 2*a.kvHeads}, cuda.Dim{X: threads(a.headDim)}, 0)
}

// siluMul: out = silu(g)·u over n rows of the fused gate/up product
// (tokens on the grid's x: a step may hold more than the 65535 of y).
// Into fp16, each row is divided by the power of two that keeps it within
// fp16's range, written to scale (n floats) for the next rmsnorm.
func (d *Device) siluMul(dt cuda.DType, gu, out, scale cuda.Ptr, n, F int) error {
	if dt == cuda.F16 {
		d.args.Reset().Ptr(gu).Ptr(out).Ptr(scale).Int(F)
		return d.launch(d.k.siluMul[dt], cuda.Dim{X: n}, cuda.Dim{X: 1024}, 0)
	}
	d.args.Reset().Ptr(gu).Ptr(out).Int(F)
	return d.launch(d.k.siluMul[dt], cuda.Dim{X: n, Y: (F + 255) / 256}, cuda.Dim{X: 256}, 0)
}

// kvType is the KV cache's element type beside activations of type dt:
// bf16 for a bf16 model (vLLM's "auto": the model's type, whose range is
// float's), fp16 otherwise (kernels/common.cuh's KVOf).
func kvType(dt cuda.DType) cuda.DType {
	if dt == cuda.BF16 {
		return cuda.BF16
	}
	return cuda.F16
}

// attnShape is attention's shapes.
type attnShape struct {
	heads, kvHeads, headDim, blockSize int
}

func (s attnShape) group() int { return s.heads / s.kvHeads }

// fastDecode reports whether the decode kernel takes this shape.
func (s attnShape) fastDecode() bool {
	return (s.headDim == 64 || s.headDim == 128) && s.group() <= maxDecodeGroup
}

const maxDecodeGroup = 8 // MAXG in attention.cuh

// decodeArgs are one decode attention launch's buffers: nseq sequences,
// each one query token (row qrow[s] of q, rows of qs floats) over ctx[s]
// keys through its table (rows of *maxb ints: an int in device memory);
// partials for splits > 1.
type decodeArgs struct {
	q                 cuda.Ptr
	qs                int
	qrow, ctx, tables cuda.Ptr
	maxb              cuda.Ptr
	nseq, splits      int
	po, pm, pl        cuda.Ptr
	kc, vc, out       cuda.Ptr
}

// decode runs decode attention with ks's kernel.
func (d *Device) decode(ks kernelSet, dt cuda.DType, s attnShape, a decodeArgs) error {
	if !s.fastDecode() {
		return fmt.Errorf("decode attention: head dim %d with %d query heads per KV head has no kernel", s.headDim, s.group())
	}
	f := d.k.tdecode128[dt]
	switch {
	case !ks.tiled && s.headDim == 64:
		f = d.k.decode64[dt]
	case !ks.tiled:
		f = d.k.decode128[dt]
	case s.headDim == 64:
		f = d.k.tdecode64[dt]
	}
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	d.args.Reset().Ptr(a.q).Int(a.qs).Ptr(a.qrow).Ptr(a.ctx).Ptr(a.tables).Ptr(a.maxb).Ptr(a.kc).Ptr(a.vc).Ptr(a.out).
		Ptr(a.po).Ptr(a.pm).Ptr(a.pl).Int(s.group()).Int(s.kvHeads).Int(s.blockSize).Float(scale)
	if err := d.launch(f, cuda.Dim{X: s.kvHeads, Y: a.nseq, Z: a.splits}, cuda.Dim{X: 128}, 0); err != nil {
		return err
	}
	if a.splits == 1 {
		return nil
	}
	d.args.Reset().Ptr(a.qrow).Ptr(a.po).Ptr(a.pm).Ptr(a.pl).Ptr(a.out).Int(s.heads).Int(s.headDim).Int(a.splits)
	return d.launch(d.k.combine[dt], cuda.Dim{X: a.nseq, Y: s.heads}, cuda.Dim{X: threads(s.headDim)}, 0)
}

// prefillRows is how many query rows (tokens × query heads of one KV
// head) one prefill block takes.
const prefillRows = 64

// prefillTokens is how many tokens one prefill item takes.
func (s attnShape) prefillTokens() int { return max(1, prefillRows/s.group()) }

// flash reports whether the tensor-core prefill kernel takes this
// shape: head dims 64 and 128, up to 64 query heads per KV head.
func (s attnShape) flash() bool {
	return (s.headDim == 64 || s.headDim == 128) && s.group() <= prefillRows
}

// flashShared is the tensor-core kernel's dynamic shared memory: Q, K and
// V tiles of 64 rows of padded fp16 (flash.cuh).
func flashShared(headDim int) int { return 3 * 64 * (headDim + 8) * 2 }

// prefillShared is the prefill kernel's dynamic shared memory for rows
// query rows (attention.cuh's layout).
func prefillShared(headDim, rows int) int {
	const kt = 32
	return 4 * (2*rows*headDim + kt*(headDim+1) + kt*headDim + rows*(kt+1) + 3*rows)
}

// prefill runs nitems items (4 ints each: sequence, first row, tokens,
// at most ks.prefillTokens(), first position) of causal attention over the
// paged cache with ks's kernel.
func (d *Device) prefill(ks kernelSet, dt cuda.DType, s attnShape, q cuda.Ptr, qs int, items, tables cuda.Ptr, maxb, nitems int, kc, vc, out cuda.Ptr) error {
	if ks.flash && s.flash() {
		f := d.k.flash128[dt]
		if s.headDim == 64 {
			f = d.k.flash64[dt]
		}
		scale := float32(1 / math.Sqrt(float64(s.headDim)))
		d.args.Reset().Ptr(q).Int(qs).Ptr(items).Ptr(tables).Int(maxb).Ptr(kc).Ptr(vc).Ptr(out).
			Int(s.group()).Int(s.kvHeads).Int(s.blockSize).Float(scale)
		return d.launch(f, cuda.Dim{X: nitems, Y: s.kvHeads}, cuda.Dim{X: 128}, flashShared(s.headDim))
	}
	rows := ks.plainTokens * s.group()
	shared := prefillShared(s.headDim, rows)
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	d.args.Reset().Ptr(q).Int(qs).Ptr(items).Ptr(tables).Int(maxb).Ptr(kc).Ptr(vc).Ptr(out).
		Int(s.group()).Int(s.kvHeads).Int(s.blockSize).Int(s.headDim).Float(scale)
	return d.launch(d.k.prefill[dt], cuda.Dim{X: nitems, Y: s.kvHeads}, cuda.Dim{X: 128}, shared)
}

// sampleArgs are the sampling kernel's per-row parameters (device arrays
// of m entries) and outputs.
type sampleArgs struct {
	logits                    cuda.Ptr
	vocab, m                  int
	temp, topk, topp, minp, u cuda.Ptr
	maskRow, masks            cuda.Ptr
	words                     int
	tokens, logprobs          cuda.Ptr
}

func (d *Device) sample(a sampleArgs) error {
	d.args.Reset().Ptr(a.logits).Int(a.vocab).Ptr(a.temp).Ptr(a.topk).Ptr(a.topp).Ptr(a.minp).Ptr(a.u).
		Ptr(a.maskRow).Ptr(a.masks).Int(a.words).Ptr(a.tokens).Ptr(a.logprobs)
	return d.launch(d.k.sample, cuda.Dim{X: a.m}, cuda.Dim{X: 1024}, 0)
}

// dequantQ80 expands n Q8_0 elements at q to fp16 at out.
func (d *Device) dequantQ80(q, out cuda.Ptr, n int64) error {
	d.args.Reset().Ptr(q).Ptr(out).Int64(n)
	return d.launch(d.k.dequantQ80, cuda.Dim{X: int((n + 255) / 256)}, cuda.Dim{X: 256}, 0)
}

// dtypeCode is the convert kernel's number for a type.
func dtypeCode(t cuda.DType) int {
	switch t {
	case cuda.F16:
		return 1
	case cuda.BF16:
		return 2
	}
	return 0
}

// convert rewrites n elements from one float type to another.
func (d *Device) convert(src cuda.Ptr, st cuda.DType, dst cuda.Ptr, dt cuda.DType, n int64) error {
	d.args.Reset().Ptr(src).Int(dtypeCode(st)).Ptr(dst).Int(dtypeCode(dt)).Int64(n)
	return d.launch(d.k.convert, cuda.Dim{X: int((n + 255) / 256)}, cuda.Dim{X: 256}, 0)
}

// fillRandom writes n random values of type dt (standard deviation
// scale) at p.
func (d *Device) fillRandom(p cuda.Ptr, dt cuda.DType, n int64, seed uint64, scale float32) error {
	d.args.Reset().Ptr(p).Int(dtypeCode(dt)).Int64(n).Int64(int64(seed)).Float(scale)
	return d.launch(d.k.fillRandom, cuda.Dim{X: int((n + 255) / 256)}, cuda.Dim{X: 256}, 0)
}

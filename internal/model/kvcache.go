package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// KVDtype is the element type of the KV cache.
type KVDtype uint8

const (
	// KVF16 stores K and V in fp16, as llama.cpp does by default: half
	// the memory and half the bytes attention reads per token.
	KVF16 KVDtype = iota
	// KVF32 stores them in float32 (no rounding of K and V).
	KVF32
)

// DefaultKVDtype is the cache type a runner gets unless told otherwise.
const DefaultKVDtype = KVF16

func (d KVDtype) String() string {
	if d == KVF32 {
		return "fp32"
	}
	return "fp16"
}

// Bytes is the size of one element.
func (d KVDtype) Bytes() int {
	if d == KVF32 {
		return 4
	}
	return 2
}

// ParseKVDtype reads a cache type name: fp16 (also f16, float16, half,
// auto, or empty: the default) or fp32 (f32, float32, float).
func ParseKVDtype(s string) (KVDtype, error) {
	switch s {
	case "", "auto", "fp16", "f16", "float16", "half":
		return KVF16, nil
	case "fp32", "f32", "float32", "float":
		return KVF32, nil
	}
	return 0, fmt.Errorf("kv cache dtype %q: want fp16 or fp32", s)
}

// KVCache holds every layer's K and V in physical blocks of BlockSize
// tokens; a sequence reaches its tokens through its block table, as
// PagedAttention does. Within a layer, block b holds for each KV head h,
// at (b·KVHeads + h)·BlockSize·HeadDim, its keys transposed (dimension c
// of the block's token s at c·BlockSize + s) and, in the V array at the
// same offset, its values token by token (s·HeadDim + c): tiled attention
// reads sixteen keys of one dimension, and one token's values, as one
// contiguous run.
type KVCache struct {
	BlockSize, NumBlocks int
	Dtype                KVDtype
	heads, headDim       int
	k16, v16             [][]uint16  // per layer (fp16)
	k32, v32             [][]float32 // per layer (fp32)
}

// NewKVCacheOf allocates numBlocks blocks for c with elements of dt.
func NewKVCacheOf(c Config, numBlocks, blockSize int, dt KVDtype) *KVCache {
	kv := &KVCache{BlockSize: blockSize, NumBlocks: numBlocks, Dtype: dt, heads: c.KVHeads, headDim: c.HeadDim}
	n := numBlocks * blockSize * c.KVDim()
	for range c.Layers {
		if dt == KVF32 {
			kv.k32 = append(kv.k32, make([]float32, n))
			kv.v32 = append(kv.v32, make([]float32, n))
		} else {
			kv.k16 = append(kv.k16, make([]uint16, n))
			kv.v16 = append(kv.v16, make([]uint16, n))
		}
	}
	return kv
}

// base is where KV head h of the block holding position pos starts, and
// the token's slot in that block.
func (kv *KVCache) base(table []int, pos, h int) (int, int) {
	B := kv.BlockSize
	return (table[pos/B]*kv.heads + h) * B * kv.headDim, pos % B
}

// write stores one token's K and V (all KV heads) for layer l.
func (kv *KVCache) write(l int, table []int, pos int, k, v []float32) {
	B, d := kv.BlockSize, kv.headDim
	for h := range kv.heads {
		base, s := kv.base(table, pos, h)
		kh, vh := k[h*d:(h+1)*d], v[h*d:(h+1)*d]
		if kv.Dtype == KVF32 {
			K, V := kv.k32[l][base:], kv.v32[l][base+s*d:base+(s+1)*d]
			for c, x := range kh {
				K[c*B+s] = x
			}
			copy(V, vh)
			continue
		}
		K, V := kv.k16[l][base:], kv.v16[l][base+s*d:base+(s+1)*d]
		for c, x := range kh {
			K[c*B+s] = tensor.F32ToF16(x)
		}
		for c, x := range vh {
			V[c] = tensor.F32ToF16(x)
		}
	}
}

// step runs one Flash step of KV head h over the keys [j0, j0+nk) of a
// sequence (nk ≤ 16, j0 a multiple of 16), prefetching the tile at next
// (none when next < 0). Blocks whose size is a multiple of 16 are read in
// place; other sizes are gathered into w's float32 tile first.
func (kv *KVCache) step(w *attnWorker, l int, table []int, h, j0, nk, next int) {
	B, d := kv.BlockSize, kv.headDim
	f := &w.f
	if B%tensor.FlashKeys == 0 {
		base, s0 := kv.base(table, j0, h)
		nbase, ns0 := base, s0
		if next >= 0 {
			nbase, ns0 = kv.base(table, next, h)
		}
		if kv.Dtype == KVF32 {
			K, V := kv.k32[l], kv.v32[l]
			f.StepF32(K[base+s0:], B, V[base+s0*d:], d, nk, K[nbase+ns0:], V[nbase+ns0*d:])
		} else {
			K, V := kv.k16[l], kv.v16[l]
			f.StepF16(K[base+s0:], B, V[base+s0*d:], d, nk, K[nbase+ns0:], V[nbase+ns0*d:])
		}
		return
	}
	w.kt = resize(w.kt, d*tensor.FlashKeys)
	w.vt = resize(w.vt, nk*d)
	clear(w.kt)
	for j := range nk {
		base, s := kv.base(table, j0+j, h)
		for c := range d {
			w.kt[c*tensor.FlashKeys+j] = kv.at(l, false, base+c*B+s)
			w.vt[j*d+c] = kv.at(l, true, base+s*d+c)
		}
	}
	f.StepF32(w.kt, tensor.FlashKeys, w.vt, d, nk, nil, nil)
}

func (kv *KVCache) at(l int, value bool, i int) float32 {
	switch {
	case kv.Dtype == KVF32 && value:
		return kv.v32[l][i]
	case kv.Dtype == KVF32:
		return kv.k32[l][i]
	case value:
		return tensor.F16ToF32(kv.v16[l][i])
	}
	return tensor.F16ToF32(kv.k16[l][i])
}

// Fill writes made-up K and V (normal, σ 1) at positions [0, n) of the
// sequence with this block table, in every layer: a context of depth n
// for benchmarks, without running the model over n tokens. Attention
// costs the same whatever the values.
func (kv *KVCache) Fill(table []int, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	dim := kv.heads * kv.headDim
	k, v := make([]float32, dim), make([]float32, dim)
	layers := max(len(kv.k16), len(kv.k32))
	for l := range layers {
		for pos := range n {
			for i := range k {
				k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			kv.write(l, table, pos, k, v)
		}
	}
}

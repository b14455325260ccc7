package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// hostCache is sequences' K/V in a paged cache of 16-bit values of type
// kv (as the executor lays it out), with the values the kernels see.
type hostCache struct {
	kv        cuda.DType
	s         attnShape
	kc, vc    []uint16
	k, v      [][]float32 // per sequence: [position][kv head][dim], decoded
	tables    [][]int
	maxb      int
	cacheSize int
}

func newHostCache(r *rand.Rand, kv cuda.DType, s attnShape, ctxs []int) *hostCache {
	c := &hostCache{kv: kv, s: s}
	kvd := s.kvHeads * s.headDim
	blocks := 0
	for _, n := range ctxs {
		blocks += (n + s.blockSize - 1) / s.blockSize
	}
	perm := r.Perm(blocks + 2)
	c.cacheSize = (blocks + 2) * s.blockSize * kvd
	c.kc, c.vc = make([]uint16, c.cacheSize), make([]uint16, c.cacheSize)
	next := 0
	enc := func(f float32) uint16 {
		if kv == cuda.BF16 {
			return tensor.F32ToBF16(f)
		}
		return tensor.F32ToF16(f)
	}
	for _, n := range ctxs {
		nb := (n + s.blockSize - 1) / s.blockSize
		table := perm[next : next+nb]
		next += nb
		c.tables = append(c.tables, table)
		c.maxb = max(c.maxb, nb)
		k, v := make([]float32, n*kvd), make([]float32, n*kvd)
		for p := range n {
			for h := range s.kvHeads {
				at := ((table[p/s.blockSize]*s.kvHeads+h)*s.blockSize + p%s.blockSize) * s.headDim
				for d := range s.headDim {
					kb, vb := enc(float32(r.NormFloat64())), enc(float32(r.NormFloat64()))
					c.kc[at+d], c.vc[at+d] = kb, vb
					k[(p*s.kvHeads+h)*s.headDim+d] = fromHalf(kv, []uint16{kb})[0]
					v[(p*s.kvHeads+h)*s.headDim+d] = fromHalf(kv, []uint16{vb})[0]
				}
			}
		}
		c.k, c.v = append(c.k, k), append(c.v, v)
	}
	return c
}

// flatTables is the tables as rows of maxb ints.
func (c *hostCache) flatTables() []int32 {
	flat := make([]int32, len(c.tables)*c.maxb)
	for i, tb := range c.tables {
		for j, b := range tb {
			flat[i*c.maxb+j] = int32(b)
		}
	}
	return flat
}

// attend is causal attention in float64 for one query row (all heads) of
// sequence seq at position pos.
func (c *hostCache) attend(q []float32, seq, pos int) []float64 {
	s := c.s
	D, G := s.headDim, s.group()
	out := make([]float64, s.heads*D)
	scale := 1 / math.Sqrt(float64(D))
	for h := range s.heads {
		kvh := h / G
		w := make([]float64, pos+1)
		mx := math.Inf(-1)
		for j := range pos + 1 {
			var dot float64
			for d := range D {
				dot += float64(q[h*D+d]) * float64(c.k[seq][(j*s.kvHeads+kvh)*D+d])
			}
			w[j] = dot * scale
			mx = max(mx, w[j])
		}
		var sum float64
		for j := range w {
			w[j] = math.Exp(w[j] - mx)
			sum += w[j]
		}
		for j := range w {
			for d := range D {
				out[h*D+d] += w[j] / sum * float64(c.v[seq][(j*s.kvHeads+kvh)*D+d])
			}
		}
	}
	return out
}

// hostOut reads rows·heads·D outputs of type dt.
func hostOut(out *simOut, dt cuda.DType, n int) []float32 {
	if dt == cuda.F32 {
		return out.f32s(n)
	}
	return fromHalf(dt, out.u16s(n))
}

// checkAgainst compares got with want relative to want's largest value.
func checkAgainst(t *testing.T, what string, got []float32, want []float64, bound float64) {
	t.Helper()
	w32 := make([]float32, len(want))
	for i, v := range want {
		w32[i] = float32(v)
	}
	if e := maxRelErr(got, w32); e > bound || math.IsNaN(e) {
		t.Errorf("%s: max error %.3g of the largest value, bound %.1g", what, e, bound)
	}
}

// TestAttentionKernelsOnHost runs the CUDA-core prefill, the untiled and
// the tiled decode kernels over a paged cache of each type (fp16; bf16
// for a bf16 model's, which they read as bf16) against attention in
// float64 over the same cached values. The prefill items take the tokens
// sm_86's shared memory fits (14 at head dim 128, four query heads a KV
// head), in exactly the shared memory the launch asks for: guarded, so a
// read past it stops the job.
func TestAttentionKernelsOnHost(t *testing.T) {
	s := attnShape{heads: 8, kvHeads: 2, headDim: 128, blockSize: 16}
	r := rand.New(rand.NewPCG(41, 42))
	per := plainPrefillTokens(s, sm86.SharedOptin)
	if per != 14 {
		t.Fatalf("%d tokens an item on sm_86, want 14", per)
	}
	qs := s.heads * s.headDim
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		kv := kvType(dt)
		bound := map[cuda.DType]float64{cuda.F32: 1e-4, cuda.F16: 2e-3, cuda.BF16: 1e-2}[dt]
		// Prefill: a 30-token chunk after 20 cached tokens, a fresh
		// 17-token prompt.
		prefix, tokens := []int{20, 0}, []int{30, 17}
		c := newHostCache(r, kv, s, []int{50, 17})
		var items []int32
		var want []float64
		row := 0
		for i := range prefix {
			for t0 := 0; t0 < tokens[i]; t0 += per {
				items = append(items, int32(i), int32(row+t0), int32(min(per, tokens[i]-t0)), int32(prefix[i]+t0))
			}
			row += tokens[i]
		}
		q := randoms(r, row*qs, 1)
		row = 0
		for i := range prefix {
			for t0 := range tokens[i] {
				want = append(want, c.attend(q[(row+t0)*qs:(row+t0+1)*qs], i, prefix[i]+t0)...)
			}
			row += tokens[i]
		}
		flat := c.flatTables()
		var in simIn
		in.ints(0, dtCode(dt), s.group(), s.kvHeads, s.blockSize, s.headDim, row, c.cacheSize).f32s([]float32{scale})
		in.ints(len(items)/4, c.maxb, prefillShared(s.headDim, per*s.group())).i32s(items).ints(len(flat)).i32s(flat)
		in.f32s(q).u16s(c.kc).u16s(c.vc)
		checkAgainst(t, fmt.Sprintf("prefill %s, %s cache", dt, kv), hostOut(runSim(t, "attention", &in), dt, row*qs), want, bound)

		// Decode: three sequences of 1, 17 and 100 tokens of context.
		ctxs := []int{1, 17, 100}
		c = newHostCache(r, kv, s, ctxs)
		q = randoms(r, len(ctxs)*qs, 1)
		want = want[:0]
		qrow, ctx := make([]int32, len(ctxs)), make([]int32, len(ctxs))
		for i, n := range ctxs {
			qrow[i], ctx[i] = int32(i), int32(n)
			want = append(want, c.attend(q[i*qs:(i+1)*qs], i, n-1)...)
		}
		for _, kind := range []int{1, 2} {
			for _, splits := range []int{1, 3} {
				var in simIn
				in.ints(kind, dtCode(dt), s.group(), s.kvHeads, s.blockSize, s.headDim, len(ctxs), c.cacheSize).f32s([]float32{scale})
				in.ints(len(ctxs), splits, c.maxb).i32s(qrow).i32s(ctx).i32s(c.flatTables()).f32s(q).u16s(c.kc).u16s(c.vc)
				name := map[int]string{1: "untiled", 2: "tiled"}[kind]
				checkAgainst(t, fmt.Sprintf("%s decode %s, %d splits, %s cache", name, dt, splits, kv), hostOut(runSim(t, "attention", &in), dt, len(ctxs)*qs), want, bound)
			}
		}
	}
}

package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// TestKernelQKVRope checks the QKV epilogue (biases, qwen3's q/k norms,
// RoPE in both pairings, the write into the paged cache: fp16, bf16 for a
// bf16 model) against the CPU's forward pass.
func TestKernelQKVRope(t *testing.T) {
	d := openTestDevice(t)
	for _, c := range []model.Config{
		{Arch: "llama", Heads: 32, KVHeads: 8, HeadDim: 128, RopeDims: 128, RopeBase: 500000, RopeMode: model.RopeNormal, NormEps: 1e-5},
		{Arch: "qwen2", Heads: 14, KVHeads: 2, HeadDim: 64, RopeDims: 64, RopeBase: 1e6, RopeMode: model.RopeNeoX, NormEps: 1e-6},
		{Arch: "qwen3", Heads: 16, KVHeads: 8, HeadDim: 128, RopeDims: 128, RopeBase: 1e6, RopeMode: model.RopeNeoX, NormEps: 1e-6, QKNorm: true},
		{Arch: "stories", Heads: 8, KVHeads: 4, HeadDim: 8, RopeDims: 8, RopeBase: 10000, RopeMode: model.RopeNormal, NormEps: 1e-5},
	} {
		for _, dt := range dtypes {
			t.Run(c.Arch+"/"+dt.String(), func(t *testing.T) { checkQKVRope(t, d, c, dt) })
		}
	}
}

func checkQKVRope(t *testing.T, d *Device, c model.Config, dt cuda.DType) {
	kv := kvType(dt)
	c.Layers, c.Hidden = 1, c.Heads*c.HeadDim
	r := rand.New(rand.NewPCG(uint64(c.Heads), 9))
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	stride := qd + 2*kvd
	const B, blocks, maxPos = 16, 64, 1000
	pos := []int32{0, 1, 15, 16, 517, 999}
	n := len(pos)
	qkv := randoms(r, n*stride, 1)
	var bias, qnorm, knorm []float32
	if c.Arch == "qwen2" {
		bias = randoms(r, stride, 0.5)
	}
	if c.QKNorm {
		qnorm, knorm = randoms(r, c.HeadDim, 1), randoms(r, c.HeadDim, 1)
	}
	table := r.Perm(blocks)
	slots := make([]int32, n)
	for i, p := range pos {
		slots[i] = int32(table[p/B]*B + int(p)%B)
	}
	// The CPU's arithmetic, token by token.
	run := model.NewRunner(&model.Weights{Config: c}, 1, B, 1)
	defer run.Close()
	wantQ := make([]float32, n*qd)
	wantK := make([]float32, blocks*B*kvd)
	wantV := make([]float32, blocks*B*kvd)
	for i := range n {
		row := append([]float32(nil), qkv[i*stride:(i+1)*stride]...)
		for j := range bias {
			row[j] += bias[j]
		}
		q, k, v := row[:qd], row[qd:qd+kvd], row[qd+kvd:]
		if c.QKNorm {
			for h := 0; h < qd; h += c.HeadDim {
				model.RMSNorm(q[h:h+c.HeadDim], q[h:h+c.HeadDim], qnorm, c.NormEps)
			}
			for h := 0; h < kvd; h += c.HeadDim {
				model.RMSNorm(k[h:h+c.HeadDim], k[h:h+c.HeadDim], knorm, c.NormEps)
			}
		}
		run.Rope(q, int(pos[i]))
		run.Rope(k, int(pos[i]))
		copy(wantQ[i*qd:], q)
		s := int(slots[i])
		for h := range c.KVHeads {
			at := ((s/B*c.KVHeads+h)*B + s%B) * c.HeadDim
			for j := range c.HeadDim {
				wantK[at+j] = roundTo(kv, k[h*c.HeadDim+j])
				wantV[at+j] = roundTo(kv, v[h*c.HeadDim+j])
			}
		}
	}
	pq := d.put(t, cuda.F32, qkv)
	kc, vc := d.testAlloc(t, int64(2*blocks*B*kvd)), d.testAlloc(t, int64(2*blocks*B*kvd))
	var pb, pqn, pkn cuda.Ptr
	if bias != nil {
		pb = d.put(t, cuda.F32, bias)
	}
	if qnorm != nil {
		pqn, pkn = d.put(t, cuda.F32, qnorm), d.put(t, cuda.F32, knorm)
	}
	rope, ppos, pslots := d.put(t, cuda.F32, c.RopeTable(maxPos)), putInts(t, d, pos), putInts(t, d, slots)
	d.run(t, func() error {
		if err := d.stream.Zero(kc, int64(2*blocks*B*kvd)); err != nil {
			return err
		}
		if err := d.stream.Zero(vc, int64(2*blocks*B*kvd)); err != nil {
			return err
		}
		a := ropeArgs{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, ropeDims: c.RopeDims, blockSize: B,
			neox: c.RopeMode == model.RopeNeoX, eps: c.NormEps}
		return d.qkvRope(dt, a, pq, pb, pqn, pkn, rope, ppos, pslots, kc, vc, n)
	})
	got := d.get(t, cuda.F32, pq, n*stride)
	gotQ := make([]float32, 0, n*qd)
	for i := range n {
		gotQ = append(gotQ, got[i*stride:i*stride+qd]...)
	}
	// The same float32 operations but for the norm's sum of squares
	// (added in another order): a few ulps.
	checkClose(t, fmt.Sprintf("%s q", c.Arch), gotQ, wantQ, 2e-6)
	checkClose(t, fmt.Sprintf("%s k in the %s cache", c.Arch, kv), d.get(t, kv, kc, blocks*B*kvd), wantK, 2*roundingOf(kv))
	checkClose(t, fmt.Sprintf("%s v in the %s cache", c.Arch, kv), d.get(t, kv, vc, blocks*B*kvd), wantV, 0)
}

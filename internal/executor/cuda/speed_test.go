package cuda

import (
	"fmt"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// The TestSpeed tests time kernels on the GPU with events and log what
// they reach; they assert nothing about time (a shared or throttled GPU
// is slower), only that the kernels run.

// gpuTime runs f reps times after one warm-up and returns the mean GPU
// time of one run in milliseconds.
func (d *Device) gpuTime(t *testing.T, reps int, f func() error) float64 {
	t.Helper()
	var ms float32
	d.run(t, func() error {
		if err := f(); err != nil {
			return err
		}
		start, err := d.ctx.NewEvent()
		if err != nil {
			return err
		}
		defer start.Destroy()
		end, err := d.ctx.NewEvent()
		if err != nil {
			return err
		}
		defer end.Destroy()
		if err := start.Record(d.stream); err != nil {
			return err
		}
		for range reps {
			if err := f(); err != nil {
				return err
			}
		}
		if err := end.Record(d.stream); err != nil {
			return err
		}
		if err := end.Synchronize(); err != nil {
			return err
		}
		ms, err = end.Elapsed(start)
		return err
	})
	return float64(ms) / float64(reps)
}

// TestSpeedDecodeAttention: Llama-3.1-8B's decode attention for one
// layer at batch 1 and 64, 2048 tokens of context.
func TestSpeedDecodeAttention(t *testing.T) {
	d := openTestDevice(t)
	s := attnShape{heads: 32, kvHeads: 8, headDim: 128, blockSize: 16}
	const ctx = 2048
	for _, nseq := range []int{1, 64} {
		maxb := ctx / s.blockSize
		blocks := nseq * maxb
		kvBytes := int64(blocks * s.blockSize * s.kvHeads * s.headDim * 2)
		kc, vc := d.testAlloc(t, kvBytes), d.testAlloc(t, kvBytes)
		tables := make([]int32, blocks)
		for i := range tables {
			tables[i] = int32(i)
		}
		ctxs, qrow := make([]int32, nseq), make([]int32, nseq)
		for i := range ctxs {
			ctxs[i], qrow[i] = ctx, int32(i)
		}
		qd := s.heads * s.headDim
		q := d.testAlloc(t, int64(4*nseq*qd))
		out := d.testAlloc(t, int64(2*nseq*qd))
		d.run(t, func() error {
			for _, p := range []cuda.Ptr{kc, vc} {
				if err := d.stream.Fill32(p, 0x3c003c00, kvBytes/4); err != nil { // fp16 ones
					return err
				}
			}
			return d.stream.Zero(q, int64(4*nseq*qd))
		})
		for _, v1 := range []bool{false, true} {
			ks := kernelsFor(d.Info, s)
			ks.tiled = !v1
			kernel := map[bool]string{false: "tiled", true: "untiled"}[v1]
			for _, splits := range []int{1, 2, 4, 8, 16, 32, 64} {
				part := int64(nseq * s.heads * splits)
				a := decodeArgs{q: q, qs: qd, qrow: putInts(t, d, qrow), ctx: putInts(t, d, ctxs), tables: putInts(t, d, tables), maxb: putInts(t, d, []int32{int32(maxb)}),
					nseq: nseq, splits: splits, po: d.testAlloc(t, 4*part*int64(s.headDim)), pm: d.testAlloc(t, 4*part),
					pl: d.testAlloc(t, 4*part), kc: kc, vc: vc, out: out}
				ms := d.gpuTime(t, 20, func() error { return d.decode(ks, cuda.BF16, s, a) })
				t.Logf("decode attention (%s), Llama-3.1-8B layer, batch %d × %d context, %d splits: %.1f µs, K/V read at %.0f GB/s",
					kernel, nseq, ctx, splits, ms*1000, float64(2*kvBytes)/ms/1e6)
			}
		}
	}
}

// TestSpeedPrefillAttention: one layer of Llama-3.1-8B's attention over a
// 2048-token prompt.
func TestSpeedPrefillAttention(t *testing.T) {
	d := openTestDevice(t)
	s := attnShape{heads: 32, kvHeads: 8, headDim: 128, blockSize: 16}
	const n = 2048
	maxb := n / s.blockSize
	kvBytes := int64(n * s.kvHeads * s.headDim * 2)
	kc, vc := d.testAlloc(t, kvBytes), d.testAlloc(t, kvBytes)
	tables := make([]int32, maxb)
	for i := range tables {
		tables[i] = int32(i)
	}
	var items []int32
	per := kernelsFor(d.Info, s).prefillTokens()
	for t0 := 0; t0 < n; t0 += per {
		items = append(items, 0, int32(t0), int32(min(per, n-t0)), int32(t0))
	}
	qd := s.heads * s.headDim
	q, out := d.testAlloc(t, int64(4*n*qd)), d.testAlloc(t, int64(2*n*qd))
	d.run(t, func() error {
		if err := d.stream.Zero(kc, kvBytes); err != nil {
			return err
		}
		if err := d.stream.Zero(vc, kvBytes); err != nil {
			return err
		}
		return d.stream.Zero(q, int64(4*n*qd))
	})
	pi, pt := putInts(t, d, items), putInts(t, d, tables)
	for _, flash := range []bool{true, false} {
		ks := kernelsFor(d.Info, s)
		ks.flash = flash
		ms := d.gpuTime(t, 3, func() error { return d.prefill(ks, cuda.BF16, s, q, qd, pi, pt, maxb, len(items)/4, kc, vc, out) })
		flops := 4.0 * float64(s.heads*s.headDim) * float64(n) * float64(n) / 2
		t.Logf("prefill attention (%s), Llama-3.1-8B layer, %d tokens: %.2f ms, %.1f TFLOP/s (causal)",
			map[bool]string{true: "tensor cores", false: "CUDA cores"}[flash], n, ms, flops/ms/1e9)
	}
}

// TestSpeedGEMM: Llama-3.1-8B's projections through cuBLASLt at decode
// and prefill sizes.
func TestSpeedGEMM(t *testing.T) {
	d := openTestDevice(t)
	for _, sh := range []struct {
		name    string
		in, out int
	}{{"qkv", 4096, 6144}, {"o", 4096, 4096}, {"gate_up", 4096, 28672}, {"down", 14336, 4096}, {"lm_head", 4096, 128256}} {
		w := d.testAlloc(t, int64(2*sh.in*sh.out))
		d.run(t, func() error { return d.stream.Zero(w, int64(2*sh.in*sh.out)) })
		for _, n := range []int{1, 64, 2048} {
			x, y := d.testAlloc(t, int64(2*n*sh.in)), d.testAlloc(t, int64(4*n*sh.out))
			d.run(t, func() error { return d.stream.Zero(x, int64(2*n*sh.in)) })
			ms := d.gpuTime(t, 10, func() error { return d.gemm("test", cuda.BF16, cuda.F32, n, sh.in, sh.out, w, x, y, false) })
			t.Logf("%s", fmt.Sprintf("GEMM %s %d×%d by %d: %.3f ms, weights at %.0f GB/s, %.0f TFLOP/s", sh.name, sh.out, sh.in, n, ms,
				float64(2*sh.in*sh.out)/ms/1e6, 2*float64(n)*float64(sh.in*sh.out)/ms/1e9))
		}
	}
}

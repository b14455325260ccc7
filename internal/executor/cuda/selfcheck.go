package cuda

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// The tensor-core prefill and the tiled decode kernels are the fast
// paths; the CUDA-core kernels are the plain ones. At start the executor
// runs both on random data of its model's shape and keeps a fast kernel
// only where it agrees with the plain one (run 1 on an H200 checked the
// plain kernels' speed, not yet the fast ones': docs/gpu.md).

// Kernels names the attention kernels a device runs.
func (d *Device) Kernels() string {
	p, dec := "tensor-core prefill", "tiled decode"
	if d.noFlash {
		p = "CUDA-core prefill"
	}
	if d.decodeV1 {
		dec = "untiled decode"
	}
	return p + ", " + dec + " attention"
}

// checkFastAttention compares the fast attention kernels with the plain
// ones for shape s (inside Do) and turns off those that differ.
func (d *Device) checkFastAttention(s attnShape) (err error) {
	if !s.fastDecode() && !s.flash() {
		return nil
	}
	const ctx = 200
	B := s.blockSize
	blocks := (ctx + B - 1) / B
	kvElems := int64(blocks * B * s.kvHeads * s.headDim)
	qd := s.heads * s.headDim
	const n = 70 // a chunk after a cached prefix of ctx-n tokens
	var bufs []cuda.Ptr
	alloc := func(bytes int64) cuda.Ptr {
		if err != nil {
			return 0
		}
		var p cuda.Ptr
		if p, err = d.ctx.Alloc(bytes); err == nil {
			bufs = append(bufs, p)
		}
		return p
	}
	defer func() {
		_ = d.stream.Synchronize()
		for _, p := range bufs {
			d.ctx.Free(p)
		}
	}()
	kc, vc, q := alloc(2*kvElems), alloc(2*kvElems), alloc(int64(4*n*qd))
	outA, outB := alloc(int64(4*n*qd)), alloc(int64(4*n*qd))
	parts := int64(3 * s.heads * 4)
	po, pm, pl := alloc(4*parts*int64(s.headDim)), alloc(4*parts), alloc(4*parts)
	per := s.prefillTokens()
	var ints []int32
	for t0 := 0; t0 < n; t0 += per {
		ints = append(ints, 0, int32(t0), int32(min(per, n-t0)), int32(ctx-n+t0))
	}
	nitems := len(ints) / 4
	tableAt := len(ints)
	for i := range blocks {
		ints = append(ints, int32(i))
	}
	decodeAt := len(ints) // qrow[3], ctx[3], tables[3][blocks], maxb
	ints = append(ints, 0, 1, 2, ctx, 65, 1)
	for range 3 {
		for i := range blocks {
			ints = append(ints, int32(i))
		}
	}
	ints = append(ints, int32(blocks))
	in := alloc(int64(4 * len(ints)))
	if err != nil {
		return err
	}
	if err := cuda.CopyIn(d.stream, in, ints); err != nil {
		return err
	}
	at := func(i int) cuda.Ptr { return in.Add(int64(4 * i)) }
	for i, p := range []cuda.Ptr{kc, vc} {
		if err := d.fillRandom(p, cuda.F16, kvElems, uint64(11+i), 1); err != nil {
			return err
		}
	}
	if err := d.fillRandom(q, cuda.F32, int64(n*qd), 13, 1); err != nil {
		return err
	}
	compare := func(what string, bound float64, run func(out cuda.Ptr) error, rows int) (bool, error) {
		for _, out := range []cuda.Ptr{outA, outB} {
			if err := d.stream.Zero(out, int64(4*rows*qd)); err != nil {
				return false, err
			}
		}
		if err := run(outA); err != nil {
			return false, err
		}
		saveFlash, saveV1 := d.noFlash, d.decodeV1
		d.noFlash, d.decodeV1 = true, true
		err := run(outB)
		d.noFlash, d.decodeV1 = saveFlash, saveV1
		if err != nil {
			// The plain kernel cannot run here (a GPU with less shared
			// memory than it asks for): nothing to compare with.
			d.fastNote += fmt.Sprintf("%s not checked: %v; ", what, err)
			return true, nil
		}
		if err := d.stream.Synchronize(); err != nil {
			return false, err
		}
		a, b := make([]float32, rows*qd), make([]float32, rows*qd)
		if err := cuda.CopyOut(d.stream, a, outA); err != nil {
			return false, err
		}
		if err := cuda.CopyOut(d.stream, b, outB); err != nil {
			return false, err
		}
		var worst, scale float64
		for i := range a {
			scale = max(scale, math.Abs(float64(b[i])))
			worst = max(worst, math.Abs(float64(a[i])-float64(b[i])))
		}
		if scale == 0 || !(worst <= bound*scale) { // NaN fails too
			d.fastNote += fmt.Sprintf("%s differs from the plain kernel (%.3g of %.3g): not used; ", what, worst, scale)
			return false, nil
		}
		return true, nil
	}
	if s.flash() && !d.noFlash {
		ok, err := compare("tensor-core prefill", 4e-3, func(out cuda.Ptr) error {
			return d.prefill(cuda.F32, s, q, qd, at(0), at(tableAt), blocks, nitems, kc, vc, out)
		}, n)
		if err != nil {
			return err
		}
		d.noFlash = !ok
	}
	if s.fastDecode() && !d.decodeV1 {
		for _, splits := range []int{1, 4} {
			ok, err := compare(fmt.Sprintf("tiled decode (%d splits)", splits), 1e-4, func(out cuda.Ptr) error {
				return d.decode(cuda.F32, s, decodeArgs{q: q, qs: qd, qrow: at(decodeAt), ctx: at(decodeAt + 3), tables: at(decodeAt + 6),
					maxb: at(decodeAt + 6 + 3*blocks), nseq: 3, splits: splits, po: po, pm: pm, pl: pl, kc: kc, vc: vc, out: out})
			}, 3)
			if err != nil {
				return err
			}
			if !ok {
				d.decodeV1 = true
				break
			}
		}
	}
	return nil
}

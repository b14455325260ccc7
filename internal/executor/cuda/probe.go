package cuda

import (
	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// attnProbe is the self-check's inputs on the device: random K/V over a
// context of probeCtx tokens, a prefill chunk of probeChunk tokens after
// a cached prefix, three decode sequences, and two outputs, all for one
// shape and activation type.
type attnProbe struct {
	d          *Device
	s          attnShape
	dt         cuda.DType
	blocks     int
	kc, vc, q  cuda.Ptr
	out        cuda.Ptr
	po, pm, pl cuda.Ptr
	in         cuda.Ptr // items, tables, decode inputs (int32)
	nitems     int
	tableAt    int
	decodeAt   int
	bufs       []cuda.Ptr
}

const (
	probeCtx   = 200
	probeChunk = 70 // a chunk after a cached prefix of probeCtx-probeChunk tokens
)

// openAttnProbe is the device's probeOpener.
func (d *Device) openAttnProbe(s attnShape, dt cuda.DType, per int) (kernelProbe, func(), error) {
	var p *attnProbe
	if err := d.Do(func() (err error) { p, err = d.newAttnProbe(s, dt, per); return err }); err != nil {
		return nil, nil, err
	}
	return p, func() { _ = d.Do(func() error { p.free(); return nil }) }, nil
}

// newAttnProbe allocates and fills the inputs (inside Do); prefill items
// take per tokens each.
func (d *Device) newAttnProbe(s attnShape, dt cuda.DType, per int) (p *attnProbe, err error) {
	p = &attnProbe{d: d, s: s, dt: dt}
	defer func() {
		if err != nil {
			p.free()
		}
	}()
	B := s.blockSize
	p.blocks = (probeCtx + B - 1) / B
	kvElems := int64(p.blocks * B * s.kvHeads * s.headDim)
	qd := s.heads * s.headDim
	alloc := func(bytes int64) cuda.Ptr {
		if err != nil {
			return 0
		}
		var ptr cuda.Ptr
		if ptr, err = d.ctx.Alloc(bytes); err == nil {
			p.bufs = append(p.bufs, ptr)
		}
		return ptr
	}
	p.kc, p.vc, p.q = alloc(2*kvElems), alloc(2*kvElems), alloc(int64(4*probeChunk*qd))
	p.out = alloc(int64(4 * probeChunk * qd))
	parts := int64(3 * s.heads * 4)
	p.po, p.pm, p.pl = alloc(4*parts*int64(s.headDim)), alloc(4*parts), alloc(4*parts)
	var ints []int32
	for t0 := 0; t0 < probeChunk; t0 += per {
		ints = append(ints, 0, int32(t0), int32(min(per, probeChunk-t0)), int32(probeCtx-probeChunk+t0))
	}
	p.nitems = len(ints) / 4
	p.tableAt = len(ints)
	for i := range p.blocks {
		ints = append(ints, int32(i))
	}
	p.decodeAt = len(ints) // qrow[3], ctx[3], tables[3][blocks], maxb
	ints = append(ints, 0, 1, 2, probeCtx, 65, 1)
	for range 3 {
		for i := range p.blocks {
			ints = append(ints, int32(i))
		}
	}
	ints = append(ints, int32(p.blocks))
	p.in = alloc(int64(4 * len(ints)))
	if err != nil {
		return nil, err
	}
	if err := cuda.CopyIn(d.stream, p.in, ints); err != nil {
		return nil, err
	}
	for i, kv := range []cuda.Ptr{p.kc, p.vc} {
		if err := d.fillRandom(kv, kvType(dt), kvElems, uint64(11+i), 1); err != nil {
			return nil, err
		}
	}
	if err := d.fillRandom(p.q, cuda.F32, int64(probeChunk*qd), 13, 1); err != nil {
		return nil, err
	}
	return p, d.stream.Synchronize()
}

func (p *attnProbe) at(i int) cuda.Ptr { return p.in.Add(int64(4 * i)) }

// run runs c's kernel from ks and returns its output as float32 (on the
// device's thread: it waits there).
func (p *attnProbe) run(c check, ks kernelSet) ([]float32, error) {
	var out []float32
	err := p.d.Do(func() error {
		d, s := p.d, p.s
		qd := s.heads * s.headDim
		rows := probeChunk
		if c.decode {
			rows = 3
		}
		if err := d.stream.Zero(p.out, int64(rows*qd*p.dt.Size())); err != nil {
			return err
		}
		var err error
		if c.decode {
			err = d.decode(ks, p.dt, s, decodeArgs{q: p.q, qs: qd, qrow: p.at(p.decodeAt), ctx: p.at(p.decodeAt + 3), tables: p.at(p.decodeAt + 6),
				maxb: p.at(p.decodeAt + 6 + 3*p.blocks), nseq: 3, splits: c.splits, po: p.po, pm: p.pm, pl: p.pl, kc: p.kc, vc: p.vc, out: p.out})
		} else {
			err = d.prefill(ks, p.dt, s, p.q, qd, p.at(0), p.at(p.tableAt), p.blocks, p.nitems, p.kc, p.vc, p.out)
		}
		if err != nil {
			return err
		}
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		out, err = downloadFloats(d, p.dt, p.out, rows*qd)
		return err
	})
	return out, err
}

// downloadFloats copies n values of type dt from the device as float32
// (on the device's thread, after the stream has finished them).
func downloadFloats(d *Device, dt cuda.DType, p cuda.Ptr, n int) ([]float32, error) {
	out := make([]float32, n)
	if dt == cuda.F32 {
		return out, cuda.CopyOut(d.stream, out, p)
	}
	h := make([]uint16, n)
	if err := cuda.CopyOut(d.stream, h, p); err != nil {
		return nil, err
	}
	for i, x := range h {
		if dt == cuda.BF16 {
			out[i] = tensor.BF16ToF32(x)
		} else {
			out[i] = tensor.F16ToF32(x)
		}
	}
	return out, nil
}

// free releases the inputs (inside Do).
func (p *attnProbe) free() {
	_ = p.d.stream.Synchronize()
	for _, b := range p.bufs {
		p.d.ctx.Free(b)
	}
	p.bufs = nil
}

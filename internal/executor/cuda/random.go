package cuda

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// UploadRandom makes a model of configuration c with random weights of
// type dt in device memory (filled there: a Llama-3.1-8B is 16 GB that
// need not cross PCIe) and the step buffers for s: for benchmarks.
func (d *Device) UploadRandom(c model.Config, dt cuda.DType, s Sizes) (*Loaded, error) {
	if err := checkLimits(d.Info, shapeOf(&c, s.BlockSize), s); err != nil {
		return nil, fmt.Errorf("random %s model on %s: %w", c.Arch, d.Info.Name, err)
	}
	l := &Loaded{dev: d, sizes: s, execs: map[*Executor]struct{}{}}
	err := d.Do(func() error {
		w, err := d.randomWeights(c, dt, s.MaxModelLen)
		if err != nil {
			return err
		}
		l.w = w
		if l.bufs, err = d.newStepBufs(w.shapeOf(), s); err != nil {
			w.free(d)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("random %s model on the GPU: %w", c.Arch, err)
	}
	l.params = float64(c.Layers) * float64(c.Hidden) * float64(2*c.Heads*c.HeadDim+2*c.KVDim()+3*c.FFN)
	l.weightB = float64(dt.Size()) * (l.params + float64(c.Vocab)*float64(c.Hidden))
	if err := d.adopt(l); err != nil {
		return nil, err
	}
	return l, nil
}

func (d *Device) randomWeights(c model.Config, dt cuda.DType, ropeLen int) (dw *devWeights, err error) {
	dw = &devWeights{c: c, dt: dt, embedType: dt, ropeLen: ropeLen, layers: make([]devLayer, c.Layers)}
	defer func() {
		if err != nil {
			dw.free(d)
		}
	}()
	seed := uint64(1)
	matrix := func(rows, cols int) (cuda.Ptr, error) {
		n := int64(rows) * int64(cols)
		p, err := d.alloc(dw, n*int64(dt.Size()))
		if err != nil {
			return 0, err
		}
		seed++
		return p, d.fillRandom(p, dt, n, seed, float32(1/math.Sqrt(float64(cols))))
	}
	ones := func(n int) (cuda.Ptr, error) {
		p, err := d.alloc(dw, int64(4*n))
		if err != nil {
			return 0, err
		}
		return p, d.stream.Fill32(p, math.Float32bits(1), int64(n))
	}
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	if dw.embed, err = matrix(c.Vocab, c.Hidden); err != nil {
		return nil, err
	}
	if c.TiedEmbedded {
		dw.output = dw.embed
	} else if dw.output, err = matrix(c.Vocab, c.Hidden); err != nil {
		return nil, err
	}
	if dw.outNorm, err = ones(c.Hidden); err != nil {
		return nil, err
	}
	for i := range dw.layers {
		l := &dw.layers[i]
		for _, m := range []struct {
			dst        *cuda.Ptr
			rows, cols int
		}{{&l.qkv, qd + 2*kvd, c.Hidden}, {&l.o, c.Hidden, qd}, {&l.gateUp, 2 * c.FFN, c.Hidden}, {&l.down, c.Hidden, c.FFN}} {
			if *m.dst, err = matrix(m.rows, m.cols); err != nil {
				return nil, err
			}
		}
		if l.attnNorm, err = ones(c.Hidden); err != nil {
			return nil, err
		}
		if l.ffnNorm, err = ones(c.Hidden); err != nil {
			return nil, err
		}
		if c.QKNorm {
			if l.qNorm, err = ones(c.HeadDim); err != nil {
				return nil, err
			}
			if l.kNorm, err = ones(c.HeadDim); err != nil {
				return nil, err
			}
		}
	}
	if dw.rope, err = d.uploadFloats(dw, c.RopeTable(ropeLen)); err != nil {
		return nil, err
	}
	return dw, d.stream.Synchronize()
}

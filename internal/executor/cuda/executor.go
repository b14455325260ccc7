package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// Config sizes the executor.
type Config struct {
	Sizes
	// NumBlocks is the KV cache's blocks, as the engine's block manager
	// has them (KVBlocks sizes it).
	NumBlocks int
	// Eager runs every step kernel by kernel; otherwise decode steps
	// replay CUDA graphs captured per batch size (vLLM's
	// --enforce-eager).
	Eager bool
}

// Executor runs batches on the GPU. Execute is called from the engine
// goroutine only; the device work runs on the Device's thread.
type Executor struct {
	dev     *Device
	cfg     Config
	sizes   Sizes
	w       *devWeights
	shape   attnShape
	bufs    *stepBufs
	kv      cuda.Ptr // every layer's K then V: (NumBlocks+1) blocks each (the last a sink for graph padding)
	kvBytes int64
	graphs  bool
	buckets []int
	graph   map[int]*cuda.Graph
	start   *cuda.Event
	end     *cuda.Event
	p       stepPlan
	sampler sampling.Sampler
	logits  []float32 // host copies of the logits rows the CPU samples
	mask    []uint64
	rowOf   []int
	params  float64 // matmul parameters a token multiplies, for FLOP estimates
	weightB float64 // bytes of weights a step reads
	timing  bool    // a profile records: time every kernel, no graphs (TimeKernels)
	tl      *timeline
	kernels []engine.KernelTime // the last step's, while timing
	events  *deviceEvents       // the timeline's, made on the first timed step
}

// Upload copies w to the device and allocates the step buffers for
// sizes; KVBlocks then sizes the cache and Start makes the executor. The
// host's weights may be released once it returns.
func (d *Device) Upload(w *model.Weights, s Sizes) (*Loaded, error) {
	if err := CheckWeights(w); err != nil {
		return nil, err
	}
	l := &Loaded{dev: d, sizes: s}
	err := d.Do(func() error {
		var err error
		if l.w, err = d.uploadWeights(w, s.MaxModelLen); err != nil {
			return err
		}
		if l.bufs, err = d.newStepBufs(l.w.shapeOf(), s); err != nil {
			l.w.free(d)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c := &w.Config
	l.params = float64(c.Layers) * float64(c.Hidden) * float64(2*c.Heads*c.HeadDim+2*c.KVDim()+3*c.FFN)
	l.weightB = float64(WeightBytes(w, 0))
	return l, nil
}

// Loaded is a model on the device, before its KV cache.
type Loaded struct {
	dev             *Device
	sizes           Sizes
	w               *devWeights
	bufs            *stepBufs
	params, weightB float64
}

func (w *devWeights) shapeOf() *devWeightsShape {
	c := &w.c
	return &devWeightsShape{dt: w.dt, hidden: c.Hidden, qd: c.Heads * c.HeadDim, kvd: c.KVDim(), ffn: c.FFN, vocab: c.Vocab, heads: c.Heads, headDim: c.HeadDim, kvHeads: c.KVHeads}
}

// KVBytesPerBlock is one block's K and V over all layers (fp16).
func (l *Loaded) KVBytesPerBlock(blockSize int) int64 {
	return int64(blockSize) * l.w.c.KVBytesPerTokenOf(model.KVF16)
}

// Memory is how the device's memory is split.
type Memory struct {
	Total, Weights, Activations, KV, Other int64
}

// KVBlocks sizes the cache as vLLM does: kvBytes when given, else the
// share util of the device's memory less everything already in use
// (the weights, the step buffers, the context and cuBLASLt's workspace,
// and other processes'), in blocks of blockSize tokens.
func (l *Loaded) KVBlocks(util float64, kvBytes int64, blockSize int) (int, Memory, error) {
	var free, total int64
	err := l.dev.Do(func() (err error) { free, total, err = l.dev.ctx.MemInfo(); return err })
	if err != nil {
		return 0, Memory{}, err
	}
	m := Memory{Total: total, Weights: l.w.Bytes, Activations: l.bufs.Bytes}
	m.Other = total - free - m.Weights - m.Activations
	per := l.KVBytesPerBlock(blockSize)
	if kvBytes == 0 {
		kvBytes = int64(util*float64(total)) - (total - free) - per // one block is the graphs' padding sink
		if kvBytes < per {
			return 0, m, fmt.Errorf("--gpu-memory-utilization %.2f of %.1f GiB leaves no room for the KV cache: %.1f GiB is in use (weights %.1f GiB, step buffers %.1f GiB, the rest other)",
				util, gib(total), gib(total-free), gib(m.Weights), gib(m.Activations))
		}
	} else if kvBytes+per > free {
		return 0, m, fmt.Errorf("--kv-cache-memory-bytes %d: only %.1f GiB of the GPU's memory is free", kvBytes, gib(free))
	}
	n := int(kvBytes / per)
	m.KV = int64(n) * per
	return n, m, nil
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

// Start allocates the KV cache of cfg.NumBlocks blocks and makes the
// executor.
func (l *Loaded) Start(cfg Config) (*Executor, error) {
	c := &l.w.c
	if cfg.NumBlocks < 1 || cfg.BlockSize < 1 {
		return nil, fmt.Errorf("new cuda executor: %d blocks of %d tokens", cfg.NumBlocks, cfg.BlockSize)
	}
	if cfg.Sizes != l.sizes {
		return nil, fmt.Errorf("new cuda executor: sizes %+v, but the buffers were made for %+v", cfg.Sizes, l.sizes)
	}
	e := &Executor{dev: l.dev, cfg: cfg, sizes: l.sizes, w: l.w, bufs: l.bufs, graphs: !cfg.Eager, graph: map[int]*cuda.Graph{},
		shape:  attnShape{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, blockSize: cfg.BlockSize},
		params: l.params, weightB: l.weightB}
	e.buckets = graphBuckets(min(l.sizes.MaxSeqs, l.sizes.MaxTokens, maxGraphBatch))
	e.kvBytes = int64(cfg.NumBlocks+1) * l.KVBytesPerBlock(cfg.BlockSize)
	err := l.dev.Do(func() (err error) {
		if err := l.dev.checkFastAttention(e.shape); err != nil {
			return fmt.Errorf("check the attention kernels: %w", err)
		}
		if e.kv, err = l.dev.ctx.Alloc(e.kvBytes); err != nil {
			return err
		}
		if e.start, err = l.dev.ctx.NewEvent(); err != nil {
			return err
		}
		e.end, err = l.dev.ctx.NewEvent()
		return err
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("new cuda executor: %w", err)
	}
	return e, nil
}

// maxGraphBatch is the largest decode batch replayed from a graph
// (vLLM's default capture sizes stop at 512); larger ones run eagerly.
const maxGraphBatch = 512

// Kernels names the attention kernels the executor runs, and why a fast
// one is off when it is.
func (e *Executor) Kernels() string {
	k := e.dev.Kernels()
	if e.dev.fastNote != "" {
		k += " (" + strings.TrimSuffix(e.dev.fastNote, "; ") + ")"
	}
	return k
}

// graphBuckets are the batch sizes decode graphs are captured for, as
// vLLM's: 1, 2, 4, then every 8 up to the most sequences a step runs.
func graphBuckets(most int) []int {
	var b []int
	for _, s := range []int{1, 2, 4} {
		if s < most {
			b = append(b, s)
		}
	}
	for s := 8; s < most; s += 8 {
		b = append(b, s)
	}
	return append(b, most)
}

// Close releases the graphs, the cache, the buffers and the weights.
func (e *Executor) Close() {
	_ = e.dev.Do(func() error {
		for _, g := range e.graph {
			g.Destroy()
		}
		e.graph = nil
		if e.start != nil {
			e.start.Destroy()
			e.end.Destroy()
		}
		if e.events != nil {
			e.events.destroy()
		}
		e.dev.ctx.Free(e.kv)
		e.kv = 0
		e.bufs.free(e.dev)
		e.w.free(e.dev)
		return nil
	})
}

// kvLayer is layer l's K and V caches.
func (e *Executor) kvLayer(l int) (cuda.Ptr, cuda.Ptr) {
	half := e.kvBytes / 2
	per := half / int64(e.w.c.Layers)
	return e.kv.Add(int64(l) * per), e.kv.Add(half + int64(l)*per)
}

// Execute runs one step: the forward pass over every scheduled token
// (replayed from a graph for a decode step), sampling on the device,
// the samples (and any logits the CPU samples from) copied back.
func (e *Executor) Execute(b *engine.Batch, r *engine.StepResult) error {
	if err := e.plan(b); err != nil {
		return err
	}
	var ms float32
	e.kernels = nil
	err := e.dev.Do(func() (err error) { ms, err = e.run(); return err })
	if err != nil {
		return stepError(err)
	}
	r.Kernels = e.kernels
	e.deliver(b, r)
	c := &e.w.c
	kvBytes := float64(c.KVBytesPerTokenOf(model.KVF16))
	r.FLOPs = 2*e.params*float64(e.p.n) + 4*float64(c.Layers*c.Heads*c.HeadDim)*e.p.ctxSum
	r.ReadBytes = e.weightB + kvBytes*e.p.ctxSum
	r.WriteBytes = kvBytes * float64(e.p.n)
	r.DeviceTime = time.Duration(float64(ms) * float64(time.Millisecond))
	return nil
}

// run queues the step on the device's thread and waits for it; it
// returns the GPU time of the forward pass and sampling.
func (e *Executor) run() (float32, error) {
	p, b, s := &e.p, e.bufs, e.dev.stream
	if err := cuda.CopyInAsync(s, b.in, b.host[:p.lay.words]); err != nil {
		return 0, err
	}
	if p.anyMask {
		if err := cuda.CopyInAsync(s, b.masks, b.maskHost[:p.m*b.maskWords]); err != nil {
			return 0, err
		}
	}
	if err := e.start.Record(s); err != nil {
		return 0, err
	}
	if e.timing {
		e.timeStep()
		defer func() { e.dev.tl = nil }()
	}
	if p.bucket > 0 {
		g, err := e.graphOf(p.bucket)
		if err != nil {
			return 0, err
		}
		if err := g.Launch(s); err != nil {
			return 0, err
		}
	} else if err := e.forward(p.n, p.nd, p.m, p.nitems, p.splits, p.lay); err != nil {
		return 0, err
	}
	if err := e.end.Record(s); err != nil {
		return 0, err
	}
	rows := max(p.m, p.bucket)
	if rows > 0 {
		if err := cuda.CopyOutAsync(s, b.hostTok[:rows], b.outTok); err != nil {
			return 0, err
		}
		if err := cuda.CopyOutAsync(s, b.hostLP[:rows], b.outLP); err != nil {
			return 0, err
		}
	}
	V := e.w.c.Vocab
	if p.anyHost {
		e.logits = resize(e.logits, p.m*V)
		for r, host := range p.hostRow {
			if host {
				if err := cuda.CopyOutAsync(s, e.logits[r*V:(r+1)*V], b.logits.Add(int64(4*r*V))); err != nil {
					return 0, err
				}
			}
		}
	}
	if err := s.Synchronize(); err != nil {
		return 0, err
	}
	if e.dev.tl != nil {
		e.kernels = e.tl.finish()
	}
	return e.end.Elapsed(e.start)
}

// timeStep starts the step's kernel timeline at its start event (on the
// device's thread): the device times its launches until run ends.
func (e *Executor) timeStep() {
	if e.tl == nil {
		e.events = &deviceEvents{ctx: e.dev.ctx, s: e.dev.stream}
		e.tl = &timeline{clk: e.events}
	}
	e.tl.start()
	e.dev.tl = e.tl
}

// graphOf is the decode graph for a batch size, captured on first use.
func (e *Executor) graphOf(size int) (*cuda.Graph, error) {
	if g := e.graph[size]; g != nil {
		return g, nil
	}
	lay := newLayout(size, size, size, e.p.maxb, 0, 0)
	// The graph reads the tables at whatever width the step packs them
	// (the kernel reads it from device memory); only where they start
	// depends on the size, and that is fixed by it.
	splits := e.decodeSplits(size, true)
	s := e.dev.stream
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	ferr := e.forward(size, size, size, 0, splits, lay)
	g, err := s.EndCapture()
	if ferr != nil {
		if g != nil {
			g.Destroy()
		}
		return nil, fmt.Errorf("capture the decode graph for %d sequences: %w", size, ferr)
	}
	if err != nil {
		return nil, err
	}
	e.graph[size] = g
	return g, nil
}

// forward queues the forward pass, sampling included, for n tokens (the
// first nd decode sequences' single tokens), m sampled rows and nitems
// prefill items, with inputs laid out as lay.
func (e *Executor) forward(n, nd, m, nitems, splits int, lay layout) error {
	d, w, b := e.dev, e.w, e.bufs
	c := &w.c
	H, V := c.Hidden, c.Vocab
	in := func(off int) cuda.Ptr { return b.in.Add(int64(4 * off)) }
	dt := w.dt
	if err := d.embed(w.embedType, w.embed, in(lay.tokens), b.x, n, H); err != nil {
		return err
	}
	ra := ropeArgs{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, ropeDims: c.RopeDims, blockSize: e.cfg.BlockSize,
		neox: c.RopeMode == model.RopeNeoX, eps: c.NormEps}
	for li := range w.layers {
		l := &w.layers[li]
		var delta cuda.Ptr
		if li > 0 {
			delta = b.o // the previous layer's FFN output joins the residual here
		}
		if tl := d.tl; tl != nil {
			tl.begin(tl.layer(li))
		}
		err := e.layer(l, li, n, nd, nitems, splits, lay, delta, ra)
		d.tl.end()
		if err != nil {
			return fmt.Errorf("layer %d: %w", li, err)
		}
	}
	if m == 0 {
		return nil
	}
	// The LM head on the sampled rows only, then sampling.
	if err := d.rmsnorm(dt, b.x, b.o, in(lay.rows), w.outNorm, b.hs, m, H, c.NormEps, false); err != nil {
		return err
	}
	if err := d.gemm("lm_head", dt, cuda.F32, m, H, V, w.output, b.hs, b.logits, false); err != nil {
		return err
	}
	return d.sample(sampleArgs{logits: b.logits, vocab: V, m: m, temp: in(lay.temp), topk: in(lay.topk), topp: in(lay.topp),
		minp: in(lay.minp), u: in(lay.u), maskRow: in(lay.maskrow), masks: b.masks, words: b.maskWords,
		tokens: b.outTok, logprobs: b.outLP})
}

// layer queues one layer: attention (decode and prefill kernels over the
// paged cache) and the MLP, each behind its RMSNorm with the residual
// add.
func (e *Executor) layer(l *devLayer, li, n, nd, nitems, splits int, lay layout, delta cuda.Ptr, ra ropeArgs) error {
	d, b, c, dt := e.dev, e.bufs, &e.w.c, e.w.dt
	H, qd, kvd, F := c.Hidden, c.Heads*c.HeadDim, c.KVDim(), c.FFN
	in := func(off int) cuda.Ptr { return b.in.Add(int64(4 * off)) }
	kc, vc := e.kvLayer(li)
	if err := d.rmsnorm(dt, b.x, delta, 0, l.attnNorm, b.hn, n, H, c.NormEps, true); err != nil {
		return err
	}
	if err := d.gemm("qkv_proj", dt, cuda.F32, n, H, qd+2*kvd, l.qkv, b.hn, b.qkv, false); err != nil {
		return err
	}
	if err := d.qkvRope(ra, b.qkv, l.bias, l.qNorm, l.kNorm, e.w.rope, in(lay.pos), in(lay.slots), kc, vc, n); err != nil {
		return err
	}
	if nd > 0 {
		a := decodeArgs{q: b.qkv, qs: qd + 2*kvd, qrow: in(lay.qrow), ctx: in(lay.ctx), tables: in(lay.dtables), maxb: in(lay.maxb),
			nseq: nd, splits: splits, po: b.po, pm: b.pm, pl: b.pl, kc: kc, vc: vc, out: b.att}
		if err := d.decode(dt, e.shape, a); err != nil {
			return err
		}
	}
	if nitems > 0 {
		if err := d.prefill(dt, e.shape, b.qkv, qd+2*kvd, in(lay.items), in(lay.ptables), e.p.maxb, nitems, kc, vc, b.att); err != nil {
			return err
		}
	}
	if err := d.gemm("o_proj", dt, cuda.F32, n, qd, H, l.o, b.att, b.o, false); err != nil {
		return err
	}
	if err := d.rmsnorm(dt, b.x, b.o, 0, l.ffnNorm, b.hn, n, H, c.NormEps, true); err != nil {
		return err
	}
	if err := d.gemm("gate_up_proj", dt, cuda.F32, n, H, 2*F, l.gateUp, b.hn, b.gu, false); err != nil {
		return err
	}
	if err := d.siluMul(dt, b.gu, b.act, n, F); err != nil {
		return err
	}
	return d.gemm("down_proj", dt, cuda.F32, n, F, H, l.down, b.act, b.o, false)
}

// deliver puts the samples into r: the device's, or the CPU sampler's
// from the downloaded logits for the rows it takes.
func (e *Executor) deliver(b *engine.Batch, r *engine.StepResult) {
	p := &e.p
	V := e.w.c.Vocab
	for k, i := range p.rowSeq {
		s, out := &b.Seqs[i], &r.Samples[i]
		if !p.hostRow[k] {
			out.Token, out.Logprob, out.Top = int(e.bufs.hostTok[k]), e.bufs.hostLP[k], out.Top[:0]
			continue
		}
		logits := e.logits[k*V : (k+1)*V]
		for _, id := range s.Banned {
			if id >= 0 && id < V {
				logits[id] = float32(math.Inf(-1))
			}
		}
		if s.Constraint != nil {
			e.mask = resize(e.mask, (V+63)/64)
			s.Constraint.FillMask(e.mask)
			for id := range logits {
				if e.mask[id/64]&(1<<(id%64)) == 0 {
					logits[id] = float32(math.Inf(-1))
				}
			}
		}
		e.sampler.Sample(logits, s.Params, rngOf(s), s.History, s.NumPrompt, out)
	}
}

// rngOf is the sequence's source, or a fixed one for a batch built without.
func rngOf(s *engine.SeqBatch) *rand.Rand {
	if s.RNG == nil {
		return sampling.NewRNG(0)
	}
	return s.RNG
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

var _ engine.Executor = (*Executor)(nil)

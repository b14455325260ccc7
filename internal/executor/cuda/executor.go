package cuda

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
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
	// Logger says what the executor changes on its own (a graph capture
	// that failed); nil discards it.
	Logger *slog.Logger
}

// Executor runs batches on the GPU. Execute is called from the engine
// goroutine only; the device work runs on the Device's thread.
type Executor struct {
	dev     *Device
	l       *Loaded // whose weights and step buffers it borrows
	closed  bool    // under dev.mu
	cfg     Config
	sizes   Sizes
	w       *devWeights
	shape   attnShape
	ks      kernelSet // the attention kernels, chosen at Start
	bufs    *stepBufs
	kv      cuda.Ptr // every layer's K then V: (NumBlocks+1) blocks each (the last a sink for graph padding)
	kvBytes int64
	graphs  bool
	buckets []int
	gc      *graphCache
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
// host's weights may be released once it returns; the device memory is
// the Loaded model's until its Close (or the device's).
func (d *Device) Upload(w *model.Weights, s Sizes) (*Loaded, error) {
	if err := CheckWeights(w); err != nil {
		return nil, err
	}
	if err := checkLimits(d.Info, shapeOf(&w.Config, s.BlockSize), s); err != nil {
		return nil, fmt.Errorf("load on %s: %w", d.Info.Name, err)
	}
	l := &Loaded{dev: d, sizes: s, execs: map[*Executor]struct{}{}}
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
	if err := d.adopt(l); err != nil {
		return nil, err
	}
	return l, nil
}

// Loaded is a model on the device: it owns its weights and step buffers
// in device memory, which the executors it starts borrow.
type Loaded struct {
	dev             *Device
	sizes           Sizes
	w               *devWeights
	bufs            *stepBufs
	params, weightB float64
	closed          bool                   // under dev.mu
	execs           map[*Executor]struct{} // started and not closed, under dev.mu
}

func (w *devWeights) shapeOf() *devWeightsShape {
	c := &w.c
	return &devWeightsShape{dt: w.dt, hidden: c.Hidden, qd: c.Heads * c.HeadDim, kvd: c.KVDim(), ffn: c.FFN, vocab: c.Vocab, heads: c.Heads, headDim: c.HeadDim, kvHeads: c.KVHeads}
}

// KVBytesPerBlock is one block's K and V over all layers (fp16, or bf16
// for a bf16 model: 2 bytes a value either way).
func (l *Loaded) KVBytesPerBlock(blockSize int) int64 {
	return int64(blockSize) * l.w.c.KVBytesPerTokenOf(model.KVF16)
}

// Memory is how the device's memory is split: Graphs is set aside for the
// decode graphs (not allocated until they are captured).
type Memory struct {
	Total, Weights, Activations, KV, Graphs, Other int64
}

// KVBlocks sizes the cache as vLLM does: kvBytes when given, else the
// share util of the device's memory less everything already in use
// (the weights, the step buffers, the context and cuBLASLt's workspace,
// and other processes') and what the decode graphs will take (none when
// eager), in blocks of blockSize tokens.
func (l *Loaded) KVBlocks(util float64, kvBytes int64, blockSize int, eager bool) (int, Memory, error) {
	if l.isClosed() {
		return 0, Memory{}, fmt.Errorf("size the KV cache: %w", errModelClosed)
	}
	var free, total int64
	err := l.dev.Do(func() (err error) { free, total, err = l.dev.ctx.MemInfo(); return err })
	if err != nil {
		return 0, Memory{}, err
	}
	m := Memory{Total: total, Weights: l.w.Bytes, Activations: l.bufs.Bytes}
	m.Other = total - free - m.Weights - m.Activations
	if !eager {
		m.Graphs = graphBytes(l.w.c.Layers, len(l.buckets()))
	}
	n, err := kvBlocks(util, kvBytes, total, free, l.KVBytesPerBlock(blockSize), &m)
	return n, m, err
}

// kvBlocks is KVBlocks' arithmetic over the device's total and free
// memory, blocks of per bytes, and m's graphs: the cache, the graphs and
// everything in use stay within util of the device.
func kvBlocks(util float64, kvBytes, total, free, per int64, m *Memory) (int, error) {
	if kvBytes == 0 {
		kvBytes = int64(util*float64(total)) - (total - free) - per - m.Graphs // one block is the graphs' padding sink
		if kvBytes < per {
			return 0, fmt.Errorf("--gpu-memory-utilization %.2f of %.1f GiB leaves no room for the KV cache: %.1f GiB is in use (weights %.1f GiB, step buffers %.1f GiB, the rest other) and %.2f GiB is kept for the CUDA graphs (--enforce-eager needs none)",
				util, gib(total), gib(total-free), gib(m.Weights), gib(m.Activations), gib(m.Graphs))
		}
	} else if kvBytes+per+m.Graphs > free {
		return 0, fmt.Errorf("--kv-cache-memory-bytes %d: only %.1f GiB of the GPU's memory is free, %.2f GiB of it kept for the CUDA graphs (--enforce-eager needs none)",
			kvBytes, gib(free), gib(m.Graphs))
	}
	n := int(kvBytes / per)
	m.KV = int64(n) * per
	return n, nil
}

// buckets are the batch sizes decode graphs are captured for.
func (l *Loaded) buckets() []int {
	return graphBuckets(min(l.sizes.MaxSeqs, l.sizes.MaxTokens, maxGraphBatch))
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

// Start allocates the KV cache of cfg.NumBlocks blocks and makes the
// executor, which borrows l's weights and step buffers: one at a time
// (close it before starting another on l).
func (l *Loaded) Start(cfg Config) (*Executor, error) {
	c := &l.w.c
	if err := l.startable(); err != nil {
		return nil, fmt.Errorf("new cuda executor: %w", err)
	}
	if cfg.NumBlocks < 1 || cfg.BlockSize < 1 {
		return nil, fmt.Errorf("new cuda executor: %d blocks of %d tokens", cfg.NumBlocks, cfg.BlockSize)
	}
	if cfg.Sizes != l.sizes {
		return nil, fmt.Errorf("new cuda executor: sizes %+v, but the buffers were made for %+v", cfg.Sizes, l.sizes)
	}
	e := &Executor{dev: l.dev, l: l, cfg: cfg, sizes: l.sizes, w: l.w, bufs: l.bufs, graphs: !cfg.Eager, gc: newGraphCache(cfg.Logger),
		shape:  shapeOf(c, cfg.BlockSize),
		params: l.params, weightB: l.weightB}
	e.buckets = l.buckets()
	e.kvBytes = int64(cfg.NumBlocks+1) * l.KVBytesPerBlock(cfg.BlockSize)
	ks, err := l.dev.selfCheck(e.shape, l.w.dt)
	if err != nil {
		return nil, fmt.Errorf("new cuda executor: %w", err)
	}
	e.ks = ks
	err = l.dev.Do(func() (err error) {
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
	if err := l.lend(e); err != nil {
		return nil, fmt.Errorf("new cuda executor: %w", err)
	}
	return e, nil
}

// maxGraphBatch is the largest decode batch replayed from a graph
// (vLLM's default capture sizes stop at 512); larger ones run eagerly.
const maxGraphBatch = 512

// Kernels names the attention kernels the executor runs, and why a fast
// one is off when it is.
func (e *Executor) Kernels() string { return e.ks.String() }

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
	e.dev.mu.Lock()
	closed := e.closed
	e.dev.mu.Unlock()
	if closed {
		return errors.New("execute: the cuda executor is closed")
	}
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
		if err := e.gc.step(p.bucket, execGraphs{e}); err != nil {
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
	if err := d.rmsnorm(dt, b.x, b.o, e.downScale(), in(lay.rows), w.outNorm, b.hs, m, H, c.NormEps, false); err != nil {
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
	var dscale cuda.Ptr
	if delta != 0 {
		dscale = e.downScale() // delta is the previous layer's down projection
	}
	if err := d.rmsnorm(dt, b.x, delta, dscale, 0, l.attnNorm, b.hn, n, H, c.NormEps, true); err != nil {
		return err
	}
	if err := d.gemm("qkv_proj", dt, cuda.F32, n, H, qd+2*kvd, l.qkv, b.hn, b.qkv, false); err != nil {
		return err
	}
	if err := d.qkvRope(dt, ra, b.qkv, l.bias, l.qNorm, l.kNorm, e.w.rope, in(lay.pos), in(lay.slots), kc, vc, n); err != nil {
		return err
	}
	if nd > 0 {
		a := decodeArgs{q: b.qkv, qs: qd + 2*kvd, qrow: in(lay.qrow), ctx: in(lay.ctx), tables: in(lay.dtables), maxb: in(lay.maxb),
			nseq: nd, splits: splits, po: b.po, pm: b.pm, pl: b.pl, kc: kc, vc: vc, out: b.att}
		if err := d.decode(e.ks, dt, e.shape, a); err != nil {
			return err
		}
	}
	if nitems > 0 {
		if err := d.prefill(e.ks, dt, e.shape, b.qkv, qd+2*kvd, in(lay.items), in(lay.ptables), e.p.maxb, nitems, kc, vc, b.att); err != nil {
			return err
		}
	}
	if err := d.gemm("o_proj", dt, cuda.F32, n, qd, H, l.o, b.att, b.o, false); err != nil {
		return err
	}
	if err := d.rmsnorm(dt, b.x, b.o, 0, 0, l.ffnNorm, b.hn, n, H, c.NormEps, true); err != nil {
		return err
	}
	if err := d.gemm("gate_up_proj", dt, cuda.F32, n, H, 2*F, l.gateUp, b.hn, b.gu, false); err != nil {
		return err
	}
	if err := d.siluMul(dt, b.gu, b.act, b.scale, n, F); err != nil {
		return err
	}
	return d.gemm("down_proj", dt, cuda.F32, n, F, H, l.down, b.act, b.o, false)
}

// downScale is the rows' divisors of the down projection's input (fp16
// models: siluMul's), which the rmsnorm after it multiplies back; 0 (none)
// for other types.
func (e *Executor) downScale() cuda.Ptr {
	if e.w.dt == cuda.F16 {
		return e.bufs.scale
	}
	return 0
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

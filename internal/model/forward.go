package model

import (
	"fmt"
	"math"
	"runtime"

	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// Seq is one sequence's share of a forward pass: Tokens at positions
// Pos, Pos+1, …, with K/V reached through BlockTable. Logits are produced
// for Tokens[LogitsFrom:] (len(Tokens)-1 for the next token only, or
// len(Tokens) for none).
type Seq struct {
	Tokens     []int
	Pos        int
	BlockTable []int
	LogitsFrom int
	// HiddenFrom..HiddenTo are the tokens whose final hidden states (after
	// the output norm) Forward copies to Hidden, for embeddings; an empty
	// range for none.
	HiddenFrom, HiddenTo int
}

// Runner runs forward passes; it owns reusable buffers and a pool of
// compute threads, and is not safe for concurrent use. Close ends the
// threads (a Runner that is dropped without Close ends them when it is
// garbage collected).
type Runner struct {
	W       *Weights
	KV      *KVCache
	Threads int

	// Logits holds the last Forward's output: one row of Vocab per
	// requested position, in batch order.
	Logits []float32
	// Hidden holds the final hidden states asked for (Seq.HiddenFrom..To):
	// one row of Hidden per position, in batch order.
	Hidden []float32
	// Trace, when set, is told of Forward's phases (a profile's); nil
	// costs a branch a phase.
	Trace Tracer

	x, h, q, k, v, att, o, g, u []float32
	pos                         []int
	owner                       []int     // token → index in seqs
	ropeCS                      []float32 // cos, sin of ropePos's angles
	ropePos                     int
	mm                          tensor.Scratch
	pool                        *tensor.Pool
	shared                      bool // pool is another runner's
	attn                        attnTask
	swiglu                      swigluTask
	layerNames                  []string // "layer 0", …: Trace's names, made once
}

// RunnerConfig sizes a runner: its KV cache (NumBlocks blocks of
// BlockSize tokens, elements of KVDtype; the zero value is fp16) and its
// compute threads (the caller of Forward is one of them).
type RunnerConfig struct {
	NumBlocks, BlockSize int
	Threads              int
	KVDtype              KVDtype
	// Share, when set, runs this runner on another's compute threads (a
	// draft model beside its target): two pools would spin against each
	// other between their passes. Close leaves them to their owner.
	Share *Runner
}

// NewRunner prepares a runner over w with a cache of numBlocks blocks in
// the default type (fp16) and threads compute threads.
func NewRunner(w *Weights, numBlocks, blockSize, threads int) *Runner {
	return NewRunnerWith(w, RunnerConfig{NumBlocks: numBlocks, BlockSize: blockSize, Threads: threads})
}

// NewRunnerWith prepares a runner over w as c says.
func NewRunnerWith(w *Weights, c RunnerConfig) *Runner {
	threads := max(1, c.Threads)
	r := &Runner{W: w, KV: NewKVCacheOf(w.Config, c.NumBlocks, c.BlockSize, c.KVDtype), Threads: threads}
	if c.Share != nil {
		r.pool, r.Threads, r.shared = c.Share.pool, c.Share.Threads, true
	} else {
		r.pool = tensor.NewPool(threads)
		runtime.AddCleanup(r, func(p *tensor.Pool) { p.Close() }, r.pool)
	}
	r.attn.r = r
	r.attn.workers = make([]attnWorker, r.Threads)
	return r
}

// Parallel runs t over [0, total) on the runner's compute threads, chunk
// items at a time (worker indices below Threads).
func (r *Runner) Parallel(t tensor.Task, total, chunk int) { r.pool.Run(t, total, chunk) }

// ReadRate measures how fast the runner's threads stream the weights a
// decode step reads (Weights.Streamed, in their own pages), in bytes per
// second, best of reps passes: decode's memory ceiling (tensor.ReadRate).
func (r *Runner) ReadRate(reps int) (float64, error) {
	var bufs [][]byte
	for _, m := range r.W.Streamed() {
		bufs = append(bufs, m.Data)
	}
	return tensor.ReadRate(r.pool, bufs, reps)
}

// Close stops the runner's compute threads; Forward after Close runs on the
// calling goroutine alone.
func (r *Runner) Close() {
	if !r.shared {
		r.pool.Close()
	}
}

// Forward runs the batch and fills r.Logits.
func (r *Runner) Forward(seqs []Seq) error {
	c := &r.W.Config
	n := 0
	for i, s := range seqs {
		if len(s.Tokens) == 0 {
			return fmt.Errorf("forward: sequence %d has no tokens", i)
		}
		if end := s.Pos + len(s.Tokens); (end+r.KV.BlockSize-1)/r.KV.BlockSize > len(s.BlockTable) {
			return fmt.Errorf("forward: sequence %d reaches position %d but its block table holds %d blocks", i, end, len(s.BlockTable))
		}
		for _, b := range s.BlockTable {
			if b < 0 || b >= r.KV.NumBlocks {
				return fmt.Errorf("forward: sequence %d: block %d out of range", i, b)
			}
		}
		for _, t := range s.Tokens {
			if t < 0 || t >= c.Vocab {
				return fmt.Errorf("forward: token %d outside the vocabulary of %d", t, c.Vocab)
			}
		}
		n += len(s.Tokens)
	}
	r.grow(n)
	H := c.Hidden
	t := 0
	r.begin(PhaseEmbed)
	for i, s := range seqs {
		for j, tok := range s.Tokens {
			r.W.Embed.Row(tok, r.x[t*H:(t+1)*H])
			r.pos[t], r.owner[t] = s.Pos+j, i
			t++
		}
	}
	r.planAttention(seqs)
	r.end()
	for l := range r.W.Layers {
		r.begin(r.layerName(l))
		r.layer(&r.W.Layers[l], l, seqs, n)
		r.end()
	}
	r.begin(PhaseLMHead)
	defer r.end()
	return r.logits(seqs)
}

func (r *Runner) grow(n int) {
	c := &r.W.Config
	qd, kvd := c.Heads*c.HeadDim, c.KVDim()
	r.x = resize(r.x, n*c.Hidden)
	r.h = resize(r.h, n*c.Hidden)
	r.o = resize(r.o, n*c.Hidden)
	r.q = resize(r.q, n*qd)
	r.att = resize(r.att, n*qd)
	r.k = resize(r.k, n*kvd)
	r.v = resize(r.v, n*kvd)
	r.g = resize(r.g, n*c.FFN)
	r.u = resize(r.u, n*c.FFN)
	r.pos = resize(r.pos, n)
	r.owner = resize(r.owner, n)
}

func (r *Runner) layer(L *Layer, l int, seqs []Seq, n int) {
	c := &r.W.Config
	H, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVDim()
	r.begin(PhaseAttnNorm)
	for t := range n {
		rmsNorm(r.h[t*H:(t+1)*H], r.x[t*H:(t+1)*H], L.AttnNorm, c.NormEps)
	}
	r.end()
	r.begin(PhaseQKV)
	tensor.MulBatches([]*tensor.Matrix{L.Q, L.K, L.V}, r.h, n, [][]float32{r.q, r.k, r.v}, r.pool, &r.mm)
	r.end()
	r.begin(PhaseRoPE)
	for t := range n {
		q, k, v := r.q[t*qd:(t+1)*qd], r.k[t*kvd:(t+1)*kvd], r.v[t*kvd:(t+1)*kvd]
		addBias(q, L.QBias)
		addBias(k, L.KBias)
		addBias(v, L.VBias)
		if c.QKNorm {
			for h := 0; h < qd; h += c.HeadDim {
				rmsNorm(q[h:h+c.HeadDim], q[h:h+c.HeadDim], L.QNorm, c.NormEps)
			}
			for h := 0; h < kvd; h += c.HeadDim {
				rmsNorm(k[h:h+c.HeadDim], k[h:h+c.HeadDim], L.KNorm, c.NormEps)
			}
		}
		r.rope(q, r.pos[t])
		r.rope(k, r.pos[t])
		r.KV.write(l, seqs[r.owner[t]].BlockTable, r.pos[t], k, v)
	}
	r.end()
	r.begin(PhaseAttention)
	r.attention(l, seqs)
	r.end()
	r.begin(PhaseOProj)
	L.O.MulBatch(r.att, n, r.o, r.pool, &r.mm)
	add(r.x[:n*H], r.o[:n*H])
	r.end()

	r.begin(PhaseFFNNorm)
	for t := range n {
		rmsNorm(r.h[t*H:(t+1)*H], r.x[t*H:(t+1)*H], L.FFNNorm, c.NormEps)
	}
	r.end()
	r.begin(PhaseMLP)
	r.begin(PhaseGateUp)
	tensor.MulBatches([]*tensor.Matrix{L.Gate, L.Up}, r.h, n, [][]float32{r.g, r.u}, r.pool, &r.mm)
	r.end()
	r.begin(PhaseSiLUMul)
	r.swiglu.g, r.swiglu.u = r.g[:n*c.FFN], r.u[:n*c.FFN]
	r.pool.Run(&r.swiglu, n*c.FFN, 2048)
	r.end()
	r.begin(PhaseDown)
	L.Down.MulBatch(r.g, n, r.o, r.pool, &r.mm)
	add(r.x[:n*H], r.o[:n*H])
	r.end()
	r.end()
}

// swigluTask computes g = silu(g)·u over a range, on the pool: exp over
// the whole FFN width is worth sharing.
type swigluTask struct{ g, u []float32 }

func (t *swigluTask) Run(_, lo, hi int) { tensor.SiLUMul(t.g[lo:hi], t.u[lo:hi]) }

// rope rotates every head of x (q or k, heads of HeadDim) for position pos,
// computing angles iteratively in float32 as ggml does; the cos/sin of a
// position are computed once and kept for the next call (K after Q).
func (r *Runner) rope(x []float32, pos int) {
	c := &r.W.Config
	nd := c.RopeDims
	if len(r.ropeCS) != nd || r.ropePos != pos {
		r.ropeCS = resize(r.ropeCS, nd)
		c.ropeAngles(pos, r.ropeCS)
		r.ropePos = pos
	}
	for h := 0; h < len(x); h += c.HeadDim {
		head := x[h : h+c.HeadDim]
		for i := 0; i < nd/2; i++ {
			cos, sin := r.ropeCS[2*i], r.ropeCS[2*i+1]
			a, b := 2*i, 2*i+1
			if c.RopeMode == RopeNeoX {
				a, b = i, i+nd/2
			}
			x0, x1 := head[a], head[b]
			head[a] = x0*cos - x1*sin
			head[b] = x0*sin + x1*cos
		}
	}
}

// ropeAngles writes cos and sin of position pos's RoPE angles, as pairs,
// into cs (RopeDims values): the angles computed iteratively in float32
// as ggml does.
func (c *Config) ropeAngles(pos int, cs []float32) {
	nd := c.RopeDims
	thetaScale := float32(math.Pow(float64(c.RopeBase), -2/float64(nd)))
	theta := float32(pos)
	for i := 0; i < nd/2; i++ {
		cs[2*i], cs[2*i+1] = float32(math.Cos(float64(theta))), float32(math.Sin(float64(theta)))
		theta *= thetaScale
	}
}

// logits applies the final norm and the output matrix to the positions the
// sequences asked for.
func (r *Runner) logits(seqs []Seq) error {
	c := &r.W.Config
	H := c.Hidden
	hidden := 0
	for _, s := range seqs {
		hidden += max(s.HiddenTo-s.HiddenFrom, 0)
	}
	r.Hidden = resize(r.Hidden, hidden*H)
	m, t, k := 0, 0, 0
	for _, s := range seqs {
		for j := range s.Tokens {
			if j >= s.HiddenFrom && j < s.HiddenTo {
				rmsNorm(r.Hidden[k*H:(k+1)*H], r.x[t*H:(t+1)*H], r.W.OutputNorm, c.NormEps)
				k++
			}
			if j >= s.LogitsFrom {
				rmsNorm(r.h[m*H:(m+1)*H], r.x[t*H:(t+1)*H], r.W.OutputNorm, c.NormEps)
				m++
			}
			t++
		}
	}
	r.Logits = resize(r.Logits, m*c.Vocab)
	if m > 0 {
		r.W.Output.MulBatch(r.h, m, r.Logits, r.pool, &r.mm)
	}
	return nil
}

// rmsNorm is ggml's: the mean square summed in float64, scale =
// 1/sqrtf(mean+eps), then y = (x·scale)·w.
func rmsNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(float64(float32(sum/float64(len(x)))+eps)))
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

func addBias(x, b []float32) {
	if b != nil {
		add(x, b)
	}
}

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

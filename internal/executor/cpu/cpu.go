// Package cpu is the executor that runs a real GGUF model on this machine's
// CPU: it adapts the engine's flattened batch to model.Runner's forward
// pass (K/V in the engine's paged blocks) and samples each sequence's next
// token with the shared samplers. Its lifecycle (Backend, an
// executor.Lifecycle) reads the model through internal/loader, sizes the
// KV cache in host memory and starts the executor.
//
// It implements engine.Executor; it must not import net/http, Prometheus,
// OpenTelemetry, or the server, metrics or tracing packages.
package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// Config sizes the executor.
type Config struct {
	NumBlocks int // KV blocks, as the engine's block manager has them
	BlockSize int
	Threads   int
	KVDtype   model.KVDtype // the cache's element type (zero: fp16)
	// Draft is speculative decoding's draft model (nil for none), with
	// its K/V in the same blocks as the target's, of type DraftKVDtype.
	Draft        *model.Weights
	DraftKVDtype model.KVDtype
}

// Executor runs batches on the CPU. Called from the engine goroutine only.
type Executor struct {
	cfg     Config
	runner  *model.Runner
	sample  sampleTask
	seqs    []model.Seq
	pools   map[int][]float32 // embedding sequences' running sums, by engine sequence
	params  float64           // matmul parameters, for FLOP estimates
	weights float64           // bytes of matmul weights, read once per step
	draft   *drafter          // nil without a draft model
	tl      *timeline         // nil unless a profile records (TimeKernels)
}

// New allocates the KV cache for w.
func New(w *model.Weights, cfg Config) (*Executor, error) {
	if cfg.NumBlocks < 1 || cfg.BlockSize < 1 {
		return nil, fmt.Errorf("new cpu executor: %d blocks of %d tokens", cfg.NumBlocks, cfg.BlockSize)
	}
	e := &Executor{
		cfg:     cfg,
		runner:  model.NewRunnerWith(w, model.RunnerConfig{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, Threads: cfg.Threads, KVDtype: cfg.KVDtype}),
		params:  matmulParams(&w.Config),
		weights: float64(weightBytes(w)),
	}
	if cfg.Draft != nil {
		if err := cfg.Draft.CanDraftFor(w); err != nil {
			return nil, fmt.Errorf("new cpu executor: %w", err)
		}
		e.draft = newDrafter(cfg.Draft, e.runner, cfg)
	}
	return e, nil
}

// matmulParams is the weights a token multiplies, for FLOP estimates.
func matmulParams(c *model.Config) float64 {
	layer := float64(c.Hidden)*float64(c.Heads*c.HeadDim)*2 + float64(c.Hidden)*float64(c.KVDim())*2 + 3*float64(c.Hidden)*float64(c.FFN)
	return layer * float64(c.Layers)
}

// Close stops the executor's compute threads. Execute after Close still
// works, on the calling goroutine alone.
func (e *Executor) Close() { e.runner.Close() }

// Weights is the model the executor runs.
func (e *Executor) Weights() *model.Weights { return e.runner.W }

// Execute runs one step: one forward pass over every scheduled token,
// logits only for the sequences that sample, then sampling.
func (e *Executor) Execute(b *engine.Batch, r *engine.StepResult) error {
	if e.tl != nil {
		e.tl.reset()
		defer func() { r.Kernels = e.tl.finish() }()
	}
	e.seqs = e.seqs[:0]
	var ctx float64
	pooling := e.runner.W.Config.Pooling
	for _, s := range b.Seqs {
		from := len(s.Tokens)
		if s.Sample && !s.Embed {
			from -= 1 + len(s.Draft) // a verify pass scores every draft's position
		}
		ms := model.Seq{Tokens: s.Tokens, Pos: s.Pos, BlockTable: s.BlockTable, LogitsFrom: from}
		if s.Embed {
			switch pooling {
			case model.PoolMean:
				ms.HiddenTo = len(s.Tokens)
			case model.PoolCLS:
				if s.Pos == 0 {
					ms.HiddenTo = 1
				}
			case model.PoolLast:
				if s.Sample {
					ms.HiddenFrom, ms.HiddenTo = len(s.Tokens)-1, len(s.Tokens)
				}
			default:
				return fmt.Errorf("execute: sequence %d asks for an embedding of a model without pooling", s.Seq)
			}
		}
		e.seqs = append(e.seqs, ms)
		ctx += float64(len(s.Tokens)) * float64(s.Pos+len(s.Tokens))
	}
	if err := e.runner.Forward(e.seqs); err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	e.pool(b, r)
	w := &e.runner.W.Config
	t := &e.sample
	t.e, t.b, t.r = e, b, r
	t.rows = t.rows[:0]
	row := 0
	for i := range b.Seqs {
		s := &b.Seqs[i]
		if !s.Sample || s.Embed {
			t.rows = append(t.rows, -1)
			continue
		}
		if s.Params == nil {
			return fmt.Errorf("execute: sequence %d has no sampling params", s.Seq)
		}
		if len(s.Draft) > 0 && s.Constraint != nil {
			return fmt.Errorf("execute: sequence %d has drafts and a structured-output constraint", s.Seq)
		}
		t.rows = append(t.rows, row)
		row += 1 + len(s.Draft)
	}
	if len(r.Accepted) < len(b.Seqs) {
		r.Accepted = make([][]sampling.Result, len(b.Seqs))
	}
	if len(t.verify) < len(b.Seqs) {
		t.verify = append(t.verify, make([][]sampling.Result, len(b.Seqs)-len(t.verify))...)
	}
	for len(t.samplers) < e.runner.Threads {
		t.samplers = append(t.samplers, sampling.Sampler{})
		t.masks = append(t.masks, make([]uint64, (w.Vocab+63)/64))
	}
	// A softmax over a large vocabulary costs about as much per sequence
	// as a small model's layer: spread the sequences over the threads.
	e.tl.Begin(phaseSample)
	e.runner.Parallel(t, len(b.Seqs), 1)
	e.tl.End()
	t.e, t.b, t.r = nil, nil, nil
	if e.draft != nil {
		e.tl.Begin(phaseDraft)
		err := e.draft.run(b, r)
		e.tl.End()
		if err != nil {
			return fmt.Errorf("execute: %w", err)
		}
	}
	// Estimates in the spirit of vLLM's MFU counters: matmuls plus
	// attention; weights read once per step, and every token reads the K/V
	// of its whole context (ctx sums those context lengths).
	kvBytes := float64(w.KVBytesPerTokenOf(e.cfg.KVDtype))
	r.FLOPs = 2*e.params*float64(b.NumTokens) + 4*float64(w.Layers*w.Heads*w.HeadDim)*ctx
	r.ReadBytes = e.weights + kvBytes*ctx
	r.WriteBytes = kvBytes * float64(b.NumTokens)
	if d := e.draft; d != nil && d.tokens > 0 {
		// Its matmuls and weights, once per pass (its attention is small
		// beside the target's and left out).
		r.FLOPs += 2 * d.params * d.tokens
		r.ReadBytes += d.weights * float64(d.passes)
		r.WriteBytes += float64(d.runner.W.KVBytesPerTokenOf(e.cfg.DraftKVDtype)) * d.tokens
	}
	return nil
}

// pool folds the step's hidden states into each embedding sequence's
// vector, and hands over the vectors of those whose prompt ended: the mean
// over every token, the first token's or the last's, L2-normalised. A
// sequence's first chunk (position 0: new, or recomputed after
// preemption) starts its sum afresh.
func (e *Executor) pool(b *engine.Batch, r *engine.StepResult) {
	H := e.runner.W.Config.Hidden
	if len(r.Embeddings) < len(b.Seqs) {
		r.Embeddings = make([][]float32, len(b.Seqs))
	}
	k := 0 // row of runner.Hidden
	for i := range b.Seqs {
		s, ms := &b.Seqs[i], &e.seqs[i]
		n := ms.HiddenTo - ms.HiddenFrom
		if !s.Embed {
			continue
		}
		if e.pools == nil {
			e.pools = map[int][]float32{}
		}
		acc := e.pools[s.Seq]
		if s.Pos == 0 || acc == nil {
			acc = make([]float32, H)
			e.pools[s.Seq] = acc
		}
		for j := range n {
			row := e.runner.Hidden[(k+j)*H : (k+j+1)*H]
			for d, v := range row {
				acc[d] += v
			}
		}
		k += n
		if !s.Sample {
			continue
		}
		delete(e.pools, s.Seq)
		normalize(acc)
		r.Embeddings[i] = acc
	}
}

// normalize scales v to unit length (the mean's scale falls out with it).
func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// sampleTask samples the batch's sequences on the runner's threads, one
// sampler (scratch memory) per thread.
type sampleTask struct {
	e        *Executor
	b        *engine.Batch
	r        *engine.StepResult
	rows     []int               // first logits row of each sequence, -1 when it does not sample
	verify   [][]sampling.Result // per sequence: Verify's output, accepted drafts then the final token
	samplers []sampling.Sampler
	masks    [][]uint64 // per worker, for structured outputs
}

func (t *sampleTask) Run(worker, lo, hi int) {
	V := t.e.runner.W.Vocab
	for i := lo; i < hi; i++ {
		row := t.rows[i]
		if row < 0 {
			continue
		}
		s := &t.b.Seqs[i]
		n := 1 + len(s.Draft)
		logits := t.e.runner.Logits[row*V : (row+n)*V]
		for j := range n {
			for _, id := range s.Banned {
				if id < V {
					logits[j*V+id] = float32(math.Inf(-1))
				}
			}
		}
		if len(s.Draft) > 0 {
			// The engine drafts only for sequences without a constraint
			// (its matcher cannot take rejected tokens back).
			out := t.verify[i]
			if len(out) < n {
				out = append(out, make([]sampling.Result, n-len(out))...)
				t.verify[i] = out
			}
			a := t.samplers[worker].Verify(logits, V, s.Draft, s.Params, rngOf(s.RNG), s.History, s.NumPrompt, out)
			// Swap rather than copy, so that no two results share a Top
			// buffer.
			t.r.Samples[i], out[a] = out[a], t.r.Samples[i]
			t.r.Accepted[i] = out[:a]
			continue
		}
		if s.Constraint != nil {
			mask := t.masks[worker]
			s.Constraint.FillMask(mask)
			applyMask(logits, mask)
		}
		t.samplers[worker].Sample(logits, s.Params, rngOf(s.RNG), s.History, s.NumPrompt, &t.r.Samples[i])
	}
}

// ninf is a mask word's worth of -Inf.
var ninf = func() (a [64]float32) {
	for i := range a {
		a[i] = float32(math.Inf(-1))
	}
	return a
}()

// applyMask sets to -Inf the logits of the tokens mask does not allow.
// Most words of a structured output's mask are empty: those are a copy.
func applyMask(logits []float32, mask []uint64) {
	for w := 0; w*64 < len(logits); w++ {
		var word uint64
		if w < len(mask) {
			word = mask[w]
		}
		row := logits[w*64 : min(w*64+64, len(logits))]
		switch word {
		case ^uint64(0):
		case 0:
			copy(row, ninf[:])
		default:
			for i := range row {
				if word&(1<<i) == 0 {
					row[i] = ninf[0]
				}
			}
		}
	}
}

func weightBytes(w *model.Weights) int {
	// The output matrix is read whole every step; embeddings only by row.
	n := len(w.Output.Data)
	for _, l := range w.Layers {
		for _, m := range []*tensor.Matrix{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			n += len(m.Data)
		}
	}
	return n
}

// rngOf is the sequence's source, or a fixed one for a batch built without.
func rngOf(r *rand.Rand) *rand.Rand {
	if r == nil {
		return sampling.NewRNG(0)
	}
	return r
}

var _ engine.Capable = (*Executor)(nil)

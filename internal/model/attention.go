package model

import (
	"math"

	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// Attention is tiled (tensor.Flash): one work item is one sequence's KV
// head for a run of its tokens, whose query heads (the GQA group) over
// those tokens form the rows that share every key and value loaded.

// attnRows is about how many query rows one item takes: enough to reuse
// each loaded tile of K/V many times, few enough that the rows' state
// stays in L1 and a prefill chunk splits into items for every thread.
const attnRows = 64

// attnItem is tokens [t0, t0+n) of the batch (consecutive tokens of
// sequence seq) for KV head kvHead.
type attnItem struct{ seq, kvHead, t0, n int }

// attnWorker is one compute thread's attention state.
type attnWorker struct {
	f      tensor.Flash
	kt, vt []float32 // a gathered tile, for block sizes not a multiple of 16
}

// attnTask is attention's work for the pool.
type attnTask struct {
	r       *Runner
	l       int
	seqs    []Seq
	items   []attnItem
	workers []attnWorker
}

func (a *attnTask) Run(worker, lo, hi int) {
	for i := lo; i < hi; i++ {
		a.r.attendItem(a.l, a.seqs, a.items[i], &a.workers[worker])
	}
}

// planAttention splits the batch into attention items (the same for
// every layer of a step).
func (r *Runner) planAttention(seqs []Seq) {
	c := &r.W.Config
	per := max(1, attnRows/(c.Heads/c.KVHeads))
	a := &r.attn
	a.items = a.items[:0]
	t := 0
	for i, s := range seqs {
		for t0 := 0; t0 < len(s.Tokens); t0 += per {
			n := min(per, len(s.Tokens)-t0)
			for h := range c.KVHeads {
				a.items = append(a.items, attnItem{seq: i, kvHead: h, t0: t + t0, n: n})
			}
		}
		t += len(s.Tokens)
	}
}

// attention computes, for every token and head, softmax(q·Kᵀ/√d)·V over
// the token's sequence up to its own position, reading K/V through the
// block table.
func (r *Runner) attention(l int, seqs []Seq) {
	a := &r.attn
	a.l, a.seqs = l, seqs
	r.pool.Run(a, len(a.items), 1)
	a.seqs = nil
}

func (r *Runner) attendItem(l int, seqs []Seq, it attnItem, w *attnWorker) {
	c := &r.W.Config
	d, qd, G := c.HeadDim, c.Heads*c.HeadDim, c.Heads/c.KVHeads
	f := &w.f
	f.Reset(it.n*G, d)
	scale := float32(1 / math.Sqrt(float64(d)))
	for tk := range it.n {
		t := it.t0 + tk
		for g := range G {
			h := it.kvHead*G + g
			dst := f.Q[(tk*G+g)*d : (tk*G+g+1)*d]
			for i, v := range r.q[t*qd+h*d : t*qd+(h+1)*d] {
				dst[i] = v * scale
			}
		}
	}
	table := seqs[it.seq].BlockTable
	first, last := r.pos[it.t0], r.pos[it.t0+it.n-1]
	for j0 := 0; j0 <= last; j0 += tensor.FlashKeys {
		for tk := range it.n {
			lim := int32(min(tensor.FlashKeys, max(0, first+tk+1-j0)))
			for g := range G {
				f.Lim[tk*G+g] = lim
			}
		}
		next := j0 + tensor.FlashKeys
		if next > last {
			next = -1
		}
		r.KV.step(w, l, table, it.kvHead, j0, min(tensor.FlashKeys, last+1-j0), next)
	}
	for tk := range it.n {
		t := it.t0 + tk
		for g := range G {
			h := it.kvHead*G + g
			f.Output(tk*G+g, r.att[t*qd+h*d:t*qd+(h+1)*d])
		}
	}
}

package cuda

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// layout is where each of a step's inputs starts in its int32 words.
type layout struct {
	tokens, pos, slots, qrow, ctx            int
	rows, temp, topk, topp, minp, u, maskrow int
	maxb, dtables, items, ptables, words     int
}

// newLayout lays out n tokens, nd decode sequences, m sampled rows,
// tables maxb wide, nitems prefill items over np prefill sequences.
func newLayout(n, nd, m, maxb, nitems, np int) layout {
	var l layout
	at := 0
	next := func(k int) int { p := at; at += k; return p }
	l.tokens, l.pos, l.slots = next(n), next(n), next(n)
	l.qrow, l.ctx = next(nd), next(nd)
	l.rows, l.temp, l.topk, l.topp, l.minp, l.u, l.maskrow = next(m), next(m), next(m), next(m), next(m), next(m), next(m)
	l.maxb = next(1)
	l.dtables = next(nd * maxb)
	l.items = next(4 * nitems)
	l.ptables = next(np * maxb)
	l.words = at
	return l
}

// stepPlan is one step laid out for the device: its tokens in device
// order (the decode sequences' first, then each prefill chunk), and the
// inputs packed in the staging buffer at lay's offsets.
type stepPlan struct {
	n, nd, m, nitems, np, maxb int
	splits                     int
	bucket                     int // > 0: replayed from the graph of this batch size
	lay                        layout
	order                      []int  // device order → batch index
	rowSeq                     []int  // sampled row → batch index
	hostRow                    []bool // sampled on the CPU from downloaded logits
	anyMask, anyHost           bool
	ctxSum                     float64 // Σ tokens × context, for the FLOP estimate
}

// hostSampled says which parameters the device sampler lacks: the CPU's
// sampler runs those rows (penalties over the history; top logprobs).
func hostSampled(s *engine.SeqBatch) bool {
	p := s.Params
	return p.Logprobs > 0 || p.RepetitionPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0
}

// plan checks the batch against the step sizes and packs its inputs.
// What the executor does not run (Capabilities: drafts, embeddings)
// never reaches it: the engine refuses it at admission.
func (e *Executor) plan(b *engine.Batch) error {
	p := &e.p
	B, c := e.cfg.BlockSize, &e.w.c
	p.order, p.rowSeq, p.hostRow = p.order[:0], p.rowSeq[:0], p.hostRow[:0]
	p.n, p.nd, p.m, p.nitems, p.np, p.maxb, p.anyMask, p.anyHost, p.ctxSum = 0, 0, 0, 0, 0, 1, false, false, 0
	fast := e.shape.fastDecode()
	for i := range b.Seqs {
		s := &b.Seqs[i]
		switch {
		case len(s.Tokens) == 0:
			return fmt.Errorf("execute: sequence %d has no tokens", s.Seq)
		case s.Sample && s.Params == nil:
			return fmt.Errorf("execute: sequence %d has no sampling params", s.Seq)
		}
		end := s.Pos + len(s.Tokens)
		if end > e.sizes.MaxModelLen {
			return fmt.Errorf("execute: sequence %d reaches position %d, past max-model-len %d", s.Seq, end, e.sizes.MaxModelLen)
		}
		nb := (end + B - 1) / B
		if nb > len(s.BlockTable) {
			return fmt.Errorf("execute: sequence %d reaches position %d but its block table holds %d blocks", s.Seq, end, len(s.BlockTable))
		}
		for _, blk := range s.BlockTable[:nb] {
			if blk < 0 || blk >= e.cfg.NumBlocks {
				return fmt.Errorf("execute: sequence %d: block %d out of range", s.Seq, blk)
			}
		}
		for _, t := range s.Tokens {
			if t < 0 || t >= c.Vocab {
				return fmt.Errorf("execute: token %d outside the vocabulary of %d", t, c.Vocab)
			}
		}
		p.maxb = max(p.maxb, nb)
		p.n += len(s.Tokens)
		p.ctxSum += float64(len(s.Tokens)) * float64(end)
		if fast && len(s.Tokens) == 1 {
			p.order = append(p.order, i)
			p.nd++
		}
	}
	if p.n > e.sizes.MaxTokens || len(b.Seqs) > e.sizes.MaxSeqs {
		return fmt.Errorf("execute: %d tokens of %d sequences, past the step's %d and %d", p.n, len(b.Seqs), e.sizes.MaxTokens, e.sizes.MaxSeqs)
	}
	per := e.ks.prefillTokens()
	for i := range b.Seqs {
		s := &b.Seqs[i]
		if fast && len(s.Tokens) == 1 {
			continue
		}
		p.order = append(p.order, i)
		p.np++
		p.nitems += (len(s.Tokens) + per - 1) / per
	}
	// Sampled rows, in device order: the last token of each sampling
	// sequence.
	for _, i := range p.order {
		if b.Seqs[i].Sample {
			p.rowSeq = append(p.rowSeq, i)
		}
	}
	p.m = len(p.rowSeq)
	size, m := p.n, p.m
	p.bucket = 0
	// A graph replays as one unit: while the kernels are timed, decode
	// steps run eagerly.
	// A bucket whose capture failed runs eagerly, unpadded.
	if e.graphs && !e.timing && p.nd == p.n && p.n <= e.buckets[len(e.buckets)-1] && !e.gc.eagerFor(bucketFor(e.buckets, p.n)) {
		p.bucket = bucketFor(e.buckets, p.n)
		size, m = p.bucket, p.bucket
	}
	nd := p.nd
	if p.bucket > 0 {
		nd = size
	}
	p.lay = newLayout(size, nd, m, p.maxb, p.nitems, p.np)
	p.splits = e.decodeSplits(nd, p.bucket > 0)
	return e.pack(b, size, nd, m)
}

// bucketFor is the smallest graph batch size that holds n.
func bucketFor(buckets []int, n int) int {
	for _, s := range buckets {
		if s >= n {
			return s
		}
	}
	return 0
}

// decodeSplits splits each context into pieces enough for the GPU's
// multiprocessors to have two blocks each (a graph's count is fixed, so
// each sequence splits its own context by it).
func (e *Executor) decodeSplits(nd int, graph bool) int {
	if nd == 0 {
		return 1
	}
	want := (2*e.dev.Info.SMs + e.shape.kvHeads*nd - 1) / (e.shape.kvHeads * nd)
	return max(1, min(maxSplits, want))
}

// pack writes the inputs into the staging buffer: size token slots (the
// graph's batch when replaying one; padded entries write their K/V into
// the spare block and sample greedily, unread).
func (e *Executor) pack(b *engine.Batch, size, nd, m int) error {
	p, l, h := &e.p, &e.p.lay, e.bufs.host
	B := e.cfg.BlockSize
	sink := int32(e.cfg.NumBlocks * B) // the spare block's first slot
	if l.words > len(h) {
		return fmt.Errorf("BUG: execute: inputs of %d words in a buffer of %d", l.words, len(h))
	}
	clear(h[:l.words])
	h[l.maxb] = int32(p.maxb)
	t, item, pseq := 0, 0, 0
	per := e.ks.prefillTokens()
	for k, i := range p.order {
		s := &b.Seqs[i]
		table := s.BlockTable
		for j, tok := range s.Tokens {
			pos := s.Pos + j
			h[l.tokens+t+j], h[l.pos+t+j] = int32(tok), int32(pos)
			h[l.slots+t+j] = int32(table[pos/B]*B + pos%B)
		}
		if k < p.nd {
			h[l.qrow+k], h[l.ctx+k] = int32(t), int32(s.Pos+1)
			row := h[l.dtables+k*p.maxb:]
			for j := range (s.Pos + B) / B {
				row[j] = int32(table[j])
			}
		} else {
			nb := (s.Pos + len(s.Tokens) + B - 1) / B
			row := h[l.ptables+pseq*p.maxb:]
			for j := range nb {
				row[j] = int32(table[j])
			}
			for t0 := 0; t0 < len(s.Tokens); t0 += per {
				it := h[l.items+4*item:]
				it[0], it[1], it[2], it[3] = int32(pseq), int32(t+t0), int32(min(per, len(s.Tokens)-t0)), int32(s.Pos+t0)
				item++
			}
			pseq++
		}
		t += len(s.Tokens)
	}
	for k := p.n; k < size; k++ { // a graph's padding
		h[l.slots+k] = sink
	}
	for k := p.nd; k < nd; k++ {
		h[l.qrow+k] = int32(k)
	}
	// The sampled rows: which token row, and how.
	e.rowOf = resize(e.rowOf, len(b.Seqs)) // batch index → its last token's row
	t = 0
	for _, i := range p.order {
		t += len(b.Seqs[i].Tokens)
		e.rowOf[i] = t - 1
	}
	for r := range m {
		h[l.rows+r], h[l.maskrow+r] = int32(r), -1
		h[l.topp+r] = int32(math.Float32bits(1))
		if r >= p.m {
			continue // padding: greedy on an unused row
		}
		i := p.rowSeq[r]
		s := &b.Seqs[i]
		h[l.rows+r] = int32(e.rowOf[i])
		host := hostSampled(s)
		p.hostRow = append(p.hostRow, host)
		if host {
			p.anyHost = true
			continue
		}
		sp := s.Params
		h[l.temp+r] = int32(math.Float32bits(float32(sp.Temperature)))
		h[l.topk+r] = int32(sp.TopK)
		h[l.topp+r] = int32(math.Float32bits(float32(sp.TopP)))
		h[l.minp+r] = int32(math.Float32bits(float32(sp.MinP)))
		if !sp.Greedy() {
			h[l.u+r] = int32(math.Float32bits(float32(rngOf(s).Float64())))
		}
		if s.Constraint != nil || len(s.Banned) > 0 {
			e.fillMask(s, r)
			h[l.maskrow+r] = int32(r)
			p.anyMask = true
		}
	}
	return nil
}

// fillMask writes row r's token mask: the constraint's (all tokens
// without one) less the banned tokens.
func (e *Executor) fillMask(s *engine.SeqBatch, r int) {
	w := e.bufs.maskWords
	mask := e.bufs.maskHost[r*w : (r+1)*w]
	if s.Constraint != nil {
		s.Constraint.FillMask(mask)
	} else {
		for i := range mask {
			mask[i] = ^uint64(0)
		}
	}
	for _, id := range s.Banned {
		if id >= 0 && id < w*64 {
			mask[id/64] &^= 1 << (id % 64)
		}
	}
}

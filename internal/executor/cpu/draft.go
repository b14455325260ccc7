package cpu

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// drafter is speculative decoding's draft model (vLLM's draft_model
// method): a smaller model of the same vocabulary, with its own K/V in
// the same block tables as the target's. After the target's pass it
// drafts greedily for the sequences the engine asked (SeqBatch.Propose):
// one pass over the verified tokens its K/V lack and the new token, and
// one per further draft, batched over the sequences. A sequence that does
// not draft this step (one whose drafts were refused and is backing off,
// a structured output, a prefill chunk) costs the draft nothing: it
// catches up when it next drafts.
type drafter struct {
	runner *model.Runner

	seqs   []model.Seq
	in     [][]int // per batch sequence: the pass's input tokens
	rows   []int   // batch index of each sequence in seqs
	drafts [][]int // per batch sequence, handed to the engine (it copies)

	params, weights float64 // for the step's FLOP and traffic estimates
	tokens          float64 // positions the draft computed this step
	passes          int     // and its forward passes
}

func newDrafter(w *model.Weights, target *model.Runner, cfg Config) *drafter {
	return &drafter{
		runner: model.NewRunnerWith(w, model.RunnerConfig{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize,
			KVDtype: cfg.DraftKVDtype, Share: target}),
		params:  matmulParams(&w.Config),
		weights: float64(weightBytes(w)),
	}
}

// run drafts after the target verified b (r holds its samples and
// accepted drafts), filling r.Drafts and r.DraftKV.
func (d *drafter) run(b *engine.Batch, r *engine.StepResult) error {
	d.seqs, d.rows = d.seqs[:0], d.rows[:0]
	d.tokens, d.passes = 0, 0
	for len(d.in) < len(b.Seqs) {
		d.in, d.drafts = append(d.in, nil), append(d.drafts, nil)
	}
	passes := 0
	for i := range b.Seqs {
		s := &b.Seqs[i]
		d.drafts[i] = d.drafts[i][:0]
		if s.Embed {
			continue
		}
		// The verified context after this step: the tokens computed
		// but the rejected drafts. The draft's own K/V are good up to
		// DraftKV and no further than that (its proposals past the
		// accepted ones were other tokens).
		end := s.Pos + len(s.Tokens)
		if s.Sample {
			end -= len(s.Draft) - len(r.Accepted[i])
		}
		from := min(s.DraftKV, end)
		r.DraftKV[i] = from
		propose := s.Sample && s.Propose > 0
		if !propose {
			continue
		}
		in := d.in[i][:0]
		for p := from; p < end; p++ {
			if p < s.Pos {
				in = append(in, s.History[p])
			} else {
				in = append(in, s.Tokens[p-s.Pos])
			}
		}
		in = append(in, r.Samples[i].Token)
		d.in[i] = in
		passes = max(passes, s.Propose)
		d.seqs = append(d.seqs, model.Seq{Tokens: in, Pos: from, BlockTable: s.BlockTable, LogitsFrom: len(in) - 1})
		d.rows = append(d.rows, i)
	}
	if err := d.forward(r); err != nil {
		return err
	}
	// Each further draft is one token per proposing sequence, after the
	// K/V its last pass wrote (r.DraftKV).
	for j := 1; j < passes; j++ {
		d.seqs, d.rows = d.seqs[:0], d.rows[:0]
		for i := range b.Seqs {
			s := &b.Seqs[i]
			if j >= s.Propose || len(d.drafts[i]) != j {
				continue
			}
			pos := r.DraftKV[i]
			if pos >= len(s.BlockTable)*d.runner.KV.BlockSize {
				continue // no K/V room for it: fewer drafts
			}
			d.in[i] = append(d.in[i][:0], d.drafts[i][j-1])
			d.seqs = append(d.seqs, model.Seq{Tokens: d.in[i], Pos: pos, BlockTable: s.BlockTable})
			d.rows = append(d.rows, i)
		}
		if len(d.seqs) == 0 {
			break
		}
		if err := d.forward(r); err != nil {
			return err
		}
	}
	for i := range b.Seqs {
		if len(d.drafts[i]) > 0 {
			r.Drafts[i] = d.drafts[i]
		}
	}
	return nil
}

// forward runs the draft over d.seqs and appends each one's greedy
// draft; r.DraftKV follows the K/V written.
func (d *drafter) forward(r *engine.StepResult) error {
	if len(d.seqs) == 0 {
		return nil
	}
	if err := d.runner.Forward(d.seqs); err != nil {
		return fmt.Errorf("draft: %w", err)
	}
	d.passes++
	V := d.runner.W.Vocab
	for k, ms := range d.seqs { // one logits row each: its last token's
		i := d.rows[k]
		d.tokens += float64(len(ms.Tokens))
		r.DraftKV[i] = ms.Pos + len(ms.Tokens)
		d.drafts[i] = append(d.drafts[i], sampling.Argmax(d.runner.Logits[k*V:(k+1)*V]))
	}
	return nil
}

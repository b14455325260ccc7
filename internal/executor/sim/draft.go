package sim

import (
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// A draft model on the simulated GPU, as vLLM's draft_model method runs
// it: in the step that verifies a sequence's drafts, after the target's
// pass, the draft runs one pass over the tokens it has no K/V for yet (the
// drafts accepted and the token sampled after them; a prompt chunk's
// tokens) and proposes the first draft, then one single-token pass for
// each further draft. Its passes are priced with its own profile on the
// same GPUs and add to the step; its weights and K/V share the GPU's
// memory with the target's.
//
// The simulator has one fake language model, so the draft's tokens are
// that model's own samples along the draft path, and how many of them
// stand is synthetic acceptance's (the rates of --speculative-config, or
// fitted from a real run's counters): a draft drawn from the target's
// own distribution would pass rejection sampling every time.
type draftModel struct {
	cost costmodel.Model // the draft's profile, at its tensor parallelism
	// share turns the draft's per-GPU work into the target's GPUs'
	// average: its TP over the target's.
	share float64
	// maxLen is --speculative-config's max_model_len (0: the profile's).
	maxLen int

	pass   []costmodel.Seq // one pass, priced
	ends   []int           // each sequence's context with draft K/V after the step
	drafts [][]int         // each sequence's drafts, handed to the engine
	path   []int           // a sequence's context along its drafts
	one    engine.SeqBatch
	res    sampling.Result
}

// newDraft builds the draft of sp for target on hw at the target's tp,
// refusing by key what the simulator cannot run.
func newDraft(sp *speculative.Config, hw profiles.Hardware, target *profiles.Model, tp int) (*draftModel, error) {
	m, err := profiles.LookupModel(sp.Model)
	if err != nil {
		return nil, &speculative.Error{Key: "model", Msg: fmt.Sprintf("%q: on the simulator the draft is a model profile: %s, or its Hugging Face name",
			sp.Model, strings.Join(profiles.ModelNames(), ", "))}
	}
	if m.Vocab != target.Vocab {
		return nil, &speculative.Error{Key: "model", Msg: fmt.Sprintf("%s has %d token ids and the target %s has %d: "+
			"a draft must share the target's vocabulary (vLLM's rule)", m.Name, m.Vocab, target.Name, target.Vocab)}
	}
	if sp.RejectionSampleMethod != speculative.RejectSynthetic {
		return nil, &speculative.Error{Key: "rejection_sample_method", Msg: `a draft model on the simulator needs "synthetic" ` +
			"(synthetic_acceptance_rates or synthetic_acceptance_length, or --spec-acceptance-from a real run's metrics): " +
			"the simulator has one fake language model, and a draft drawn from it would pass every verification"}
	}
	dtp := sp.DraftTensorParallelSize
	if dtp == 0 {
		dtp = tp // vLLM's default: the target's
	}
	if err := m.CheckTP(dtp); err != nil {
		return nil, &speculative.Error{Key: "draft_tensor_parallel_size", Msg: err.Error()}
	}
	if sp.DraftKVCacheDtype != "" {
		return nil, &speculative.Error{Key: "kv_cache_dtype", Msg: fmt.Sprintf("%q: the simulated GPU keeps the draft's K/V in its model's dtype (auto)", sp.DraftKVCacheDtype)}
	}
	if sp.DraftMaxModelLen > m.MaxPosition {
		return nil, &speculative.Error{Key: "max_model_len", Msg: fmt.Sprintf("%d is past %s's %d positions", sp.DraftMaxModelLen, m.Name, m.MaxPosition)}
	}
	return &draftModel{cost: costmodel.Model{HW: hw, Model: m, TP: dtp}, share: float64(dtp) / float64(tp), maxLen: sp.DraftMaxModelLen}, nil
}

// step runs the draft for the batch just verified: for every sequence
// that proposes (SeqBatch.Propose), its drafts in r.Drafts, and for those
// and the prompt chunks that sample nothing the draft K/V computed
// (r.DraftKV). A sequence that samples without proposing (its drafting
// paused) leaves its draft K/V for the step that proposes again. It
// returns the price of the draft's passes, their work averaged over the
// target's GPUs.
func (d *draftModel) step(e *Executor, b *engine.Batch, r *engine.StepResult) (costmodel.Cost, int, error) {
	n := len(b.Seqs)
	if len(r.Drafts) < n {
		r.Drafts = make([][]int, n)
	}
	if len(r.DraftKV) < n {
		r.DraftKV = make([]int, n)
		for i := range b.Seqs {
			r.DraftKV[i] = b.Seqs[i].DraftKV
		}
	}
	if len(d.ends) < n {
		d.ends = make([]int, n)
		d.drafts = append(d.drafts, make([][]int, n-len(d.drafts))...)
	}
	// The first pass: every position without draft K/V, sampling the
	// first draft where one is proposed.
	d.pass = d.pass[:0]
	most := 0
	for i := range b.Seqs {
		s := &b.Seqs[i]
		d.ends[i] = 0
		if s.Embed || s.Constraint != nil || len(s.Tokens) == 0 || (s.Sample && s.Propose == 0) {
			continue
		}
		end := s.Pos + len(s.Tokens)
		if len(s.Draft) > 0 {
			end -= len(s.Draft) - len(r.Accepted[i])
		}
		if s.Propose > 0 {
			end++ // the token sampled after them
		}
		if end <= s.DraftKV {
			continue
		}
		d.ends[i] = end
		d.add(s, end-s.DraftKV, s.DraftKV, s.Propose > 0)
		r.DraftKV[i] = end
		if s.Propose > 0 {
			most = max(most, s.Propose)
			if err := d.propose(e, i, s, r, end); err != nil {
				return costmodel.Cost{}, 0, err
			}
		}
	}
	if len(d.pass) == 0 {
		return costmodel.Cost{}, 0, nil
	}
	total := d.price()
	passes := 1
	// One single-token pass per further draft, over the sequences that
	// propose that many.
	for j := 1; j < most; j++ {
		d.pass = d.pass[:0]
		for i := range b.Seqs {
			if s := &b.Seqs[i]; d.ends[i] > 0 && s.Propose > j {
				d.add(s, 1, d.ends[i]+j-1, true)
			}
		}
		c := d.price()
		total.Duration += c.Duration
		total.FLOPs += c.FLOPs
		total.ReadBytes += c.ReadBytes
		total.WriteBytes += c.WriteBytes
		passes++
	}
	return total, passes, nil
}

// add puts n tokens of s from pos into the pass being priced.
func (d *draftModel) add(s *engine.SeqBatch, n, pos int, sample bool) {
	d.pass = append(d.pass, costmodel.Seq{Tokens: n, Pos: pos, NumPrompt: s.NumPrompt, Sample: sample})
}

// price is the pass's cost, its work averaged over the target's GPUs.
func (d *draftModel) price() costmodel.Cost {
	c := d.cost.Step(d.pass)
	c.FLOPs *= d.share
	c.ReadBytes *= d.share
	c.WriteBytes *= d.share
	return c
}

// propose draws the i'th sequence's s.Propose drafts of the positions
// from end: with PlainTokens the words of those positions (what plain
// decoding puts there), else the fake language model's samples along the
// draft path, with the sequence's parameters and random source.
func (d *draftModel) propose(e *Executor, i int, s *engine.SeqBatch, r *engine.StepResult, end int) error {
	out := d.drafts[i][:0]
	if e.plain {
		for j := range s.Propose {
			out = append(out, e.plainToken(end+j))
		}
	} else {
		h := s.History
		if len(h) == 0 {
			h = s.Tokens[:len(s.Tokens)-len(s.Draft)]
		}
		d.path = append(d.path[:0], h...)
		if i < len(r.Accepted) {
			for _, a := range r.Accepted[i] {
				d.path = append(d.path, a.Token)
			}
		}
		d.path = append(d.path, r.Samples[i].Token)
		d.one = engine.SeqBatch{NumPrompt: s.NumPrompt, Params: s.Params, RNG: s.RNG}
		for range s.Propose {
			d.one.History = d.path
			if err := e.sample(&d.one, &d.res); err != nil {
				return err
			}
			out = append(out, d.res.Token)
			d.path = append(d.path, d.res.Token)
		}
	}
	d.drafts[i] = out
	r.Drafts[i] = out
	return nil
}

// memory is what the draft takes of the first GPU's memory: its
// weights there and its K/V per token (the GPU it always runs on, and the
// one with the least room left).
func (d *draftModel) memory() (weights float64, kvPerToken int64) {
	m := &d.cost.Model
	return m.WeightBytes() / float64(d.cost.TP), m.KVBytesPerToken(d.cost.TP)
}

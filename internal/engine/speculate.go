package engine

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/sched"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Speculative decoding, as vLLM's V1 engine runs it: after a step, each
// decoding sequence gets up to num_speculative_tokens drafts (prompt
// lookup here, on the engine goroutine; a draft model in the executor,
// during the step); the next step computes the sequence's last token and
// its drafts in one pass over the k+1 positions, the executor verifies
// them (Sampler.Verify) and advance appends the accepted ones and the
// token after them, rolling the K/V of the rejected ones back.

// verified records sc's verification: the rejected drafts' positions
// rolled back, the counters vLLM's SpecDecodingStats keeps, and the
// sequence's back-off. The accepted drafts must be the drafts: their K/V
// were computed from them.
func (e *Engine) verified(rs *reqState, sc sched.Scheduled, accepted []sampling.Result) error {
	q := sc.Seq
	a := len(accepted)
	if a > sc.NumSpec {
		return fmt.Errorf("the executor accepted %d of %d drafts", a, sc.NumSpec)
	}
	for j := range accepted {
		if accepted[j].Token != q.Spec[j] {
			return fmt.Errorf("accepted draft %d is token %d, but the draft was %d", j, accepted[j].Token, q.Spec[j])
		}
	}
	e.sched.Rejected(q, sc.NumSpec-a)
	ev := &e.ev
	ev.SpecDrafts++
	ev.SpecDraftTokens += sc.NumSpec
	ev.SpecAccepted += a
	for j := range a {
		e.perPos[j]++
	}
	rs.backoff.Observe(sc.NumSpec, a)
	rs.draftKV = min(rs.draftKV, q.NumComputed)
	return nil
}

// drafting reports whether the engine has a draft model (the executor
// drafts) rather than prompt lookup (the engine does).
func (e *Engine) drafting() bool { return e.cfg.Speculative.Method == speculative.MethodDraftModel }

// mayDraft reports whether rs may have drafts verified once it has
// outputs outputs: not an embedding or a structured output (whose
// matcher cannot take back rejected tokens), and not while min_tokens
// holds EOS and the stop tokens back (their mask would differ by
// position).
func (e *Engine) mayDraft(rs *reqState, outputs int) bool {
	sp := &e.cfg.Speculative
	if !sp.Enabled() || rs.req.Embed || rs.req.Constraint != nil || outputs < rs.req.Params.MinTokens {
		return false
	}
	return sp.DraftMaxModelLen == 0 || len(rs.seq.Tokens)+sp.NumSpeculativeTokens < sp.DraftMaxModelLen
}

// proposeCount is how many drafts the executor's draft model should
// propose in the step about to run for sc (0 without a draft model, or
// for a step that samples nothing).
func (e *Engine) proposeCount(rs *reqState, sc sched.Scheduled) int {
	if !e.drafting() || !sc.Sample || !e.mayDraft(rs, rs.numOutput+1) {
		return 0
	}
	return rs.backoff.Next(e.cfg.Speculative.NumSpeculativeTokens)
}

// propose sets the drafts of every sequence of the step just run that
// goes on decoding: the draft model's, or by prompt lookup over its tokens;
// never past the sequence's end.
func (e *Engine) propose() {
	if !e.cfg.Speculative.Enabled() {
		return
	}
	k := e.cfg.Speculative.NumSpeculativeTokens
	for i, sc := range e.plan.Seqs {
		q := sc.Seq
		rs := e.slots[q.ID]
		if rs == nil || &rs.seq != q || q.Status != sched.Running || rs.req.Embed {
			continue // finished this step
		}
		q.Spec = q.Spec[:0]
		var drafts []int
		if e.drafting() {
			rs.draftKV = e.result.DraftKV[i]
			e.sched.Drafted(q, rs.draftKV)
			drafts = e.result.Drafts[i]
		} else if sc.Sample && e.mayDraft(rs, rs.numOutput) {
			n := rs.backoff.Next(k)
			if e.cfg.Speculative.RejectionSampleMethod == speculative.RejectSynthetic {
				// Synthetic acceptance (the simulator's) drafts every
				// step, as a draft model would: the rates, not the
				// drafts, decide what is accepted, and a simulated load
				// rarely repeats an n-gram. The drafts repeat the last
				// token.
				drafts = q.Spec
				for range n {
					drafts = append(drafts, q.Tokens[len(q.Tokens)-1])
				}
			} else {
				drafts = e.ngram.Propose(q.Spec, q.Tokens, n)
			}
		}
		// The verify step yields up to len(drafts)+1 tokens: none past
		// max_tokens or the context (maxLen).
		room := rs.maxLen - len(q.Tokens) - 1
		q.Spec = append(q.Spec, drafts[:max(0, min(len(drafts), room, k))]...)
	}
}

package sampling

import (
	"math/rand/v2"
)

// Verify checks a sequence's draft tokens against the target model's
// logits for them, as vLLM's rejection sampler does with a proposer that
// offers one token per position (its n-gram and greedy draft models):
// rows holds len(drafts)+1 rows of vocab logits, row j scoring the token
// after drafts[:j]. Draft j is accepted, greedily, when it is the
// argmax; when sampling, with the probability the target gives it (after
// penalties, temperature, top-k, top-p and min-p, exactly as Sample would
// draw it). The first rejected position takes a token from the target's
// distribution without the draft (the "recovered" token); when every
// draft is accepted, the last row gives one more (the "bonus" token). So
// each output token is distributed as Sample would have drawn it one
// step at a time, and greedy output is token for token the same.
//
// history is the sequence so far without the drafts (penalties see the
// accepted drafts as outputs). out needs len(drafts)+1 entries: out[:a]
// are the a accepted drafts, out[a] the final token; Verify returns a.
// Logprobs, when asked for, are of each row's raw logits, as Sample's.
func (s *Sampler) Verify(rows []float32, vocab int, drafts []int, p *Params, rng *rand.Rand, history []int, numPrompt int, out []Result) int {
	hist := history
	penalised := p.RepetitionPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0
	if penalised {
		s.hist = append(s.hist[:0], history...)
		hist = s.hist
	}
	for j, d := range drafts {
		logits := rows[j*vocab : (j+1)*vocab]
		s.work = append(s.work[:0], logits...)
		w := s.work
		s.applyPenalties(w, p, hist, numPrompt)
		tok, ok := d, true
		switch {
		case d < 0 || d >= vocab:
			// Not a token of this model (a draft model with a larger
			// vocabulary): rejected, and the target's own choice stands.
			ok = false
			if p.Greedy() {
				tok = Argmax(w)
			} else {
				cand, sum := s.weigh(w, p)
				tok = draw(w, cand, sum, rng, -1)
			}
		case p.Greedy():
			tok = Argmax(w)
			ok = tok == d
		default:
			cand, sum := s.weigh(w, p)
			wd := weight(w, cand, d)
			if rng.Float64()*sum >= wd {
				ok = false
				tok = draw(w, cand, sum-wd, rng, d)
			}
		}
		s.logprobs(logits, p, tok, &out[j])
		if !ok {
			return j
		}
		if penalised {
			s.hist = append(s.hist, d)
			hist = s.hist
		}
	}
	k := len(drafts)
	s.Sample(rows[k*vocab:(k+1)*vocab], p, rng, hist, numPrompt, &out[k])
	return k
}

// logprobs fills out with tok and, when p asks for them, its logprob and
// the top alternatives under the raw logits.
func (s *Sampler) logprobs(logits []float32, p *Params, tok int, out *Result) {
	out.Token = tok
	out.Top = out.Top[:0]
	if p.Logprobs < 0 {
		return
	}
	lse := logSumExp(logits)
	out.Logprob = logits[tok] - lse
	if p.Logprobs > 0 {
		s.idx = topIndices(s.idx[:0], logits, p.Logprobs)
		for _, id := range s.idx {
			out.Top = append(out.Top, TokenLogprob{Token: id, Logprob: logits[id] - lse})
		}
	}
}

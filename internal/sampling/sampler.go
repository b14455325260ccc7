package sampling

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// TokenLogprob is one token with its log-probability.
type TokenLogprob struct {
	Token   int
	Logprob float32
}

// Result is what one sampling call chose. Top is filled only when the params
// ask for logprobs; it reuses the caller's backing array.
type Result struct {
	Token   int
	Logprob float32 // of the chosen token under the model's raw distribution
	Top     []TokenLogprob
}

// NewRNG returns the generator for one sequence. A request with a seed gets the
// same tokens every time; without one, the engine passes a fresh seed.
func NewRNG(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// Sampler holds scratch space so that sampling allocates nothing in steady
// state. It is not safe for concurrent use: one per executor worker.
type Sampler struct {
	work  []float32
	idx   []int
	count []int32
	hist  []int // Verify's history with the accepted drafts
}

// Sample picks the next token from logits (indexed by token id). history holds
// the sequence's prompt followed by its outputs; numPrompt says where outputs
// start. Logprobs are those of the raw logits, before penalties and
// temperature, as vLLM reports by default.
func (s *Sampler) Sample(logits []float32, p *Params, rng *rand.Rand, history []int, numPrompt int, out *Result) {
	s.work = append(s.work[:0], logits...)
	w := s.work
	s.applyPenalties(w, p, history, numPrompt)

	tok := 0
	switch {
	case !sanitize(w):
		// Nothing can be drawn (every token masked, every logit NaN):
		// token 0, as Argmax and the GPU's sampling kernel give, never a
		// draw from an empty candidate list.
	case p.Greedy():
		tok = Argmax(w)
	default:
		tok = s.sampleRandom(w, p, rng)
	}
	s.logprobs(logits, p, tok, out)
}

// sanitize makes w drawable: a NaN logit becomes -inf (masked), +inf the
// largest float (so that subtracting the maximum stays finite). It reports
// whether any token is left above -inf.
func sanitize(w []float32) bool {
	ok := false
	for i, v := range w {
		switch {
		case v != v:
			w[i] = float32(math.Inf(-1))
		case v > math.MaxFloat32:
			w[i] = math.MaxFloat32
			ok = true
		case v > float32(math.Inf(-1)):
			ok = true
		}
	}
	return ok
}

// applyPenalties applies vLLM's repetition penalty (over prompt and outputs)
// and the OpenAI presence and frequency penalties (over outputs only).
func (s *Sampler) applyPenalties(w []float32, p *Params, history []int, numPrompt int) {
	if p.RepetitionPenalty == 1 && p.PresencePenalty == 0 && p.FrequencyPenalty == 0 {
		return
	}
	if len(s.count) < len(w) {
		s.count = make([]int32, len(w))
	}
	numPrompt = min(numPrompt, len(history))
	// count[t] holds 1 for a prompt-only token and 1+n for n output occurrences,
	// so one pass over the touched tokens applies every penalty exactly once.
	for i, t := range history {
		if t < 0 || t >= len(w) {
			continue
		}
		if s.count[t] == 0 {
			s.count[t] = 1
		}
		if i >= numPrompt {
			s.count[t]++
		}
	}
	rp := float32(p.RepetitionPenalty)
	for _, t := range history {
		if t < 0 || t >= len(w) || s.count[t] == 0 {
			continue
		}
		if rp != 1 {
			if w[t] > 0 {
				w[t] /= rp
			} else {
				w[t] *= rp
			}
		}
		if n := s.count[t] - 1; n > 0 {
			w[t] -= float32(p.PresencePenalty) + float32(p.FrequencyPenalty)*float32(n)
		}
		s.count[t] = 0
	}
}

// sampleRandom draws from w's distribution under p's temperature, top-k,
// top-p and min-p.
func (s *Sampler) sampleRandom(w []float32, p *Params, rng *rand.Rand) int {
	cand, sum := s.weigh(w, p)
	return draw(w, cand, sum, rng, -1)
}

// weigh turns the penalised logits w into unnormalised sampling weights
// under p: it returns the candidates (nil when every token is one, the
// API's default: no top-k, top-p or min-p) and their total. With
// candidates, only their entries of w are weights.
func (s *Sampler) weigh(w []float32, p *Params) (cand []int, sum float64) {
	inv := float32(1 / p.Temperature)
	if (p.TopK <= 0 || p.TopK >= len(w)) && p.MinP <= 0 && p.TopP >= 1 {
		maxv := float32(math.Inf(-1))
		for _, v := range w {
			maxv = max(maxv, v)
		}
		tensor.ExpShift(w, maxv, inv)
		for _, e := range w {
			sum += float64(e)
		}
		return nil, sum
	}
	s.idx = s.idx[:0]
	if p.TopK > 0 && p.TopK < len(w) {
		s.idx = topIndices(s.idx, w, p.TopK)
	} else {
		for i := range w {
			s.idx = append(s.idx, i)
		}
	}
	cand = s.idx
	maxv := float32(math.Inf(-1))
	for _, i := range cand {
		maxv = max(maxv, w[i])
	}
	// Probabilities (unnormalised) overwrite the logits of the candidates.
	for _, i := range cand {
		e := tensor.Expf((w[i] - maxv) * inv)
		w[i] = e
		sum += float64(e)
	}
	if p.MinP > 0 {
		// The most likely candidate has weight exp(0) = 1.
		keep := cand[:0]
		sum = 0
		for _, i := range cand {
			if w[i] >= float32(p.MinP) {
				keep = append(keep, i)
				sum += float64(w[i])
			}
		}
		cand = keep
	}
	if p.TopP < 1 {
		slices.SortFunc(cand, func(a, b int) int {
			switch {
			case w[a] > w[b]:
				return -1
			case w[a] < w[b]:
				return 1
			}
			return a - b
		})
		limit := p.TopP * sum
		var acc float64
		for n, i := range cand {
			acc += float64(w[i])
			if acc >= limit {
				cand = cand[:n+1]
				sum = acc
				break
			}
		}
	}
	return cand, sum
}

// weight is token t's weight after weigh (0 when it is no candidate).
func weight(w []float32, cand []int, t int) float64 {
	if cand == nil {
		return float64(w[t])
	}
	if slices.Contains(cand, t) {
		return float64(w[t])
	}
	return 0
}

// draw picks a token in proportion to the weights, leaving out skip (-1:
// none; its weight must then be subtracted from sum by the caller). It
// draws one uniform number from rng.
func draw(w []float32, cand []int, sum float64, rng *rand.Rand, skip int) int {
	r := rng.Float64() * sum
	if cand == nil {
		last := len(w) - 1
		for i, e := range w {
			if i == skip {
				continue
			}
			last = i
			r -= float64(e)
			if r < 0 {
				return i
			}
		}
		return last // rounding left r ≥ 0
	}
	last := cand[len(cand)-1]
	for _, i := range cand {
		if i == skip {
			continue
		}
		last = i
		r -= float64(w[i])
		if r < 0 {
			return i
		}
	}
	return last
}

// Argmax is the first largest value's index: greedy decoding's choice
// (and a draft model's, as vLLM's draft proposers take it).
func Argmax(w []float32) int {
	best := 0
	for i, v := range w {
		if v > w[best] {
			best = i
		}
	}
	return best
}

func logSumExp(w []float32) float32 {
	maxv := float32(math.Inf(-1))
	for _, v := range w {
		maxv = max(maxv, v)
	}
	var sum float64
	for _, v := range w {
		sum += math.Exp(float64(v - maxv))
	}
	return maxv + float32(math.Log(sum))
}

// topIndices appends the indices of the k largest values of w, largest first
// (ties broken by lower index), to dst.
func topIndices(dst []int, w []float32, k int) []int {
	k = min(k, len(w))
	for i, v := range w {
		if len(dst) == k && v <= w[dst[k-1]] {
			continue
		}
		// Insertion into a small sorted list: k is at most a few dozen
		// for logprobs, and top-k sampling uses small k in practice.
		pos := len(dst)
		for pos > 0 && w[dst[pos-1]] < v {
			pos--
		}
		if len(dst) < k {
			dst = append(dst, 0)
		}
		copy(dst[pos+1:], dst[pos:len(dst)-1])
		dst[pos] = i
	}
	return dst
}

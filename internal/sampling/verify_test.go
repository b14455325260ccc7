package sampling

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// rowsOf builds k+1 rows of vocab logits from a seed.
func rowsOf(seed uint64, rows, vocab int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]float32, rows*vocab)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * 2)
	}
	return out
}

// TestVerifyGreedyIsDecoding: greedy verification yields exactly the
// tokens one-at-a-time greedy decoding picks over the same rows, whatever
// the drafts, penalties included.
func TestVerifyGreedyIsDecoding(t *testing.T) {
	const V, k = 16, 4
	rng := rand.New(rand.NewPCG(5, 5))
	var s, ref Sampler
	for trial := range 2000 {
		rows := rowsOf(uint64(trial), k+1, V)
		p := Defaults()
		p.Temperature = 0
		if trial%2 == 1 {
			p.RepetitionPenalty, p.PresencePenalty, p.FrequencyPenalty = 1.3, 0.5, 0.2
		}
		history := []int{1, 2, 3, 2}
		// The decoding the drafts should reproduce.
		var want []int
		h := slices.Clone(history)
		for j := range k + 1 {
			var r Result
			ref.Sample(rows[j*V:(j+1)*V], &p, nil, h, 2, &r)
			want = append(want, r.Token)
			h = append(h, r.Token)
		}
		// Drafts right up to a random point, then wrong.
		good := rng.IntN(k + 1)
		drafts := slices.Clone(want[:k])
		if good < k {
			drafts[good] = (drafts[good] + 1 + rng.IntN(V-1)) % V
		}
		out := make([]Result, k+1)
		a := s.Verify(rows, V, drafts, &p, nil, history, 2, out)
		if a != good {
			t.Fatalf("trial %d: accepted %d, want %d (drafts %v, decoding %v)", trial, a, good, drafts, want)
		}
		for j := range a + 1 {
			if out[j].Token != want[j] {
				t.Fatalf("trial %d: token %d is %d, decoding gives %d", trial, j, out[j].Token, want[j])
			}
		}
	}
}

// probs is an independent statement of what Sample draws from: softmax of
// logits/T over the top-k, then the smallest top-p set (ties by id).
func probs(logits []float32, p *Params) []float64 {
	V := len(logits)
	ids := make([]int, V)
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
	if p.TopK > 0 && p.TopK < V {
		ids = ids[:p.TopK]
	}
	w := make([]float64, V)
	var sum float64
	for _, i := range ids {
		w[i] = math.Exp(float64(logits[i]-logits[ids[0]]) / p.Temperature)
		sum += w[i]
	}
	if p.TopP < 1 {
		var acc float64
		for n, i := range ids {
			acc += w[i]
			if acc >= p.TopP*sum {
				for _, j := range ids[n+1:] {
					w[j] = 0
				}
				sum = acc
				break
			}
		}
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// chi2 is Pearson's statistic of counts against probabilities and its
// degrees of freedom (cells with an expected count of 0 must be empty).
func chi2(t *testing.T, counts []int, want []float64, n int) (float64, int) {
	t.Helper()
	var x float64
	df := -1
	for i, c := range counts {
		e := want[i] * float64(n)
		if e == 0 {
			if c != 0 {
				t.Fatalf("token %d drawn %d times with probability 0", i, c)
			}
			continue
		}
		x += (float64(c) - e) * (float64(c) - e) / e
		df++
	}
	return x, df
}

// chi2Critical is the 0.1% critical value of χ² for df degrees of
// freedom (Wilson–Hilferty): a fixed seed passes it or not, for good.
func chi2Critical(df int) float64 {
	const z = 3.090 // the normal's 99.9th percentile
	d := float64(df)
	c := 1 - 2/(9*d) + z*math.Sqrt(2/(9*d))
	return d * c * c * c
}

// TestVerifyPreservesTheDistribution: with drafts from any proposer, the
// first output token is distributed as Sample draws it, and the second,
// when the first draft is accepted, as Sample draws after it: a χ² test
// at 0.1% over 200,000 seeded trials for several sampling settings and
// draft sources.
func TestVerifyPreservesTheDistribution(t *testing.T) {
	const V, n = 12, 200000
	rows := rowsOf(42, 3, V)
	settings := []Params{
		{Temperature: 1, TopP: 1, RepetitionPenalty: 1, Logprobs: -1},
		{Temperature: 0.6, TopP: 1, RepetitionPenalty: 1, Logprobs: -1},
		{Temperature: 1.3, TopP: 1, TopK: 5, RepetitionPenalty: 1, Logprobs: -1},
		{Temperature: 0.9, TopP: 0.7, RepetitionPenalty: 1, Logprobs: 2},
	}
	for si, p := range settings {
		p0, p1 := probs(rows[:V], &p), probs(rows[V:2*V], &p)
		// Draft sources: the target's most likely token, its least likely
		// (often impossible under top-k/top-p), and a uniform draw.
		for _, source := range []string{"likely", "unlikely", "uniform"} {
			rng := NewRNG(int64(100*si + len(source)))
			src := rand.New(rand.NewPCG(uint64(si), 9))
			first := make([]int, V)
			second := make([]int, V)
			seconds := 0
			var s Sampler
			out := make([]Result, 3)
			for range n {
				var drafts [2]int
				switch source {
				case "likely":
					drafts = [2]int{argmax64(p0), argmax64(p1)}
				case "unlikely":
					drafts = [2]int{argmin(rows[:V]), argmin(rows[V : 2*V])}
				default:
					drafts = [2]int{src.IntN(V), src.IntN(V)}
				}
				a := s.Verify(rows, V, drafts[:], &p, rng, nil, 0, out)
				first[out[0].Token]++
				if a >= 1 {
					second[out[1].Token]++
					seconds++
				}
			}
			if x, df := chi2(t, first, p0, n); x > chi2Critical(df) {
				t.Errorf("setting %d, %s drafts: first token χ²=%.1f over %d df, past the 0.1%% value %.1f", si, source, x, df, chi2Critical(df))
			}
			if seconds > 1000 {
				if x, df := chi2(t, second, p1, seconds); x > chi2Critical(df) {
					t.Errorf("setting %d, %s drafts: second token χ²=%.1f over %d df (%d samples), past %.1f", si, source, x, df, seconds, chi2Critical(df))
				}
			}
		}
	}
}

func argmax64(p []float64) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

func argmin(w []float32) int {
	best := 0
	for i, v := range w {
		if v < w[best] {
			best = i
		}
	}
	return best
}

// TestVerifyAcceptanceRate: a draft is accepted with the probability the
// target gives it.
func TestVerifyAcceptanceRate(t *testing.T) {
	const V, n = 8, 100000
	rows := rowsOf(7, 2, V)
	p := Defaults()
	p0 := probs(rows[:V], &p)
	var s Sampler
	rng := NewRNG(3)
	out := make([]Result, 2)
	for d := range V {
		acc := 0
		for range n {
			acc += s.Verify(rows, V, []int{d}, &p, rng, nil, 0, out)
		}
		got := float64(acc) / n
		if se := math.Sqrt(p0[d] * (1 - p0[d]) / n); math.Abs(got-p0[d]) > 4*se+1e-9 {
			t.Errorf("draft %d accepted %.4f of the time, target probability %.4f", d, got, p0[d])
		}
	}
}

func TestVerifyLogprobs(t *testing.T) {
	const V = 6
	rows := rowsOf(11, 3, V)
	p := Defaults()
	p.Temperature, p.Logprobs = 0, 2
	var s Sampler
	out := make([]Result, 3)
	var r0 Result
	s.Sample(rows[:V], &p, nil, nil, 0, &r0)
	a := s.Verify(rows, V, []int{r0.Token, -1}, &p, nil, nil, 0, out)
	if a != 1 || out[0].Token != r0.Token || out[0].Logprob != r0.Logprob || len(out[0].Top) != 2 || len(out[1].Top) != 2 {
		t.Errorf("accepted %d, results %+v; Sample gave %+v", a, out[:2], r0)
	}
}

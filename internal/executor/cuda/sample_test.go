package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// rowParams is one row of the sampling kernel's parameters.
type rowParams struct {
	temp, topp, minp float32
	topk             int32
	masked           bool
}

// runSample samples m rows of logits on the GPU with the given
// parameters and uniform numbers; mask (words per row) applies to rows
// marked masked.
func runSample(t *testing.T, d *Device, logits []float32, V int, ps []rowParams, us []float32, mask []uint64) ([]int32, []float32) {
	m := len(ps)
	temp, topp, minp, topk, maskRow := make([]float32, m), make([]float32, m), make([]float32, m), make([]int32, m), make([]int32, m)
	for i, p := range ps {
		temp[i], topp[i], minp[i], topk[i], maskRow[i] = p.temp, p.topp, p.minp, p.topk, -1
		if p.masked {
			maskRow[i] = 0
		}
	}
	words := (V + 63) / 64
	pmask := d.testAlloc(t, int64(8*max(words, 1)))
	if mask != nil {
		d.run(t, func() error { return cuda.CopyIn(d.stream, pmask, mask) })
	}
	a := sampleArgs{logits: d.put(t, cuda.F32, logits), vocab: V, m: m, temp: d.put(t, cuda.F32, temp), topk: putInts(t, d, topk),
		topp: d.put(t, cuda.F32, topp), minp: d.put(t, cuda.F32, minp), u: d.put(t, cuda.F32, us), maskRow: putInts(t, d, maskRow),
		masks: pmask, words: words, tokens: d.testAlloc(t, int64(4*m)), logprobs: d.testAlloc(t, int64(4*m))}
	d.run(t, func() error { return d.sample(a) })
	toks := make([]int32, m)
	d.run(t, func() error { return cuda.CopyOut(d.stream, toks, a.tokens) })
	return toks, d.get(t, cuda.F32, a.logprobs, m)
}

func TestKernelSampleGreedyAndMask(t *testing.T) {
	d := openTestDevice(t)
	const V = 151936 // Qwen2.5's vocabulary
	r := rand.New(rand.NewPCG(11, 12))
	row := randoms(r, V, 3)
	row[70000], row[3] = 20, 20 // a tie: the lower id wins, as Argmax
	mask := make([]uint64, (V+63)/64)
	for i := range V {
		if i%7 == 0 { // a constraint allowing every seventh token
			mask[i/64] |= 1 << (i % 64)
		}
	}
	logits := append(append([]float32(nil), row...), row...)
	toks, lps := runSample(t, d, logits, V, []rowParams{{topp: 1}, {topp: 1, masked: true}}, []float32{0, 0}, mask)
	masked := append([]float32(nil), row...)
	for i := range masked {
		if i%7 != 0 {
			masked[i] = float32(math.Inf(-1))
		}
	}
	for i, want := range []int{sampling.Argmax(row), sampling.Argmax(masked)} {
		if int(toks[i]) != want {
			t.Errorf("row %d: greedy chose %d, want %d (the CPU's Argmax)", i, toks[i], want)
		}
		src := [][]float32{row, masked}[i]
		wantLP := src[want] - lse(src)
		if math.Abs(float64(lps[i]-wantLP)) > 1e-4 {
			t.Errorf("row %d: logprob %v, want %v", i, lps[i], wantLP)
		}
	}
	t.Logf("greedy over %d tokens: %d (tie at 3 and 70000), masked to every 7th: %d", V, toks[0], toks[1])
}

func lse(w []float32) float32 {
	m := slices.Max(w)
	var s float64
	for _, v := range w {
		s += math.Exp(float64(v - m))
	}
	return m + float32(math.Log(s))
}

// cpuProbs is the CPU sampler's distribution for p over logits: its
// weigh() rules (top-k, then min-p, then top-p over weights sorted
// descending), computed in float64.
func cpuProbs(logits []float32, p rowParams) []float64 {
	V := len(logits)
	idx := make([]int, V)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	if p.topk > 0 && int(p.topk) < V {
		idx = idx[:p.topk]
	}
	mx := float64(logits[idx[0]])
	w := make([]float64, V)
	var sum float64
	keep := idx[:0:0]
	for _, i := range idx {
		w[i] = math.Exp((float64(logits[i]) - mx) / float64(p.temp))
		if w[i] >= float64(p.minp) {
			keep = append(keep, i)
			sum += w[i]
		}
	}
	if p.topp < 1 {
		var acc float64
		for n, i := range keep {
			acc += w[i]
			if acc >= float64(p.topp)*sum {
				keep = keep[:n+1]
				break
			}
		}
	}
	probs := make([]float64, V)
	sum = 0
	for _, i := range keep {
		sum += w[i]
	}
	for _, i := range keep {
		probs[i] = w[i] / sum
	}
	return probs
}

// TestKernelSampleDistribution draws many times per parameter set and
// checks that every draw is one the CPU sampler could make and that the
// frequencies follow its probabilities.
func TestKernelSampleDistribution(t *testing.T) {
	d := openTestDevice(t)
	const V, draws = 512, 16384
	r := rand.New(rand.NewPCG(13, 14))
	row := randoms(r, V, 2)
	for _, p := range []rowParams{
		{temp: 1, topp: 1},
		{temp: 0.7, topp: 1, topk: 20},
		{temp: 1.3, topp: 0.9},
		{temp: 1, topp: 0.8, topk: 50, minp: 0.05},
	} {
		logits := make([]float32, 0, V*draws)
		ps, us := make([]rowParams, draws), make([]float32, draws)
		for i := range draws {
			logits = append(logits, row...)
			ps[i], us[i] = p, r.Float32()
		}
		toks, _ := runSample(t, d, logits, V, ps, us, nil)
		probs := cpuProbs(row, p)
		count := make([]int, V)
		for _, tok := range toks {
			if probs[tok] == 0 {
				t.Errorf("%+v: drew %d, which the CPU sampler never draws", p, tok)
			}
			count[tok]++
		}
		// Total variation distance against the CPU's distribution, and
		// what sampling noise alone gives on average (each count's mean
		// absolute deviation); allow twice that and a little.
		var tv, noise float64
		for i := range V {
			tv += math.Abs(float64(count[i])/draws - probs[i])
			noise += math.Sqrt(2 * probs[i] * (1 - probs[i]) / (math.Pi * draws))
		}
		tv, noise = tv/2, noise/2
		t.Logf("%+v: total variation from the CPU sampler's distribution %.3f over %d draws (noise alone: %.3f)", p, tv, draws, noise)
		if tv > 2*noise+0.01 {
			t.Errorf("%+v: total variation %.3f from the CPU sampler's distribution, want ≤ %.3f", p, tv, 2*noise+0.01)
		}
	}
}

// TestKernelSampleEdgeRows is TestSampleKernelEdgeRowsOnHost on the GPU:
// rows with every token masked and every logit NaN sample token 0 (the
// CPU's Argmax), greedy or not, with the rows around them unharmed; a
// read past the row would be a sticky fault that fails the copy back.
func TestKernelSampleEdgeRows(t *testing.T) {
	d := openTestDevice(t)
	const V = 151936
	r := rand.New(rand.NewPCG(21, 22))
	row := randoms(r, V, 3)
	nans := filled(V, nan32)
	logits := slices.Concat(row, row, nans, row, nans, row)
	ps := []rowParams{{topp: 1}, {topp: 1, masked: true}, {topp: 1}, {temp: 0.8, topk: 40, topp: 0.9, minp: 0.1, masked: true},
		{temp: 1, topp: 1}, {temp: 1, topp: 1}}
	toks, lps := runSample(t, d, logits, V, ps, []float32{0, 0, 0, 0.7, 0.4, 0.3}, make([]uint64, (V+63)/64))
	for i, want := range []int{sampling.Argmax(row), 0, 0, 0, 0} {
		if int(toks[i]) != want {
			t.Errorf("row %d: token %d, want %d", i, toks[i], want)
		}
	}
	if toks[5] < 0 || toks[5] >= V {
		t.Errorf("the row after them drew %d", toks[5])
	}
	if !math.IsInf(float64(lps[1]), -1) || !math.IsNaN(float64(lps[2])) {
		t.Errorf("logprobs %v: want -inf for the masked row, NaN for the NaN one", lps[:3])
	}
	t.Logf("tokens %v, logprobs %v", toks, lps)
}

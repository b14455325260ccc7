package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// hostRow is one row of the sampling kernel's inputs for the host
// simulation; mask nil: no mask.
type hostRow struct {
	logits           []float32
	temp, topp, minp float32
	topk             int
	u                float32
	mask             []uint64
}

// sampleOnHost runs the sample kernel's CUDA C on the CPU over rows of V.
func sampleOnHost(t *testing.T, V int, rows []hostRow) ([]int32, []float32) {
	t.Helper()
	words := (V + 63) / 64
	m := len(rows)
	var in simIn
	in.ints(V, m, words)
	for _, r := range rows {
		in.f32s(r.logits)
	}
	col := func(f func(r hostRow) float32) []float32 {
		v := make([]float32, m)
		for i, r := range rows {
			v[i] = f(r)
		}
		return v
	}
	topk, maskrow := make([]int32, m), make([]int32, m)
	masks := make([]uint64, m*words)
	for i, r := range rows {
		topk[i], maskrow[i] = int32(r.topk), -1
		if r.mask != nil {
			maskrow[i] = int32(i)
			copy(masks[i*words:], r.mask)
		}
	}
	in.f32s(col(func(r hostRow) float32 { return r.temp })).i32s(topk)
	in.f32s(col(func(r hostRow) float32 { return r.topp })).f32s(col(func(r hostRow) float32 { return r.minp }))
	in.f32s(col(func(r hostRow) float32 { return r.u })).i32s(maskrow).u64s(masks)
	out := runSim(t, "sample", &in)
	return out.i32s(m), out.f32s(m)
}

// TestSampleKernelEdgeRowsOnHost: a row whose every token is masked (a
// grammar that allows only EOS while min_tokens bans it) or whose every
// logit is NaN samples token 0, as the CPU's Argmax does in the same
// case, greedy or not, and reads nothing outside the row: the kernel used
// to read logits[0x7fffffff], gigabytes past it (a sticky illegal-address
// fault on a GPU; here the guard pages stop it). Token 0 is outside the
// constraint's mask, so the engine finishes the request with an error
// naming it, as it does on the CPU. (The CPU's sampled path, unlike its
// greedy one, picks the last candidate of such a row, and panics under
// min_p: internal/sampling's to settle; any token outside the mask ends
// the request the same way.) The masked token's logprob is -inf (-9999
// in the API), the NaN row's NaN (also -9999). Ordinary rows around them
// still sample as before.
func TestSampleKernelEdgeRowsOnHost(t *testing.T) {
	const V = 1000 // not a multiple of the block: threads with no token
	r := rand.New(rand.NewPCG(3, 4))
	normal := randoms(r, V, 3)
	normal[700], normal[5] = 50, 50 // a tie: the lower id, as Argmax
	none := make([]uint64, (V+63)/64)
	evens := make([]uint64, (V+63)/64)
	for i := range evens {
		evens[i] = 0x5555555555555555
	}
	nans := filled(V, nan32)
	inf := float32(math.Inf(-1))
	rows := []hostRow{
		{logits: normal, topp: 1},
		{logits: normal, topp: 1, mask: none},                                           // every token masked, greedy
		{logits: nans, topp: 1},                                                         // every logit NaN, greedy
		{logits: normal, temp: 0.8, topp: 1, u: 0.5, mask: none},                        // masked, sampled
		{logits: normal, temp: 0.8, topk: 40, topp: 0.9, minp: 0.1, u: 0.9, mask: none}, // masked, every filter
		{logits: nans, temp: 1, topk: 5, topp: 0.5, u: 0.3},                             // NaN, sampled
		{logits: filled(V, inf), topp: 1},                                               // every logit -inf
		{logits: normal, topp: 1, mask: evens},
		{logits: normal, temp: 1, topk: 1000, topp: 1, u: 0.25},
	}
	toks, lps := sampleOnHost(t, V, rows)
	masked := append([]float32(nil), normal...)
	for i := 1; i < V; i += 2 {
		masked[i] = inf
	}
	want := []int{sampling.Argmax(normal), 0, 0, 0, 0, 0, 0, sampling.Argmax(masked), -1}
	for i, w := range want {
		if w >= 0 && int(toks[i]) != w {
			t.Errorf("row %d: token %d, want %d", i, toks[i], w)
		}
		if toks[i] < 0 || toks[i] >= V {
			t.Errorf("row %d: token %d outside the vocabulary", i, toks[i])
		}
	}
	if want[0] != 5 {
		t.Fatalf("the tie should go to id 5, Argmax says %d", want[0])
	}
	for i, src := range map[int][]float32{0: normal, 7: masked} {
		if d := math.Abs(float64(lps[i] - (src[toks[i]] - lse(src)))); d > 1e-3 {
			t.Errorf("row %d: logprob %v, want %v", i, lps[i], src[toks[i]]-lse(src))
		}
	}
	for _, i := range []int{1, 3, 4} {
		if !math.IsInf(float64(lps[i]), -1) {
			t.Errorf("row %d (every token masked): logprob %v, want -inf", i, lps[i])
		}
	}
	for _, i := range []int{2, 5} {
		if !math.IsNaN(float64(lps[i])) {
			t.Errorf("row %d (every logit NaN): logprob %v, want NaN", i, lps[i])
		}
	}
	t.Logf("tokens %v, logprobs %v", toks, lps)
}

package sampling

import (
	"errors"
	"math"
	"testing"
)

func TestValidateNamesTheParameter(t *testing.T) {
	cases := []struct {
		param string
		set   func(*Params)
	}{
		{"temperature", func(p *Params) { p.Temperature = -0.1 }},
		{"temperature", func(p *Params) { p.Temperature = math.NaN() }},
		{"top_p", func(p *Params) { p.TopP = 0 }},
		{"top_k", func(p *Params) { p.TopK = -2 }},
		{"min_p", func(p *Params) { p.MinP = 1.5 }},
		{"presence_penalty", func(p *Params) { p.PresencePenalty = 3 }},
		{"frequency_penalty", func(p *Params) { p.FrequencyPenalty = -3 }},
		{"repetition_penalty", func(p *Params) { p.RepetitionPenalty = 0 }},
		{"max_tokens", func(p *Params) { p.MaxTokens = 0 }},
		{"min_tokens", func(p *Params) { p.MinTokens = 17 }},
		{"logprobs", func(p *Params) { p.Logprobs = 21 }},
		{"stop_token_ids", func(p *Params) { p.StopTokenIDs = []int{-1} }},
	}
	for _, c := range cases {
		p := Defaults()
		c.set(&p)
		var pe *ParamError
		if err := p.Validate(); !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%s: got %v, want a ParamError for it", c.param, err)
		}
	}
	p := Defaults()
	if err := p.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestGreedyAndLogprobs(t *testing.T) {
	var s Sampler
	logits := []float32{1, 3, 2, 0}
	p := Defaults()
	p.Temperature = 0
	p.Logprobs = 2
	var r Result
	s.Sample(logits, &p, NewRNG(1), nil, 0, &r)
	if r.Token != 1 {
		t.Fatalf("greedy picked %d, want 1", r.Token)
	}
	lse := math.Log(math.Exp(1) + math.Exp(3) + math.Exp(2) + 1)
	if got, want := float64(r.Logprob), 3-lse; math.Abs(got-want) > 1e-5 {
		t.Errorf("logprob %v, want %v", got, want)
	}
	if len(r.Top) != 2 || r.Top[0].Token != 1 || r.Top[1].Token != 2 {
		t.Errorf("top logprobs %+v, want tokens 1 then 2", r.Top)
	}
}

// TestSamplingDistribution checks temperature, top-k, top-p and min-p
// against the distribution they define, over many seeded draws.
func TestSamplingDistribution(t *testing.T) {
	logits := []float32{2, 1, 0, -1, -8}
	cases := []struct {
		name    string
		set     func(*Params)
		allowed []bool
	}{
		{"temperature", func(p *Params) {}, []bool{true, true, true, true, true}},
		{"top_k", func(p *Params) { p.TopK = 2 }, []bool{true, true, false, false, false}},
		{"top_p", func(p *Params) { p.TopP = 0.8 }, []bool{true, true, false, false, false}},
		{"min_p", func(p *Params) { p.MinP = 0.3 }, []bool{true, true, false, false, false}},
	}
	for _, c := range cases {
		p := Defaults()
		c.set(&p)
		var s Sampler
		var r Result
		rng := NewRNG(42)
		counts := make([]int, len(logits))
		for range 20000 {
			s.Sample(logits, &p, rng, nil, 0, &r)
			counts[r.Token]++
		}
		for tok, n := range counts {
			if !c.allowed[tok] && n > 0 {
				t.Errorf("%s: token %d drawn %d times, should be excluded", c.name, tok, n)
			}
		}
		// The two most likely tokens keep their ratio e^1 under every filter.
		if ratio := float64(counts[0]) / float64(counts[1]); math.Abs(ratio-math.E) > 0.25 {
			t.Errorf("%s: p(0)/p(1) = %.2f, want about e", c.name, ratio)
		}
	}
}

func TestSeedIsDeterministic(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(i % 7)
	}
	draw := func(seed int64) []int {
		var s Sampler
		var r Result
		p := Defaults()
		rng := NewRNG(seed)
		var out []int
		for range 20 {
			s.Sample(logits, &p, rng, nil, 0, &r)
			out = append(out, r.Token)
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	same := func(x, y []int) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed gave different tokens")
	}
	if same(a, c) {
		t.Error("different seeds gave the same 20 tokens")
	}
}

func TestPenalties(t *testing.T) {
	var s Sampler
	var r Result
	logits := []float32{5, 4.5, 0}
	p := Defaults()
	p.Temperature = 0
	p.FrequencyPenalty = 1
	// Token 0 appeared once in the output: 5-1 = 4 < 4.5.
	s.Sample(logits, &p, NewRNG(1), []int{2, 0}, 1, &r)
	if r.Token != 1 {
		t.Errorf("frequency penalty: picked %d, want 1", r.Token)
	}
	// In the prompt only, it is not penalised by frequency.
	s.Sample(logits, &p, NewRNG(1), []int{0, 2}, 2, &r)
	if r.Token != 0 {
		t.Errorf("prompt tokens must not get the frequency penalty: picked %d", r.Token)
	}
	p = Defaults()
	p.Temperature = 0
	p.RepetitionPenalty = 1.2
	// Repetition penalty covers the prompt too: 5/1.2 < 4.5.
	s.Sample(logits, &p, NewRNG(1), []int{0, 0}, 2, &r)
	if r.Token != 1 {
		t.Errorf("repetition penalty: picked %d, want 1", r.Token)
	}
	if logits[0] != 5 {
		t.Error("Sample modified the caller's logits")
	}
}

// TestAllCandidatesPathDrawsAsGeneral: with no top-k, top-p or min-p the
// sampler skips its candidate list; the same seed must give the tokens the
// candidate-list path gives.
func TestAllCandidatesPathDrawsAsGeneral(t *testing.T) {
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 3
	}
	p := Defaults()
	p.Temperature = 0.7
	viaList := p
	viaList.MinP = 1e-30 // keeps every token, through the candidate list
	var s Sampler
	a, b := NewRNG(11), NewRNG(11)
	w := make([]float32, len(logits))
	for i := range 500 {
		copy(w, logits)
		fast := s.sampleRandom(w, &p, a)
		copy(w, logits)
		general := s.sampleRandom(w, &viaList, b)
		if fast != general {
			t.Fatalf("draw %d: all-candidates path %d, candidate list %d", i, fast, general)
		}
	}
}

// TestNothingToDraw: a row where every token is masked (-inf: a grammar
// that allows only EOS while min_tokens forbids it) or every logit is NaN
// samples token 0 under every sampling mode, as the GPU's sampling kernel
// does, and a NaN among real logits is never drawn. Before, min-p panicked
// on an empty candidate list and a plain draw took the last token.
func TestNothingToDraw(t *testing.T) {
	inf := float32(math.Inf(-1))
	nan := float32(math.NaN())
	rows := map[string][]float32{
		"all masked": {inf, inf, inf, inf, inf},
		"all NaN":    {nan, nan, nan, nan, nan},
		"mixed":      {nan, inf, nan, inf, nan},
	}
	modes := map[string]func(*Params){
		"greedy": func(p *Params) { p.Temperature = 0 },
		"plain":  func(p *Params) { p.Temperature = 1 },
		"min_p":  func(p *Params) { p.Temperature = 1; p.MinP = 0.1 },
		"top_k":  func(p *Params) { p.Temperature = 1; p.TopK = 2 },
		"top_p":  func(p *Params) { p.Temperature = 1; p.TopP = 0.5 },
	}
	var s Sampler
	for rn, row := range rows {
		for mn, set := range modes {
			p := Defaults()
			set(&p)
			var out Result
			s.Sample(row, &p, NewRNG(1), nil, 0, &out)
			if out.Token != 0 {
				t.Errorf("%s, %s: token %d, want 0", rn, mn, out.Token)
			}
		}
	}
	row := []float32{nan, 1, nan, 2, nan}
	for mn, set := range modes {
		p := Defaults()
		set(&p)
		for seed := range int64(50) {
			var out Result
			s.Sample(row, &p, NewRNG(seed), nil, 0, &out)
			if out.Token != 1 && out.Token != 3 {
				t.Fatalf("%s, seed %d: drew token %d, a NaN logit", mn, seed, out.Token)
			}
		}
	}
}

package speculative

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseNgramDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"method":"ngram","num_speculative_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Method != MethodNgram || c.NumSpeculativeTokens != 3 || c.PromptLookupMin != 5 || c.PromptLookupMax != 5 {
		t.Errorf("parsed %+v, want ngram k=3 lookup 5..5 (vLLM's defaults)", c)
	}
	if c.Lookahead() != 0 || c.RejectionSampleMethod != RejectStandard {
		t.Errorf("ngram: lookahead %d, rejection %q", c.Lookahead(), c.RejectionSampleMethod)
	}
	c, err = Parse([]byte(`{"model":"[ngram]","num_speculative_tokens":4,"prompt_lookup_max":3}`))
	if err != nil || c.Method != MethodNgram || c.PromptLookupMin != 3 || c.PromptLookupMax != 3 {
		t.Errorf("model [ngram] with only max: %+v, %v", c, err)
	}
	c, err = Parse([]byte(`{"model":"draft.gguf","num_speculative_tokens":2.0,"draft_tensor_parallel_size":1,"enforce_eager":true}`))
	if err != nil || c.Method != MethodDraftModel || c.Model != "draft.gguf" || c.Lookahead() != 2 {
		t.Errorf("a model infers draft_model: %+v, %v", c, err)
	}
}

// TestParseRefusesByName: every key glassbox cannot honour is an error
// that names it.
func TestParseRefusesByName(t *testing.T) {
	cases := []struct{ json, key, says string }{
		{`[]`, "", "JSON object"},
		{`null`, "", "JSON object"},
		{`{"method":"ngram","num_speculative_tokens":3} {}`, "", "more than one"},
		{`{"num_speculative_tokens":3}`, "method", "missing"},
		{`{"method":"ngram"}`, "num_speculative_tokens", "missing"},
		{`{"method":"ngram","num_speculative_tokens":0}`, "num_speculative_tokens", "at least 1"},
		{`{"method":"ngram","num_speculative_tokens":1.5}`, "num_speculative_tokens", "whole number"},
		{`{"method":"ngram","num_speculative_tokens":"3"}`, "num_speculative_tokens", "whole number"},
		{`{"method":"ngram","num_speculative_tokens":33}`, "num_speculative_tokens", "MAX_SPEC_LEN"},
		{`{"method":"eagle3","model":"x","num_speculative_tokens":3}`, "method", "not built"},
		{`{"method":"magic","num_speculative_tokens":3}`, "method", "unknown method"},
		{`{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":4,"prompt_lookup_max":2}`, "prompt_lookup_min", "<="},
		{`{"method":"ngram","num_speculative_tokens":3,"draft_tensor_parallel_size":1}`, "draft_tensor_parallel_size", "ngram method has none"},
		{`{"method":"ngram","num_speculative_tokens":3,"model":"d.gguf"}`, "model", "uses no model"},
		{`{"method":"draft_model","num_speculative_tokens":3}`, "model", "missing"},
		{`{"model":"d.gguf","num_speculative_tokens":3,"prompt_lookup_max":3}`, "prompt_lookup_max", "ngram method's"},
		{`{"model":"d.gguf","num_speculative_tokens":3,"tensor_parallel_size":2}`, "tensor_parallel_size", "draft_tensor_parallel_size"},
		{`{"model":"d.gguf","num_speculative_tokens":3,"quantization":"fp8"}`, "quantization", "not honoured"},
		{`{"model":"d.gguf","num_speculative_tokens":3,"kv_cache_dtype":"fp8"}`, "kv_cache_dtype", "auto, fp16 or fp32"},
		{`{"method":"ngram","num_speculative_tokens":3,"frobnicate":1}`, "frobnicate", "unknown key"},
		{`{"method":"ngram","num_speculative_tokens":3,"synthetic_acceptance_rates":[1,1,1]}`, "synthetic_acceptance_rates", "synthetic"},
		{`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic"}`, "rejection_sample_method", "exactly one"},
		{`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.5,0.6,0.1]}`, "synthetic_acceptance_rates", "non-increasing"},
		{`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.5]}`, "synthetic_acceptance_rates", "3 entries"},
		{`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":5}`, "synthetic_acceptance_length", "[1, 4]"},
		{`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"block"}`, "rejection_sample_method", "not built"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.json))
		var se *Error
		if !errors.As(err, &se) || se.Key != c.key || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want an error about %q saying %q", c.json, err, c.key, c.says)
		}
	}
}

func TestSyntheticLength(t *testing.T) {
	c, err := Parse([]byte(`{"method":"ngram","num_speculative_tokens":4,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0.5, 0, 0}; !slices.Equal(c.Synthetic, want) {
		t.Errorf("rates %v, want vLLM's minimum-variance schedule %v", c.Synthetic, want)
	}
	back, err := Parse([]byte(c.String()))
	if err != nil || !slices.Equal(back.Synthetic, c.Synthetic) || back.NumSpeculativeTokens != 4 {
		t.Errorf("String does not parse back: %s: %+v %v", c.String(), back, err)
	}
}

func TestCheck(t *testing.T) {
	c, _ := Parse([]byte(`{"model":"d.gguf","num_speculative_tokens":3,"draft_tensor_parallel_size":2}`))
	if err := c.Check(Deployment{TensorParallel: 1}); err == nil || !strings.Contains(err.Error(), "draft_tensor_parallel_size") {
		t.Errorf("draft TP 2 on the CPU: %v", err)
	}
	if err := c.Check(Deployment{Simulated: true, TensorParallel: 2}); err != nil {
		t.Errorf("draft TP 2 beside target TP 2: %v", err)
	}
	if err := c.Check(Deployment{Simulated: true, TensorParallel: 4}); err == nil {
		t.Error("draft TP 2 beside target TP 4 was accepted")
	}
	s, _ := Parse([]byte(`{"method":"ngram","num_speculative_tokens":2,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.5,0.25]}`))
	if err := s.Check(Deployment{}); err == nil || !strings.Contains(err.Error(), "rejection_sample_method") {
		t.Errorf("synthetic on the CPU: %v", err)
	}
	if err := s.Check(Deployment{Simulated: true}); err != nil {
		t.Errorf("synthetic on the simulator: %v", err)
	}
}

// TestNgramMatchesVLLM: the proposer's choices on vLLM's own examples
// and the edge cases of its KMP search.
func TestNgramMatchesVLLM(t *testing.T) {
	cases := []struct {
		tokens   []int
		min, max int
		k        int
		want     []int
	}{
		{[]int{1, 2, 3, 4, 2, 3}, 2, 3, 4, []int{4, 2, 3}},    // vLLM's docstring example
		{[]int{1, 2, 3, 4, 1, 2, 3}, 2, 3, 2, []int{4, 1}},    // the longest match wins
		{[]int{1, 2, 3, 4, 1, 2, 3}, 4, 5, 2, nil},            // shorter than min
		{[]int{5, 1, 9, 1, 7, 1}, 1, 1, 1, []int{9}},          // the earliest of equal matches
		{[]int{7, 7, 7, 7}, 2, 2, 3, []int{7, 7}},             // overlapping the suffix, up to the end
		{[]int{1, 2}, 3, 3, 2, nil},                           // context shorter than min
		{[]int{1, 2, 3}, 1, 2, 0, nil},                        // k = 0
		{[]int{4, 1, 2, 8, 1, 2, 9, 1, 2}, 2, 2, 1, []int{8}}, // three occurrences: the first
		{[]int{3, 1, 2, 8, 0, 1, 2, 9, 1, 2}, 1, 3, 2, []int{8, 0}},
	}
	for _, c := range cases {
		got := Ngram{Min: c.min, Max: c.max}.Propose(nil, c.tokens, c.k)
		if !slices.Equal(got, c.want) {
			t.Errorf("%v min=%d max=%d k=%d: got %v, want %v", c.tokens, c.min, c.max, c.k, got, c.want)
		}
	}
}

// TestNgramAgainstBruteForce checks the single scan against the
// definition on random contexts over a small alphabet.
func TestNgramAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		n := 1 + rng.IntN(40)
		tokens := make([]int, n)
		for i := range tokens {
			tokens[i] = rng.IntN(3)
		}
		lo := 1 + rng.IntN(3)
		g := Ngram{Min: lo, Max: lo + rng.IntN(3)}
		k := rng.IntN(5)
		if got, want := g.Propose(nil, tokens, k), bruteNgram(g, tokens, k); !slices.Equal(got, want) {
			t.Fatalf("%v %+v k=%d: got %v, want %v", tokens, g, k, got, want)
		}
	}
}

// bruteNgram: for n from Max down to Min, the first position whose n
// tokens equal the last n and end before the last token.
func bruteNgram(g Ngram, tokens []int, k int) []int {
	n := len(tokens)
	if k <= 0 {
		return nil
	}
	for m := g.Max; m >= g.Min; m-- {
		if m > n {
			continue
		}
		for s := 0; s+m <= n-1; s++ {
			if slices.Equal(tokens[s:s+m], tokens[n-m:]) {
				return tokens[s+m : min(s+m+k, n)]
			}
		}
	}
	return nil
}

func TestBackoffPausesAndRecovers(t *testing.T) {
	var b Backoff
	if got := b.Next(4); got != 4 {
		t.Fatalf("first step drafts %d, want 4", got)
	}
	// Always rejected: drafting becomes rare.
	drafted := 0
	for range 1000 {
		if n := b.Next(4); n > 0 {
			drafted++
			b.Observe(n, 0)
		}
	}
	if drafted > 40 {
		t.Errorf("drafted in %d of 1000 steps whose drafts were all rejected", drafted)
	}
	// Always accepted: back to full drafts within a few probes.
	full := 0
	for range 300 {
		if n := b.Next(4); n > 0 {
			b.Observe(n, n)
			if n == 4 {
				full++
			}
		}
	}
	if full < 200 {
		t.Errorf("only %d full drafts in 300 steps once every draft was accepted", full)
	}
}

func TestCurve(t *testing.T) {
	rates := []float64{0.8, 0.6, 0.3}
	c, err := NewCurve(rates)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ExpectedLength(3), 1+0.8+0.6+0.3; math.Abs(got-want) > 1e-12 {
		t.Errorf("expected length %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 200000
	pos := make([]float64, 3)
	for range n {
		a := c.Accept(3, rng.Float64)
		for i := range a {
			pos[i]++
		}
	}
	for i, r := range rates {
		// Binomial standard error is at most 0.0012 here: 5 of them.
		if got := pos[i] / n; math.Abs(got-r) > 0.006 {
			t.Errorf("position %d accepted %.4f of drafts, want %.2f", i, got, r)
		}
	}
	if _, err := NewCurve([]float64{0.5, 0.7}); err == nil {
		t.Error("an increasing curve was accepted")
	}
	cs := Counters{Drafts: 100, DraftTokens: 300, Accepted: 150, PerPos: []float64{80, 50, 20}}
	fit, err := cs.Rates()
	if err != nil || !slices.Equal(fit, []float64{0.8, 0.5, 0.2}) {
		t.Errorf("fitted %v, %v", fit, err)
	}
	if cs.MeanLength() != 2.5 || cs.AcceptanceRate() != 0.5 {
		t.Errorf("mean length %v, acceptance %v", cs.MeanLength(), cs.AcceptanceRate())
	}
}

// TestFittedAcceptance: counters read before and after a run give the
// run's rates, which become the configuration's synthetic acceptance for
// its first k positions; a restart between the readings, a configuration
// with its own rates and too few positions are refused.
func TestFittedAcceptance(t *testing.T) {
	before := Counters{Drafts: 50, DraftTokens: 150, Accepted: 70, PerPos: []float64{40, 20, 10}}
	after := Counters{Drafts: 150, DraftTokens: 450, Accepted: 220, PerPos: []float64{120, 70, 30, 5}}
	d, err := after.Since(&before)
	if err != nil || d.Drafts != 100 || d.Accepted != 150 || !slices.Equal(d.PerPos, []float64{80, 50, 20, 5}) {
		t.Fatalf("since: %+v, %v", d, err)
	}
	if _, err := before.Since(&after); err == nil || !strings.Contains(err.Error(), "restarted") {
		t.Errorf("counters that went down: %v", err)
	}
	rates, err := d.Rates()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Method: MethodDraftModel, Model: "d", NumSpeculativeTokens: 3, RejectionSampleMethod: RejectStandard}
	if err := c.Fitted(rates); err != nil || c.RejectionSampleMethod != RejectSynthetic || !slices.Equal(c.Synthetic, []float64{0.8, 0.5, 0.2}) {
		t.Errorf("fitted: %+v, %v", c, err)
	}
	if err := c.Fitted(rates); err == nil || !strings.Contains(err.Error(), "rejection_sample_method") {
		t.Errorf("a configuration with its own rates: %v", err)
	}
	c = Config{Method: MethodNgram, NumSpeculativeTokens: 5, RejectionSampleMethod: RejectStandard}
	if err := c.Fitted(rates); err == nil || !strings.Contains(err.Error(), "num_speculative_tokens") {
		t.Errorf("5 drafts from 4 positions: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"method":"ngram","num_speculative_tokens":3}`,
		`{"model":"d.gguf","num_speculative_tokens":4,"draft_tensor_parallel_size":1}`,
		`{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2}`,
		`{"method":null}`, `{}`, `[1]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if c.NumSpeculativeTokens < 1 || c.NumSpeculativeTokens > MaxSpeculativeTokens {
			t.Fatalf("accepted k=%d", c.NumSpeculativeTokens)
		}
		if c.Method == MethodNgram && (c.PromptLookupMin < 1 || c.PromptLookupMin > c.PromptLookupMax) {
			t.Fatalf("accepted lookup %d..%d", c.PromptLookupMin, c.PromptLookupMax)
		}
		if _, err := Parse([]byte(c.String())); err != nil {
			t.Fatalf("String %s does not parse: %v", c.String(), err)
		}
	})
}

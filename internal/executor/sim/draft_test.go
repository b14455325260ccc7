package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

func parseSpec(t *testing.T, js string) speculative.Config {
	t.Helper()
	c, err := speculative.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const draftJSON = `{"model":"llama-3.2-1b","num_speculative_tokens":%d,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":%s}`

// TestDraftModelRefusals: a draft the simulator cannot run is refused by
// the key of --speculative-config it is about.
func TestDraftModelRefusals(t *testing.T) {
	synthetic := `"rejection_sample_method":"synthetic","synthetic_acceptance_length":2`
	for _, tc := range []struct {
		json string
		tp   int
		want []string
	}{
		{`{"model":"draft.gguf","num_speculative_tokens":3,` + synthetic + `}`, 1, []string{"model", `"draft.gguf"`, "model profile", "llama-3.2-1b"}},
		{`{"model":"qwen2.5-0.5b","num_speculative_tokens":3,` + synthetic + `}`, 1, []string{"model", "vocabulary", "151936", "128256"}},
		{`{"model":"llama-3.2-1b","num_speculative_tokens":3}`, 1, []string{"rejection_sample_method", "synthetic", "--spec-acceptance-from"}},
		{`{"model":"llama-3.2-1b","num_speculative_tokens":3,"kv_cache_dtype":"fp16",` + synthetic + `}`, 1, []string{"kv_cache_dtype"}},
		{`{"model":"llama-3.2-1b","num_speculative_tokens":3,"max_model_len":200000,` + synthetic + `}`, 1, []string{"max_model_len", "131072"}},
		{`{"model":"llama-3.2-3b","num_speculative_tokens":3,` + synthetic + `}`, 16, []string{"draft_tensor_parallel_size", "24 attention heads"}},
	} {
		_, err := New(Config{Hardware: "h200", Model: "llama-3.1-8b", TensorParallel: tc.tp, Speculative: parseSpec(t, tc.json)})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %s", tc.json, err, w)
			}
		}
	}
	// The Hugging Face name of a profile is a profile.
	if _, err := New(Config{Hardware: "h200", Model: "llama-3.1-8b",
		Speculative: parseSpec(t, `{"model":"meta-llama/Llama-3.2-1B-Instruct","num_speculative_tokens":3,`+synthetic+`}`)}); err != nil {
		t.Error(err)
	}
}

// verifyStep is a step of n decoding sequences, each verifying k drafts,
// with k drafts to propose for the next step.
func verifyStep(e *Executor, n, k int) *engine.Batch {
	p := sampling.Defaults()
	p.Temperature = 0.8
	b := &engine.Batch{}
	for i := range n {
		hist := e.Vocab().Encode("Summarise the following report in plain words.")
		np := len(hist)
		for len(hist) < 400+i {
			hist = append(hist, 300+(len(hist)*31+i)%4000)
		}
		draft := make([]int, k)
		for j := range draft {
			draft[j] = 500 + j
		}
		b.Seqs = append(b.Seqs, engine.SeqBatch{
			Seq: i, Tokens: append([]int{hist[len(hist)-1]}, draft...), Pos: len(hist) - 1, Sample: true,
			History: hist, NumPrompt: np, Params: &p, RNG: sampling.NewRNG(int64(i)),
			Draft: draft, Propose: k, DraftKV: len(hist),
		})
		b.NumTokens += k + 1
	}
	return b
}

// TestDraftModelCost: a step with a draft model costs the target's pass
// plus the draft's, priced with the draft's profile: one pass over each
// sequence's accepted drafts and the token after them, then k-1 passes of
// one token; the work estimates add the draft's. Each sequence gets k
// drafts and its draft K/V through the token sampled.
func TestDraftModelCost(t *testing.T) {
	const n, k = 8, 4
	for _, tc := range []struct {
		rates    string
		accepted int
	}{{"[1,1,1,1]", k}, {"[0,0,0,0]", 0}} {
		var seen costmodel.Cost
		e := newExec(t, Config{Speculative: parseSpec(t, fmt.Sprintf(draftJSON, k, tc.rates)), Observe: func(_ time.Time, c *costmodel.Cost) { seen = *c }})
		b := verifyStep(e, n, k)
		target := e.StepCost(b)
		var r engine.StepResult
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}

		// The draft's passes priced on their own.
		draft := costmodel.Model{HW: e.cost.HW, Model: mustModel(t, "llama-3.2-1b"), TP: 1}
		var want costmodel.Cost
		add := func(tokens, from int) {
			var pass []costmodel.Seq
			for i := range b.Seqs {
				s := &b.Seqs[i]
				pass = append(pass, costmodel.Seq{Tokens: tokens, Pos: s.DraftKV + from, NumPrompt: s.NumPrompt, Sample: true})
			}
			c := draft.Step(pass)
			want.Duration += c.Duration
			want.FLOPs += c.FLOPs
		}
		add(tc.accepted+1, 0)
		for j := 1; j < k; j++ {
			add(1, tc.accepted+j)
		}
		if seen.Draft != want.Duration || seen.DraftPasses != k {
			t.Errorf("rates %s: draft %v in %d passes, want %v in %d", tc.rates, seen.Draft, seen.DraftPasses, want.Duration, k)
		}
		if seen.Duration != target.Duration+want.Duration || r.FLOPs != target.FLOPs+want.FLOPs {
			t.Errorf("rates %s: step %v and %g FLOPs, want the target's %v + the draft's %v and %g + %g",
				tc.rates, seen.Duration, r.FLOPs, target.Duration, want.Duration, target.FLOPs, want.FLOPs)
		}
		for i, s := range b.Seqs {
			if got := len(r.Accepted[i]); got != tc.accepted {
				t.Fatalf("rates %s: %d accepted", tc.rates, got)
			}
			if len(r.Drafts[i]) != k || r.DraftKV[i] != s.DraftKV+tc.accepted+1 {
				t.Errorf("rates %s, sequence %d: drafts %v, draft K/V through %d (want %d)", tc.rates, i, r.Drafts[i], r.DraftKV[i], s.DraftKV+tc.accepted+1)
			}
		}
	}
}

func mustModel(t *testing.T, name string) profiles.Model {
	t.Helper()
	m, err := profiles.LookupModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDraftModelTakesKVBlocks: the draft's weights come out of the KV
// cache's memory and every block holds its K/V beside the target's, so
// the same GPU holds fewer blocks.
func TestDraftModelTakesKVBlocks(t *testing.T) {
	plain := newExec(t, Config{})
	e := newExec(t, Config{Speculative: parseSpec(t, fmt.Sprintf(draftJSON, 3, "[0.5,0.3,0.1]"))})
	target, draft := mustModel(t, "llama-3.1-8b"), mustModel(t, "llama-3.2-1b")
	perBlock := 16 * (target.KVBytesPerToken(1) + draft.KVBytesPerToken(1))
	for _, override := range []int64{0, 8e9} {
		without, err := plain.KVCacheBlocks(0.9, override, 16)
		if err != nil {
			t.Fatal(err)
		}
		with, err := e.KVCacheBlocks(0.9, override, 16)
		if err != nil {
			t.Fatal(err)
		}
		bytes, _ := costmodel.KVCacheBytes(e.cost.HW, target, 1, 0.9, override)
		if override == 0 {
			bytes -= int64(draft.WeightBytes())
		}
		if want := int(bytes / perBlock); with != want || with >= without {
			t.Errorf("override %d: %d blocks with the draft (want %d), %d without", override, with, want, without)
		}
		t.Logf("override %d: %d blocks with llama-3.2-1b drafting, %d without", override, with, without)
	}
	if i := e.Info(); i.Draft != "llama-3.2-1b" || i.DraftTensorParallel != 1 || i.DraftMaxModelLen != 131072 {
		t.Errorf("info %+v", i)
	}
}

// TestDraftModelInTheEngine: the engine on a simulator that drafts with a
// draft model profile: greedy output token for token as plain decoding's
// (the drafts are the fake model's own, and a rejected one is replaced by
// the target's token), drafts every step at the rates' acceptance, and
// every KV block back at the end.
func TestDraftModelInTheEngine(t *testing.T) {
	v := NewVocab()
	var prompts [][]int
	for i := range 6 {
		prompts = append(prompts, v.Encode(fmt.Sprintf("question %d: why is the sky blue on a clear day", i)))
	}
	sp := parseSpec(t, fmt.Sprintf(draftJSON, 3, "[0.7,0.5,0.3]"))
	for _, plainTokens := range []bool{false, true} {
		want := runSpec(t, speculative.Config{}, plainTokens, prompts, nil)
		var c specCounts
		got := runSpec(t, sp, plainTokens, prompts, &c)
		gen := 0
		for i := range prompts {
			gen += len(got[i])
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("plain tokens %v, request %d: drafted %v, plain %v", plainTokens, i, got[i], want[i])
			}
		}
		// 1.5 tokens accepted of 3 drafted per pass on average, under the
		// back-off: drafting stays on.
		a := float64(c.accepted) / float64(max(c.draftTokens, 1))
		t.Logf("plain tokens %v: %d of %d draft tokens accepted for %d generated", plainTokens, c.accepted, c.draftTokens, gen)
		if c.draftTokens < gen/2 || a < 0.3 || a > 0.7 {
			t.Errorf("plain tokens %v: %d of %d draft tokens accepted for %d generated", plainTokens, c.accepted, c.draftTokens, gen)
		}
	}
}

package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	gbgrammar "github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// listMatcher marks a matcher as a required choice's list, as the server
// does.
type listMatcher struct{ *gbgrammar.Matcher }

func (listMatcher) ToolCallList() bool { return true }

// constrained decodes from prompt under c, moving it past every token,
// as the engine does; it returns the output's text.
func constrained(t *testing.T, e *Executor, c engine.Constraint, seed uint64) string {
	t.Helper()
	hist := e.Vocab().Encode("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")
	np := len(hist)
	p := params(1)
	rng := rand.New(rand.NewPCG(seed, 1))
	var r engine.StepResult
	for range 4000 {
		b := &engine.Batch{Seqs: []engine.SeqBatch{{Tokens: hist[len(hist)-1:], Pos: len(hist) - 1, Sample: true,
			History: hist, NumPrompt: np, Params: &p, RNG: rng, Constraint: c}}, NumTokens: 1}
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		tok := r.Samples[0].Token
		if !c.Accept(tok) {
			t.Fatalf("seed %d: the model wrote %q, which its constraint refuses, after %q", seed, e.Vocab().TokenBytes(tok), e.Vocab().Decode(hist[np:]))
		}
		if tok == e.Vocab().EOS() {
			return e.Vocab().Decode(hist[np:])
		}
		hist = append(hist, tok)
	}
	t.Fatalf("seed %d: no end after 4000 tokens: %q", seed, e.Vocab().Decode(hist[np:]))
	return ""
}

// TestToolCallingModel: under auto the fake model calls a tool in about
// ToolCallRate of its answers, in the hermes format the server reads, and
// makes a second call in about ParallelShare of those; under required it
// ends its list after one call about 1-ParallelShare of the time. Every
// call is to one of the tools, its arguments held to the schema.
func TestToolCallingModel(t *testing.T) {
	e := newExec(t, Config{ToolCalls: ToolCalls{Rate: 0.7, ParallelShare: 0.25}})
	v := e.Vocab()
	cache := gbgrammar.NewCache(func() *gbgrammar.Vocab { return gbgrammar.NewVocab(v.Size(), v.TokenBytes, []int{v.EOS()}) }, 4)
	tools := []toolcall.Tool{{Name: "get_weather", Parameters: `{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`},
		{Name: "get_time", Parameters: `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}`}}
	schema, trigger, suffix := toolcall.HermesCall(tools)
	auto, err := cache.Get(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: schema, Suffix: suffix, Trigger: trigger})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	calling, several := 0, 0
	for seed := range uint64(n) {
		text := constrained(t, e, auto.NewLazy(trigger), seed)
		content, calls := toolcall.Parse(toolcall.Hermes, text)
		if len(calls) == 0 {
			if content != text || content == "" {
				t.Fatalf("seed %d: an answer without calls %q", seed, text)
			}
			continue
		}
		calling++
		if len(calls) > 1 {
			several++
		}
		for _, c := range calls {
			if c.Name != "get_weather" && c.Name != "get_time" {
				t.Fatalf("seed %d: call to %q in %q", seed, c.Name, text)
			}
		}
	}
	if rate := float64(calling) / n; rate < 0.6 || rate > 0.8 {
		t.Errorf("auto: %d of %d answers call a tool, want about 70%%", calling, n)
	}
	if share := float64(several) / float64(calling); share < 0.15 || share > 0.35 {
		t.Errorf("auto: %d of %d call lists have several calls, want about 25%%", several, calling)
	}
	required, err := cache.Get(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: toolcall.RequiredSchema(tools, true)})
	if err != nil {
		t.Fatal(err)
	}
	one := 0
	for seed := range uint64(n) {
		text := constrained(t, e, listMatcher{required.NewMatcher()}, seed)
		calls, ok := toolcall.ParseRequired(text)
		if !ok {
			t.Fatalf("seed %d: required output %q", seed, text)
		}
		if len(calls) == 1 {
			one++
		}
	}
	if share := float64(one) / n; share < 0.65 || share > 0.85 {
		t.Errorf("required: %d of %d lists have one call, want about 75%%", one, n)
	}
	t.Logf("auto: %d of %d answers call, %d of them several times; required: %d of %d lists of one", calling, n, several, one, n)
	if err := (ToolCalls{Rate: 1.5}).Check(); err == nil {
		t.Error("a tool-call rate of 1.5 was accepted")
	}
}

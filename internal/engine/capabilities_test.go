package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// TestCapabilitiesRefusedByName: what a configuration asks of an executor
// that does not declare it is refused at New, naming the flag and the
// executor; declared, it is admitted. An executor that declares nothing
// runs plain generation only.
func TestCapabilitiesRefusedByName(t *testing.T) {
	ngram := speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 2, PromptLookupMin: 1, PromptLookupMax: 2}
	draft := speculative.Config{Method: speculative.MethodDraftModel, NumSpeculativeTokens: 2}
	for _, c := range []struct {
		name    string
		ask     func(*Config)
		without Capabilities // everything else a test executor declares
		has     Capabilities // enough to run it
		want    string       // the refusal without it names this
	}{
		{"speculative decoding", func(c *Config) { c.Speculative = ngram }, Capabilities{Embeddings: true, LoRA: true, AsyncScheduling: true},
			Capabilities{Speculative: true}, "--speculative-config: "},
		{"a draft model", func(c *Config) { c.Speculative = draft }, Capabilities{Speculative: true},
			Capabilities{Speculative: true, DraftModel: true}, "--speculative-config method draft_model: "},
		{"LoRA adapters", func(c *Config) { c.LoRAs, c.MaxLoRAs = []string{"a"}, 1 }, Capabilities{Speculative: true, AsyncScheduling: true},
			Capabilities{LoRA: true}, "--enable-lora: "},
		{"--enable-lora without adapters yet", func(c *Config) { c.MaxLoRAs = 1 }, Capabilities{},
			Capabilities{LoRA: true}, "--enable-lora: "},
		{"async scheduling", func(c *Config) { c.AsyncScheduling = true }, Capabilities{Speculative: true, LoRA: true},
			Capabilities{AsyncScheduling: true}, "--async-scheduling: "},
	} {
		cfg := testConfig()
		c.ask(&cfg)
		c.without.Name = "the test executor"
		_, err := New(cfg, &countExec{caps: c.without}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want+"the test executor") {
			t.Errorf("%s without the capability: %v, want a refusal naming %s and the executor", c.name, err, c.want)
		}
		if _, err := New(cfg, &zeroExec{}, nil); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%s on an executor that declares nothing: %v, want a refusal naming the flag", c.name, err)
		}
		if _, err := New(cfg, &countExec{caps: c.has}, nil); err != nil {
			t.Errorf("%s with %+v: %v", c.name, c.has, err)
		}
		if err := cfg.CheckCapabilities(c.has); err != nil {
			t.Errorf("%s: CheckCapabilities(%+v) = %v", c.name, c.has, err)
		}
	}
	cfg := testConfig()
	if _, err := New(cfg, &zeroExec{}, nil); err != nil {
		t.Errorf("plain generation on an executor that declares nothing: %v", err)
	}
}

// TestEmbedRefusedAtSubmit: an embedding request to an executor that does
// not pool is refused at Submit as a parameter error on "model" (the
// server's 400 naming it), so no step that other requests share fails
// on it; one that embeds takes it.
func TestEmbedRefusedAtSubmit(t *testing.T) {
	cfg := testConfig()
	for _, c := range []struct {
		x    Executor
		want string // "": admitted
	}{
		{&zeroExec{}, "does not serve embeddings"},
		{&countExec{caps: Capabilities{Name: "the GPU executor", Speculative: true}}, "does not serve embeddings on the GPU executor"},
		{&embedExec{}, ""},
	} {
		e, err := New(cfg, c.x, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Submit(&Request{ID: "e", Prompt: prompt(3, 1), Params: params(1), Embed: true})
		var pe *sampling.ParamError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%T: %v, want the embedding admitted", c.x, err)
		case c.want != "" && (!errors.As(err, &pe) || pe.Param != "model" || !strings.Contains(pe.Msg, c.want)):
			t.Errorf("%T: %v, want a ParamError on model saying %q", c.x, err, c.want)
		}
	}
}

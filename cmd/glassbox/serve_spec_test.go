package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestServeSpeculative: serve --speculative-config with vLLM's JSON, for
// prompt lookup and for a draft model (stories260K drafting for itself),
// answers greedy completions exactly as plain serve does, on stories260K,
// and /metrics counts the drafts in vLLM's four families.
func TestServeSpeculative(t *testing.T) {
	stories := storiesPath(t)
	for _, c := range []struct{ name, config string }{
		{"ngram", `{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}`},
		{"draft_model", `{"model":"` + stories + `","num_speculative_tokens":4}`},
	} {
		t.Run(c.name, func(t *testing.T) { checkServeSpeculative(t, stories, c.config) })
	}
}

func checkServeSpeculative(t *testing.T, stories, config string) {
	// Prompts whose continuation repeats them (lookup drafts are
	// accepted) and one that does not.
	prompts := []string{
		"Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom",
		"Once upon a time",
	}
	complete := func(base string) []string {
		var out []string
		for _, p := range prompts {
			var r completionResp
			if code := post(t, base+"/v1/completions", map[string]any{"model": stories, "prompt": p, "max_tokens": 48, "temperature": 0}, &r); code != 200 || len(r.Choices) != 1 {
				t.Fatalf("status %d", code)
			}
			out = append(out, r.Choices[0].Text)
		}
		return out
	}
	plainBase, _ := serveTest(t, "--model", stories, "--threads", "2")
	want := complete(plainBase)
	base, _ := serveTest(t, "--model", stories, "--threads", "2", "--speculative-config", config)
	got := complete(base)
	for i := range prompts {
		if got[i] != want[i] {
			t.Errorf("prompt %d: speculative %q, plain %q", i, got[i], want[i])
		}
	}
	code, text := get(t, http.DefaultClient, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	value := func(series string) float64 {
		m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\S+)`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("/metrics lacks %s", series)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	labels := `{engine="0",model_name="` + stories + `"}`
	drafts, tokens, accepted := value("vllm:spec_decode_num_drafts_total"+labels),
		value("vllm:spec_decode_num_draft_tokens_total"+labels), value("vllm:spec_decode_num_accepted_tokens_total"+labels)
	pos0 := value(`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="` + stories + `",position="0"}`)
	value(`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="` + stories + `",position="3"}`)
	if drafts == 0 || accepted == 0 || tokens < drafts || accepted > tokens || pos0 > drafts || pos0 == 0 {
		t.Errorf("drafts %v, draft tokens %v, accepted %v, accepted at position 0 %v", drafts, tokens, accepted, pos0)
	}
	if _, plain := get(t, http.DefaultClient, plainBase+"/metrics"); strings.Contains(plain, "spec_decode") {
		t.Error("plain serve exports spec-decode families")
	}
}

// TestServeSpeculativeRefusals: what speculative decoding glassbox does not
// run is refused by name at start-up.
func TestServeSpeculativeRefusals(t *testing.T) {
	stories := storiesPath(t)
	other := filepath.Join(t.TempDir(), "other.gguf") // another tokenizer
	var out strings.Builder
	if err := run(context.Background(), []string{"model", "random", "--shape", "tiny", "-o", other}, &out, io.Discard); err != nil {
		t.Fatalf("model random: %v\n%s", err, out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", stories, "--speculative-config", `{"model":"draft.gguf","num_speculative_tokens":3}`}, "draft.gguf"},
		{[]string{"--model", stories, "--speculative-config", `{"model":"` + other + `","num_speculative_tokens":3}`}, "share the target's tokenizer"},
		{[]string{"--speculative-config", `{"method":"draft_model","model":"x.gguf","num_speculative_tokens":3}`}, "simulated GPU has no draft model"},
		{[]string{"--model", stories, "--speculative-config", `{"method":"eagle","num_speculative_tokens":3}`}, "eagle"},
		{[]string{"--model", stories, "--speculative-config", `{"method":"ngram"}`}, "num_speculative_tokens"},
		{[]string{"--model", stories, "--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2}`}, "rejection_sample_method"},
		{[]string{"--model", stories, "--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"quantization":"fp8"}`}, "quantization"},
		{[]string{"--speculative-config", `{"method":"ngram",`}, "--speculative-config"},
	} {
		_, err := startServe(context.Background(), append([]string{"--host", "127.0.0.1", "--port", "0"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

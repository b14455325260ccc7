package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
		{[]string{"--speculative-config", `{"method":"draft_model","model":"x.gguf","num_speculative_tokens":3}`}, `model: "x.gguf": on the simulator the draft is a model profile`},
		{[]string{"--speculative-config", `{"model":"llama-3.2-1b","num_speculative_tokens":3}`}, "rejection_sample_method"},
		{[]string{"--sim-model", "qwen2.5-7b", "--speculative-config", `{"model":"qwen2.5-0.5b","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2}`}, "vocabulary"},
		{[]string{"--spec-acceptance-from", "x.prom"}, "--spec-acceptance-from needs --speculative-config"},
		{[]string{"--model", stories, "--spec-acceptance-from", "x.prom", "--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`}, "--spec-acceptance-from"},
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

// TestServeSimDraftModel: the simulator serves with a draft model profile
// and counts its drafts in vLLM's four families; two scrapes of that
// server, before and after a run, fit the acceptance plan then simulates
// with (--spec-acceptance-from), and a hand-written scrape in vLLM's own
// format gives its rates; a scrape without the families names the one
// missing.
func TestServeSimDraftModel(t *testing.T) {
	dir := t.TempDir()
	base, _ := serveTest(t, "--sim-time-scale", "0", "--speculative-config",
		`{"model":"llama-3.2-1b","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[0.6,0.4,0.2]}`)
	scrapeTo := func(name string) string {
		code, text := get(t, http.DefaultClient, base+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	before := scrapeTo("before.prom")
	for i := range 8 {
		var r completionResp
		if code := post(t, base+"/v1/completions", map[string]any{"model": "llama-3.1-8b", "prompt": fmt.Sprintf("request %d: tell me about the sea", i),
			"max_tokens": 96, "ignore_eos": true}, &r); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	after := scrapeTo("after.prom")
	text, _ := os.ReadFile(after)
	for _, family := range []string{"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
		"vllm:spec_decode_num_accepted_tokens_total", `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="llama-3.1-8b",position="2"}`} {
		if !strings.Contains(string(text), family) {
			t.Errorf("/metrics lacks %s", family)
		}
	}
	rates, err := fitAcceptance(before + "," + after)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fitted from the server: %.3f", rates)
	// Drafting's back-off shortens some drafts, so the later positions
	// count fewer acceptances than the rates; the first stays close.
	if len(rates) != 3 || math.Abs(rates[0]-0.6) > 0.1 || rates[2] > rates[1] || rates[1] > rates[0] {
		t.Errorf("fitted %v from a server accepting at 0.6, 0.4, 0.2", rates)
	}

	// plan simulates with the fitted rates: the same run as with those
	// rates given in --speculative-config.
	sweep := func(sc string, more ...string) string {
		var out strings.Builder
		args := append([]string{"plan", "--sim-hardware", "h200", "--random-input-len", "64", "--random-output-len", "96", "--trial-duration", "10s",
			"--speculative-config", sc, "--speculation-sweep", "2"}, more...)
		if err := run(context.Background(), args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	fitted := sweep(`{"model":"llama-3.2-1b","num_speculative_tokens":3}`, "--spec-acceptance-from", before+","+after)
	js, _ := json.Marshal(rates)
	given := sweep(`{"model":"llama-3.2-1b","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":` + string(js) + `}`)
	t.Log("\n" + fitted)
	if fitted != given || !strings.Contains(fitted, "pays") {
		t.Errorf("with --spec-acceptance-from:\n%s\nwith the rates given:\n%s", fitted, given)
	}

	// vLLM's own exposition: _total families, _created gauges.
	vllm := filepath.Join(dir, "vllm.prom")
	const m8b = `{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"`
	if err := os.WriteFile(vllm, []byte(`# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total`+m8b+`} 200.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created`+m8b+`} 1.7358e+09
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total`+m8b+`} 400.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total`+m8b+`} 150.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total`+m8b+`,position="0"} 100.0
vllm:spec_decode_num_accepted_tokens_per_pos_total`+m8b+`,position="1"} 50.0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := fitAcceptance(vllm); err != nil || !slices.Equal(r, []float64{0.5, 0.25}) {
		t.Errorf("vLLM's scrape: %v, %v", r, err)
	}
	// Three drafts, two positions known: refused by name.
	err = run(context.Background(), []string{"simulate", "--num-prompts", "1", "--speculative-config", `{"model":"llama-3.2-1b","num_speculative_tokens":3}`,
		"--spec-acceptance-from", vllm}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "num_speculative_tokens") {
		t.Errorf("3 drafts from 2 positions: %v", err)
	}
	plain := filepath.Join(dir, "plain.prom")
	os.WriteFile(plain, []byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"), 0o644)
	if _, err := fitAcceptance(plain); err == nil || !strings.Contains(err.Error(), "vllm:spec_decode_num_drafts_total") {
		t.Errorf("a scrape without spec decoding: %v", err)
	}
}

// TestModelRandomQuietRefusals: model random's speculative-decoding flags
// refuse, by name, what they cannot make.
func TestModelRandomQuietRefusals(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-quiet", "0.1"}, "-quiet-from"},
		{[]string{"-quiet-from", "2"}, "past the model's 2 layers"},
		{[]string{"-layers", "4", "-quiet-from", "4"}, "past the model's 4 layers"},
		{[]string{"-quiet-from", "1", "-quiet", "NaN"}, "finite"},
		{[]string{"-layers", "-1"}, "not negative"},
	} {
		err := run(context.Background(), append([]string{"model", "random", "--shape", "tiny", "-o", out}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

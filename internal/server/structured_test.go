package server

import (
	"encoding/json"
	"math/bits"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// randomExec stands in for a model with random weights: a constrained
// sequence gets a uniformly random allowed token from its own seeded
// source, and ends (EOS) as soon as the grammar lets it one time in two;
// an unconstrained one continues the alphabet.
type randomExec struct{ mask []uint64 }

func (x *randomExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	r.Samples = r.Samples[:0]
	for i := range b.Seqs {
		sb := &b.Seqs[i]
		r.Samples = append(r.Samples, sampling.Result{})
		if !sb.Sample {
			continue
		}
		if sb.Constraint == nil {
			r.Samples[i] = sampling.Result{Token: nextLetter(sb.Tokens[len(sb.Tokens)-1])}
			continue
		}
		if x.mask == nil {
			x.mask = make([]uint64, (vocabSize+63)/64)
		}
		sb.Constraint.FillMask(x.mask)
		var allowed []int
		eos := false
		for w, word := range x.mask {
			for word != 0 {
				tok := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				if tok == eosID {
					eos = true
				} else {
					allowed = append(allowed, tok)
				}
			}
		}
		tok := eosID
		if !eos || (len(allowed) > 0 && sb.RNG.IntN(2) == 0) {
			tok = allowed[sb.RNG.IntN(len(allowed))]
		}
		r.Samples[i] = sampling.Result{Token: tok}
	}
	return nil
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":120},` +
	`"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`

func mustValidator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	return c.MustCompile("s.json")
}

func validates(t *testing.T, v *jsonschema.Schema, text string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("output %q is not JSON: %v", text, err)
	}
	if err := v.Validate(inst); err != nil {
		t.Fatalf("output %s does not validate: %v", text, err)
	}
}

// TestStructuredOutputs: every way of asking for structured output, in
// chat and completions, streaming or not, with several choices, gets
// output that obeys it, from a "model" that samples at random.
func TestStructuredOutputs(t *testing.T) {
	env := startExec(t, &randomExec{})
	person := mustValidator(t, personSchema)
	anyObject := mustValidator(t, `{"type":"object"}`)
	chat := `"messages":[{"role":"user","content":"who?"}],"max_tokens":200,"seed":7,"n":3`
	cases := []struct {
		name, path, body string
		check            func(t *testing.T, text string)
	}{
		{"chat json_schema", "/v1/chat/completions",
			`{` + chat + `,"response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,"schema":` + personSchema + `}}}`,
			func(t *testing.T, s string) { validates(t, person, s) }},
		{"chat json_object", "/v1/chat/completions", `{` + chat + `,"response_format":{"type":"json_object"}}`,
			func(t *testing.T, s string) { validates(t, anyObject, s) }},
		{"structured_outputs json as a string", "/v1/chat/completions",
			`{` + chat + `,"structured_outputs":{"json":` + quoteJSON(personSchema) + `}}`,
			func(t *testing.T, s string) { validates(t, person, s) }},
		{"guided_json", "/v1/completions", `{"prompt":"x","max_tokens":200,"n":2,"seed":1,"guided_json":` + personSchema + `}`,
			func(t *testing.T, s string) { validates(t, person, s) }},
		{"guided_regex", "/v1/completions", `{"prompt":"x","max_tokens":50,"n":4,"guided_regex":"[0-9]{3}-[a-c]{2,4}"}`,
			func(t *testing.T, s string) {
				if len(s) < 6 || s[3] != '-' || strings.Trim(s[:3], "0123456789") != "" || strings.Trim(s[4:], "abc") != "" {
					t.Errorf("%q does not match", s)
				}
			}},
		{"structured_outputs choice", "/v1/chat/completions", `{` + chat + `,"structured_outputs":{"choice":["yes","no"]}}`,
			func(t *testing.T, s string) {
				if s != "yes" && s != "no" {
					t.Errorf("%q is not a choice", s)
				}
			}},
		{"guided_grammar", "/v1/completions", `{"prompt":"x","max_tokens":50,"guided_grammar":"root ::= \"(\" [a-z]{1,8} \")\""}`,
			func(t *testing.T, s string) {
				if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") || strings.Trim(s[1:len(s)-1], "abcdefghijklmnopqrstuvwxyz") != "" {
					t.Errorf("%q does not match", s)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			texts := map[int]string{}
			if strings.Contains(tc.path, "chat") {
				var resp openai.ChatCompletionResponse
				decodeBody(t, env.post(t, tc.path, tc.body), 200, &resp)
				for _, c := range resp.Choices {
					texts[c.Index] = c.Message.Content
					if *c.FinishReason != "stop" {
						t.Errorf("choice %d finished %q, want stop", c.Index, *c.FinishReason)
					}
				}
			} else {
				var resp openai.CompletionResponse
				decodeBody(t, env.post(t, tc.path, tc.body), 200, &resp)
				for _, c := range resp.Choices {
					texts[c.Index] = c.Text
					if *c.FinishReason != "stop" {
						t.Errorf("choice %d finished %q, want stop", c.Index, *c.FinishReason)
					}
				}
			}
			for _, s := range texts {
				tc.check(t, s)
			}
			// Streamed, the deltas add up to output that obeys it too.
			body := strings.TrimSuffix(tc.body, "}") + `,"stream":true}`
			streamed := map[int]*strings.Builder{}
			for _, e := range readEvents(t, env.post(t, tc.path, body).Body) {
				if e == "[DONE]" {
					continue
				}
				var chunk struct {
					Choices []struct {
						Index int
						Text  string
						Delta struct{ Content string }
					}
				}
				if err := json.Unmarshal([]byte(e), &chunk); err != nil {
					t.Fatalf("event %s: %v", e, err)
				}
				for _, c := range chunk.Choices {
					if streamed[c.Index] == nil {
						streamed[c.Index] = &strings.Builder{}
					}
					streamed[c.Index].WriteString(c.Text + c.Delta.Content)
				}
			}
			if len(streamed) != len(texts) {
				t.Fatalf("%d streamed choices, want %d", len(streamed), len(texts))
			}
			for _, b := range streamed {
				tc.check(t, b.String())
			}
		})
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestStructuredOutputErrorsNameTheField(t *testing.T) {
	env := startExec(t, &randomExec{})
	msgs := `"messages":[{"role":"user","content":"x"}]`
	tests := []struct{ body, param, msg string }{
		{`{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"integer","multipleOf":2}}}}`, "response_format", `"multipleOf"`},
		{`{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format", "json_schema.schema"},
		{`{` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format", "text, json_object or json_schema"},
		{`{` + msgs + `,"guided_regex":"a(?=a)"}`, "guided_regex", "lookahead"},
		{`{` + msgs + `,"guided_choice":[]}`, "guided_choice", "empty"},
		{`{` + msgs + `,"guided_grammar":"start: \"a\""}`, "guided_grammar", "Lark"},
		{`{` + msgs + `,"guided_json":"{not json"}`, "guided_json", "not valid JSON"},
		{`{` + msgs + `,"guided_regex":"a","guided_choice":["a"]}`, "guided_choice", "only one kind"},
		{`{` + msgs + `,"structured_outputs":{"regex":"a","choice":["a"]}}`, "structured_outputs", "exactly one"},
		{`{` + msgs + `,"structured_outputs":{"json":{},"disable_any_whitespace":true}}`, "structured_outputs", "disable_any_whitespace"},
		{`{` + msgs + `,"response_format":{"type":"json_object"},"ignore_eos":true}`, "ignore_eos", "grammar"},
		{`{` + msgs + `,"response_format":{"type":"json_object"},"min_tokens":3}`, "min_tokens", "grammar"},
	}
	for _, tt := range tests {
		var body openai.ErrorBody
		decodeBody(t, env.post(t, "/v1/chat/completions", tt.body), 400, &body)
		if body.Error.Param == nil || *body.Error.Param != tt.param || !strings.Contains(body.Error.Message, tt.msg) {
			t.Errorf("%s: error %+v, want param %s and %q", tt.body, body.Error, tt.param, tt.msg)
		}
	}
}

package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// scriptExec "generates" script one byte token at a time, then EOS.
type scriptExec struct{ script string }

func (x *scriptExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	r.Samples = r.Samples[:0]
	for i := range b.Seqs {
		sb := &b.Seqs[i]
		r.Samples = append(r.Samples, sampling.Result{})
		if !sb.Sample {
			continue
		}
		out := sb.Pos + len(sb.Tokens) - sb.NumPrompt
		tok := eosID
		if out < len(x.script) {
			tok = int(x.script[out])
		}
		r.Samples[i] = sampling.Result{Token: tok}
	}
	return nil
}

const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false}}},
	{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}}}]`

// longContext makes room for prompts that carry tool definitions.
func longContext(e *engine.Config, _ *Config) { e.MaxModelLen = 4096 }

// TestToolChoiceAuto: the model's hermes-format calls come back as
// tool_calls with finish_reason tool_calls, content before them as
// content, streamed as OpenAI streams them.
func TestToolChoiceAuto(t *testing.T) {
	script := "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>"
	env := startExec(t, &scriptExec{script}, longContext, func(_ *engine.Config, c *Config) { c.ToolParser = "hermes" })
	body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":300,` + weatherTools + `}`
	var resp openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", body), 200, &resp)
	c := resp.Choices[0]
	if *c.FinishReason != "tool_calls" || c.Message.Content != "Let me look." || len(c.Message.ToolCalls) != 2 {
		t.Fatalf("choice %+v", c)
	}
	tc := c.Message.ToolCalls[0]
	if tc.Type != "function" || !strings.HasPrefix(tc.ID, "call_") || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris","days":2}` {
		t.Errorf("first call %+v", tc)
	}
	// Without parallel calls, only the first.
	decodeBody(t, env.post(t, "/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"parallel_tool_calls":false}`), 200, &resp)
	if n := len(resp.Choices[0].Message.ToolCalls); n != 1 {
		t.Errorf("parallel_tool_calls false: %d calls", n)
	}
	// tool_choice none: the output is content.
	decodeBody(t, env.post(t, "/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"tool_choice":"none"}`), 200, &resp)
	if c := resp.Choices[0]; len(c.Message.ToolCalls) != 0 || c.Message.Content != script || *c.FinishReason != "stop" {
		t.Errorf("tool_choice none: %+v", c)
	}
	// Streamed: content deltas, then one delta per call with its id and
	// name and arguments, then finish_reason tool_calls.
	events := readEvents(t, env.post(t, "/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`).Body)
	var content strings.Builder
	var calls []openai.ToolCallDelta
	var finish string
	for _, e := range events[:len(events)-1] {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatal(err)
		}
		d := chunk.Choices[0].Delta
		content.WriteString(d.Content)
		if strings.Contains(d.Content, "<tool") {
			t.Errorf("a delta shows the call's markup: %q", d.Content)
		}
		calls = append(calls, d.ToolCalls...)
		if f := chunk.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if content.String() != "Let me look." || finish != "tool_calls" || len(calls) != 2 || calls[1].Index != 1 || calls[1].Function.Name != "get_time" || calls[1].ID == "" {
		t.Errorf("streamed content %q, finish %q, calls %+v", content.String(), finish, calls)
	}
}

func TestToolChoiceAutoNeedsAParser(t *testing.T) {
	env := startExec(t, &scriptExec{"x"})
	var body openai.ErrorBody
	decodeBody(t, env.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+weatherTools+`}`), 400, &body)
	if *body.Error.Param != "tool_choice" || !strings.Contains(body.Error.Message, "--tool-call-parser") {
		t.Errorf("error %+v", body.Error)
	}
}

// TestToolChoiceRequiredAndNamed: the output is held to the tools'
// schemas, so a model sampling at random still calls them with valid
// arguments.
func TestToolChoiceRequiredAndNamed(t *testing.T) {
	env := startExec(t, &randomExec{}, longContext)
	weather := mustValidator(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":10},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false}`)
	zone := mustValidator(t, `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}`)
	check := func(t *testing.T, calls []openai.ToolCall) {
		t.Helper()
		for _, c := range calls {
			v := map[string]*jsonschema.Schema{"get_weather": weather, "get_time": zone}[c.Function.Name]
			if v == nil || c.ID == "" || c.Type != "function" {
				t.Fatalf("call %+v", c)
			}
			validates(t, v, c.Function.Arguments)
		}
	}
	base := `{"messages":[{"role":"user","content":"x"}],"max_tokens":250,"n":4,"seed":3,` + weatherTools
	var resp openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", base+`,"tool_choice":"required"}`), 200, &resp)
	for _, c := range resp.Choices {
		if *c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) == 0 || c.Message.Content != "" {
			t.Fatalf("required: choice %+v", c)
		}
		check(t, c.Message.ToolCalls)
	}
	decodeBody(t, env.post(t, "/v1/chat/completions", base+`,"tool_choice":"required","parallel_tool_calls":false}`), 200, &resp)
	for _, c := range resp.Choices {
		if len(c.Message.ToolCalls) != 1 {
			t.Errorf("required without parallel calls: %d calls", len(c.Message.ToolCalls))
		}
	}
	named := base + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`
	decodeBody(t, env.post(t, "/v1/chat/completions", named), 200, &resp)
	for _, c := range resp.Choices {
		if *c.FinishReason != "stop" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("named: choice %+v", c)
		}
		check(t, c.Message.ToolCalls)
	}
	// Streamed, the named call's arguments arrive in pieces under one id.
	events := readEvents(t, env.post(t, "/v1/chat/completions", strings.TrimSuffix(named, "}")+`,"stream":true}`).Body)
	args := map[int]*strings.Builder{}
	ids := map[int]string{}
	for _, e := range events[:len(events)-1] {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunk.Choices {
			for _, d := range ch.Delta.ToolCalls {
				if d.ID != "" {
					if ids[ch.Index] != "" {
						t.Fatalf("choice %d got a second call id", ch.Index)
					}
					ids[ch.Index] = d.ID
					args[ch.Index] = &strings.Builder{}
				}
				args[ch.Index].WriteString(d.Function.Arguments)
			}
		}
	}
	if len(args) != 4 {
		t.Fatalf("%d streamed calls, want 4", len(args))
	}
	for _, a := range args {
		validates(t, weather, a.String())
	}
}

func TestToolErrors(t *testing.T) {
	env := startExec(t, &randomExec{}, longContext, func(_ *engine.Config, c *Config) { c.ToolParser = "hermes" })
	msgs := `"messages":[{"role":"user","content":"x"}]`
	tests := []struct{ body, param, msg string }{
		{`{` + msgs + `,"tool_choice":"required"}`, "tool_choice", "needs `tools`"},
		{`{` + msgs + `,` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, "tool_choice", "not one of the tools"},
		{`{` + msgs + `,` + weatherTools + `,"tool_choice":"sometimes"}`, "tool_choice", "none, auto, required"},
		{`{` + msgs + `,"tools":[{"type":"retrieval"}]}`, "tools", `"function"`},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"bad name!"}}]}`, "tools", "letters"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer","multipleOf":2}}}}}],"tool_choice":"required"}`, "tools", "multipleOf"},
		{`{` + msgs + `,` + weatherTools + `,"tool_choice":"required","response_format":{"type":"json_object"}}`, "tool_choice", "both constrain"},
	}
	for _, tt := range tests {
		var body openai.ErrorBody
		decodeBody(t, env.post(t, "/v1/chat/completions", tt.body), 400, &body)
		if body.Error.Param == nil || *body.Error.Param != tt.param || !strings.Contains(body.Error.Message, tt.msg) {
			t.Errorf("%s: error %+v, want param %s and %q", tt.body, body.Error, tt.param, tt.msg)
		}
	}
	// A conversation carrying earlier calls and their results renders and runs.
	conv := `{"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"-3C"}],"max_tokens":5,` + weatherTools + `,"tool_choice":"none"}`
	var resp openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", conv), 200, &resp)
}

// TestMalformedToolSchemaRefused: a tool whose parameters are not a JSON
// Schema is a 400 naming tools under every tool_choice, over chat and the
// Responses API, where auto and none served it unchecked; a schema that
// is one, with a keyword the grammar does not build, is still served
// under auto (its calls unchecked, as vLLM serves them).
func TestMalformedToolSchemaRefused(t *testing.T) {
	env := startExec(t, &scriptExec{script: "ok"}, longContext, func(_ *engine.Config, c *Config) { c.ToolParser = "hermes" })
	tool := func(params string) string {
		return `"tools":[{"type":"function","function":{"name":"f","parameters":` + params + `}}]`
	}
	flat := func(params string) string {
		return `"tools":[{"type":"function","name":"f","parameters":` + params + `}]`
	}
	malformed := `{"type":"objekt","properties":{"a":{"type":"string"}}}`
	for _, choice := range []string{"", `,"tool_choice":"auto"`, `,"tool_choice":"none"`, `,"tool_choice":"required"`,
		`,"tool_choice":{"type":"function","function":{"name":"f"}}`} {
		for _, c := range []struct{ path, body string }{
			{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],` + tool(malformed) + choice + `}`},
			{"/v1/responses", `{"input":"x",` + flat(malformed) + strings.Replace(choice, `"function":{"name":"f"}`, `"name":"f"`, 1) + `}`},
		} {
			var body openai.ErrorBody
			decodeBody(t, env.post(t, c.path, c.body), 400, &body)
			where := "tools[0].function.parameters"
			if c.path == "/v1/responses" {
				where = "tools[0].parameters" // the Responses API's tools are flat
			}
			if body.Error.Param == nil || *body.Error.Param != "tools" || !strings.Contains(body.Error.Message, `"objekt" is not a JSON Schema type`) ||
				!strings.Contains(body.Error.Message, where) {
				t.Errorf("%s %s: error %+v, want a 400 naming tools and the type", c.path, choice, body.Error)
			}
		}
	}
	unbuilt := `{"type":"object","properties":{"n":{"type":"integer","multipleOf":2}}}`
	var resp openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],`+tool(unbuilt)+`,"tool_choice":"auto"}`), 200, &resp)
}

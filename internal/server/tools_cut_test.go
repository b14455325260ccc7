package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// chatCalls sends body and returns the calls and finish reason, whole or
// streamed (the deltas merged as a client merges them).
func chatCalls(t *testing.T, env *testEnv, body string, stream bool) ([]openai.ToolCall, string, string) {
	t.Helper()
	if !stream {
		var resp openai.ChatCompletionResponse
		decodeBody(t, env.post(t, "/v1/chat/completions", body), 200, &resp)
		c := resp.Choices[0]
		return c.Message.ToolCalls, *c.FinishReason, c.Message.Content
	}
	events := readEvents(t, env.post(t, "/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`).Body)
	var calls []openai.ToolCall
	var finish string
	var content strings.Builder
	for _, e := range events[:len(events)-1] {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatal(err)
		}
		d := chunk.Choices[0].Delta
		content.WriteString(d.Content)
		for _, tc := range d.ToolCalls {
			if tc.Index == len(calls) {
				if tc.ID == "" || tc.Function.Name == "" {
					t.Fatalf("call %d's first delta %+v has no id or name", tc.Index, tc)
				}
				calls = append(calls, openai.ToolCall{ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name}})
			} else if tc.Index != len(calls)-1 || tc.ID != "" {
				t.Fatalf("delta %+v after %d calls", tc, len(calls))
			}
			calls[tc.Index].Function.Arguments += tc.Function.Arguments
		}
		if f := chunk.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	return calls, finish, content.String()
}

// TestToolCallsCutByLength: a required tool choice cut by max_tokens keeps
// every call that completed and the one it cut, with the arguments it got
// and finish_reason "length", streamed or not, as OpenAI returns it; a
// hermes call under "auto" likewise. (Before, the whole array came back
// as text.)
func TestToolCallsCutByLength(t *testing.T) {
	required := `[{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}, {"name": "get_time", "parameters": {"zone": "CET"}}]`
	auto := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>"
	weather := openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}
	cases := []struct {
		choice, script string
		maxTokens      int
		want           []openai.FunctionCall
		finish         string
	}{
		{`"required"`, required, len(required) + 1, []openai.FunctionCall{weather, {Name: "get_time", Arguments: `{"zone":"CET"}`}}, "tool_calls"},
		{`"required"`, required, strings.Index(required, `"CE`) + 3, []openai.FunctionCall{weather, {Name: "get_time", Arguments: `{"zone": "CE`}}, "length"},
		{`"required"`, required, strings.Index(required, `, {"name": "get_t`) + 17, []openai.FunctionCall{weather}, "length"},
		{`"required"`, required, strings.Index(required, `"Paris"`) + 3, []openai.FunctionCall{{Name: "get_weather", Arguments: `{"city": "Pa`}}, "length"},
		{`"required"`, required, 5, nil, "length"},
		{`"auto"`, auto, strings.Index(auto, `"CE`) + 3, []openai.FunctionCall{weather, {Name: "get_time", Arguments: `{"zone": "CE`}}, "length"},
	}
	for _, tc := range cases {
		env := startExec(t, &scriptExec{tc.script}, longContext, func(_ *engine.Config, c *Config) { c.ToolParser = "hermes" })
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"max_tokens":%d,"tool_choice":%s,%s}`, tc.maxTokens, tc.choice, weatherTools)
		for _, stream := range []bool{false, true} {
			calls, finish, content := chatCalls(t, env, body, stream)
			var got []openai.FunctionCall
			for _, c := range calls {
				if !strings.HasPrefix(c.ID, "call_") {
					t.Errorf("call id %q", c.ID)
				}
				if stream && json.Valid([]byte(c.Function.Arguments)) {
					c.Function.Arguments = compactCalls([]openai.ToolCall{c})[0].Function.Arguments
				}
				got = append(got, c.Function)
			}
			if !cmp.Equal(got, tc.want) || finish != tc.finish || content != "" {
				t.Errorf("%s cut at %d (stream %v): calls %+v finish %q content %q; want %+v %q", tc.choice, tc.maxTokens, stream, got, finish, content, tc.want, tc.finish)
			}
		}
	}
}

// triggerExec writes prefix, then samples uniformly at random among the
// tokens its constraint allows (the end of the sequence as soon as it may,
// once the prefix is out): a model that starts a hermes call and then
// writes anything the mask lets through.
type triggerExec struct {
	prefix string
	mask   []uint64
}

func (x *triggerExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	r.Samples = r.Samples[:0]
	for i := range b.Seqs {
		sb := &b.Seqs[i]
		r.Samples = append(r.Samples, sampling.Result{})
		if !sb.Sample {
			continue
		}
		out := sb.Pos + len(sb.Tokens) - sb.NumPrompt
		if out < len(x.prefix) {
			r.Samples[i] = sampling.Result{Token: int(x.prefix[out])}
			continue
		}
		if x.mask == nil {
			x.mask = make([]uint64, (vocabSize+63)/64)
		}
		sb.Constraint.FillMask(x.mask)
		var allowed []int
		for tok := range vocabSize {
			if x.mask[tok/64]&(1<<(tok%64)) != 0 {
				if tok == eosID {
					allowed = []int{eosID}
					break
				}
				allowed = append(allowed, tok)
			}
		}
		r.Samples[i] = sampling.Result{Token: allowed[sb.RNG.IntN(len(allowed))]}
	}
	return nil
}

// TestToolChoiceAutoCallsFollowTheSchema: under auto the prose is free,
// and from <tool_call> on the call is held to one tool's schema (a lazy
// grammar), so a model writing at random still calls a tool with valid
// arguments.
func TestToolChoiceAutoCallsFollowTheSchema(t *testing.T) {
	env := startExec(t, &triggerExec{prefix: "Let me see.<tool_call>"}, longContext, func(_ *engine.Config, c *Config) { c.ToolParser = "hermes" })
	weather := mustValidator(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":10},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false}`)
	zone := mustValidator(t, `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}`)
	for seed := range 8 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"max_tokens":300,"seed":%d,%s}`, seed, weatherTools)
		calls, finish, content := chatCalls(t, env, body, seed%2 == 1)
		if finish != "tool_calls" || len(calls) != 1 || content != "Let me see." {
			t.Fatalf("seed %d: calls %+v, finish %q, content %q", seed, calls, finish, content)
		}
		v := map[string]*jsonschema.Schema{"get_weather": weather, "get_time": zone}[calls[0].Function.Name]
		if v == nil {
			t.Fatalf("seed %d: call to %q", seed, calls[0].Function.Name)
		}
		validates(t, v, calls[0].Function.Arguments)
	}
}

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
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

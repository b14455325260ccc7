package openai

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeResponsesRequest: no body panics the decoder or the
// translation into a chat request, and every failure is a client error
// (a 400 naming a field, or malformed JSON).
func FuzzDecodeResponsesRequest(f *testing.F) {
	f.Add(`{"model":"m","input":"hi","instructions":"x","max_output_tokens":5,"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"}}}}`)
	f.Add(`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`)
	f.Add(`{"input":[{"type":"item_reference","id":"msg_1"}],"include":["message.output_text.logprobs"],"top_logprobs":2,"stream":true}`)
	f.Add(`{"input":[{"role":"tool"}],"background":true,"store":false}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeResponsesRequest(strings.NewReader(body))
		if err == nil {
			var msgs []ChatMessage
			msgs, err = req.Conversation(nil, func(id string) (InputItem, bool) { return InputItem{Type: "message", Role: "assistant"}, id == "msg_1" })
			if err == nil {
				var chat *ChatCompletionRequest
				if chat, err = req.Chat(msgs); err == nil {
					var g *Generation
					g, err = chat.Validate(served)
					checkDecoded(t, g, ResponsesError(err))
					return
				}
			}
		}
		checkDecoded(t, nil, err)
	})
}

// TestFieldsThatAskForNothing: reasoning {} and effort "none" (what the
// Agents SDK sends for GPT-5.x) and the verbosity values are accepted;
// what reasoning asks for beyond that is refused by its own name, and a
// verbosity OpenAI does not define is a 400 naming it.
func TestFieldsThatAskForNothing(t *testing.T) {
	for _, f := range []string{`"reasoning":{}`, `"reasoning":{"effort":"none"}`, `"reasoning":{"effort":null,"summary":null}`,
		`"reasoning":null`, `"text":{"verbosity":"low"}`, `"text":{"verbosity":"high","format":{"type":"text"}}`,
		`"reasoning":{"effort":"none"},"text":{"verbosity":"low"}`} {
		if _, err := DecodeResponsesRequest(strings.NewReader(`{"input":"x",` + f + `}`)); err != nil {
			t.Errorf("responses with %s: %v, want it accepted", f, err)
		}
	}
	for _, f := range []string{`"reasoning_effort":"none"`, `"verbosity":"low"`, `"verbosity":null`} {
		req, err := DecodeChatRequest(strings.NewReader(`{"messages":[{"role":"user","content":"x"}],` + f + `}`))
		if err == nil {
			_, err = req.Validate(served)
		}
		if err != nil {
			t.Errorf("chat with %s: %v, want it accepted", f, err)
		}
	}
	for _, c := range []struct{ body, param string }{
		{`{"input":"x","reasoning":{"effort":"low"}}`, "reasoning.effort"},
		{`{"input":"x","reasoning":{"effort":"none","summary":"auto"}}`, "reasoning.summary"},
		{`{"input":"x","reasoning":{"generate_summary":"concise"}}`, "reasoning.generate_summary"},
		{`{"input":"x","reasoning":"high"}`, "reasoning"},
		{`{"input":"x","text":{"verbosity":"loud"}}`, "text.verbosity"},
		{`{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"high"}`, "reasoning_effort"},
		{`{"messages":[{"role":"user","content":"x"}],"verbosity":"loud"}`, "verbosity"},
	} {
		var err error
		if strings.Contains(c.body, "messages") {
			var req *ChatCompletionRequest
			if req, err = DecodeChatRequest(strings.NewReader(c.body)); err == nil {
				_, err = req.Validate(served)
			}
		} else {
			_, err = DecodeResponsesRequest(strings.NewReader(c.body))
		}
		var api *Error
		if !errors.As(err, &api) || api.Status != 400 || api.Param != c.param || !strings.Contains(api.Message, c.param) {
			t.Errorf("%s: %v, want a 400 naming %s", c.body, err, c.param)
		}
	}
}

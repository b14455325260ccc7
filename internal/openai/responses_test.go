package openai

import (
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

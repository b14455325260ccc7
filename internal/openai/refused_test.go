package openai

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRefusedFieldsAreNamed: every field of OpenAI's or vLLM's that glassbox
// does not honour is a 400 naming it, while the values that ask for nothing
// (null, the default) pass, so clients that always send them still work.
func TestRefusedFieldsAreNamed(t *testing.T) {
	chat := `"messages":[{"role":"user","content":"x"}]`
	for _, endpoint := range []string{endpointChat, endpointCompletion} {
		decodeFn, base := DecodeChatRequest, chat
		if endpoint == endpointCompletion {
			decodeFn = func(r io.Reader) (*ChatCompletionRequest, error) {
				_, err := DecodeCompletionRequest(r)
				return nil, err
			}
			base = `"prompt":"x"`
		}
		for _, r := range refusals(endpoint) {
			field, value := r.field, `{"surely":"something"}`
			body := "{" + base + `,"` + field + `":` + value + "}"
			if sub, ok := strings.CutPrefix(field, "stream_options."); ok {
				body = "{" + base + `,"stream":true,"stream_options":{"` + sub + `":true}}`
			}
			_, err := decodeFn(strings.NewReader(body))
			var api *Error
			if !errors.As(err, &api) || api.Status != 400 || api.Param != field || !strings.Contains(api.Message, "`"+field+"`") {
				t.Errorf("%s %s=%s: got %v, want a 400 naming it", endpoint, field, value, err)
			}
			if sub, ok := strings.CutPrefix(field, "stream_options."); ok {
				body = "{" + base + `,"stream":true,"stream_options":{"` + sub + `":null}}`
			} else {
				body = "{" + base + `,"` + field + `":null}`
			}
			if _, err := decodeFn(strings.NewReader(body)); err != nil {
				t.Errorf("%s %s=null: %v, want it accepted", endpoint, field, err)
			}
		}
	}
	neutral := []string{`"logit_bias":{}`, `"use_beam_search":false`, `"skip_special_tokens":true`, `"priority":0`,
		`"modalities":["text"]`, `"store":false`, `"tool_choice":"none"`, `"tools":[]`, `"service_tier":"auto"`,
		`"response_format":{"type":"text"}`, `"add_generation_prompt":true`, `"unknown_to_everyone":7`}
	for _, f := range neutral {
		if _, err := DecodeChatRequest(strings.NewReader("{" + chat + "," + f + "}")); err != nil {
			t.Errorf("chat with %s: %v, want it accepted", f, err)
		}
	}
	for _, r := range refusals(endpointEmbedding) {
		_, err := DecodeEmbeddingRequest(strings.NewReader(`{"input":"x","` + r.field + `":{"surely":"something"}}`))
		var api *Error
		if !errors.As(err, &api) || api.Param != r.field {
			t.Errorf("embeddings %s: got %v, want a 400 naming it", r.field, err)
		}
		if _, err := DecodeEmbeddingRequest(strings.NewReader(`{"input":"x","` + r.field + `":null}`)); err != nil {
			t.Errorf("embeddings %s=null: %v", r.field, err)
		}
	}
	if _, err := DecodeCompletionRequest(strings.NewReader(`{"prompt":"x","best_of":1,"suffix":""}`)); err != nil {
		t.Errorf("completion with best_of 1 and an empty suffix: %v", err)
	}
}

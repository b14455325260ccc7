package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

var served = []string{"m", "alias"}

const testMaxModelLen = 100

// resolve runs a body through decode, Validate and Params as the server does.
func resolve(chat bool, body string, promptLen int) (*Generation, sampling.Params, error) {
	var (
		g   *Generation
		err error
	)
	if chat {
		var req *ChatCompletionRequest
		if req, err = DecodeChatRequest(strings.NewReader(body)); err == nil {
			g, err = req.Validate(served)
		}
	} else {
		var req *CompletionRequest
		if req, err = DecodeCompletionRequest(strings.NewReader(body)); err == nil {
			g, err = req.Validate(served)
		}
	}
	if err != nil {
		return nil, sampling.Params{}, err
	}
	switch {
	case promptLen == 0:
		promptLen = 5 // a prompt of no interest to the case
	case promptLen < 0:
		promptLen = 0 // a prompt that is empty once tokenized
	}
	p, err := g.Params(promptLen, testMaxModelLen)
	return g, p, err
}

// errorReply is what the client receives for err.
func errorReply(t *testing.T, err error) (int, ErrorBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	WriteError(rec, err)
	var body ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	return rec.Code, body
}

func TestValidationErrors(t *testing.T) {
	const (
		cmpl = `{"model":"m","prompt":"hi",`
		chat = `{"model":"m","messages":[{"role":"user","content":"hi"}],`
	)
	tests := []struct {
		name      string
		chat      bool
		body      string
		promptLen int
		status    int
		param     string // "" means null
		message   string // a substring of the message
	}{
		{name: "malformed JSON", body: `{"model":`, status: 400, message: "malformed JSON"},
		{name: "syntax error", body: `{"model" "m"}`, status: 400, message: "malformed JSON at byte"},
		{name: "trailing data", body: `{"model":"m","prompt":"x"} {}`, status: 400, message: "after the request object"},
		{name: "empty body", body: ``, status: 400, message: "empty"},
		{name: "not an object", body: `[1,2]`, status: 400, message: "must be a JSON object"},
		{name: "unknown model", body: `{"model":"gpt-9","prompt":"x"}`, status: 404, param: "model", message: "The model `gpt-9` does not exist."},
		{name: "model has wrong type", body: `{"model":3,"prompt":"x"}`, status: 400, param: "model", message: "expected a string"},
		{name: "prompt missing", body: `{"model":"m"}`, status: 400, param: "prompt"},
		{name: "prompt empty array", body: `{"model":"m","prompt":[]}`, status: 400, param: "prompt"},
		{name: "prompt of objects", body: `{"model":"m","prompt":[{}]}`, status: 400, param: "prompt", message: "array of token ids"},
		{name: "prompt mixed", body: `{"model":"m","prompt":["a",1]}`, status: 400, param: "prompt"},
		{name: "prompt fractional id", body: `{"model":"m","prompt":[1.5]}`, status: 400, param: "prompt"},
		{name: "prompt negative id", body: `{"model":"m","prompt":[[1,-2]]}`, status: 400, param: "prompt"},
		{name: "prompt empty token list", promptLen: -1, body: `{"model":"m","prompt":[[]]}`, status: 400, param: "prompt", message: "the prompt is empty"},
		{name: "max_tokens zero", body: cmpl + `"max_tokens":0}`, status: 400, param: "max_tokens"},
		{name: "max_tokens string", body: cmpl + `"max_tokens":"5"}`, status: 400, param: "max_tokens", message: "expected an integer, got string"},
		{name: "max_completion_tokens zero", chat: true, body: chat + `"max_completion_tokens":0}`, status: 400, param: "max_completion_tokens"},
		{name: "temperature too high", body: cmpl + `"temperature":2.5}`, status: 400, param: "temperature"},
		{name: "temperature negative", chat: true, body: chat + `"temperature":-1}`, status: 400, param: "temperature"},
		{name: "top_p zero", body: cmpl + `"top_p":0}`, status: 400, param: "top_p"},
		{name: "top_k below -1", body: cmpl + `"top_k":-2}`, status: 400, param: "top_k"},
		{name: "top_k fractional", body: cmpl + `"top_k":1.5}`, status: 400, param: "top_k"},
		{name: "min_p above 1", body: cmpl + `"min_p":1.5}`, status: 400, param: "min_p"},
		{name: "presence_penalty", body: cmpl + `"presence_penalty":3}`, status: 400, param: "presence_penalty"},
		{name: "frequency_penalty", chat: true, body: chat + `"frequency_penalty":-3}`, status: 400, param: "frequency_penalty"},
		{name: "repetition_penalty zero", body: cmpl + `"repetition_penalty":0}`, status: 400, param: "repetition_penalty"},
		{name: "seed string", body: cmpl + `"seed":"x"}`, status: 400, param: "seed"},
		{name: "stop number", body: cmpl + `"stop":5}`, status: 400, param: "stop", message: "a string or an array of strings"},
		{name: "stop array of numbers", body: cmpl + `"stop":[5]}`, status: 400, param: "stop"},
		{name: "stop_token_ids negative", body: cmpl + `"stop_token_ids":[-1]}`, status: 400, param: "stop_token_ids"},
		{name: "n zero", body: cmpl + `"n":0}`, status: 400, param: "n"},
		{name: "n too large", chat: true, body: chat + `"n":129}`, status: 400, param: "n"},
		{name: "ignore_eos string", body: cmpl + `"ignore_eos":"yes"}`, status: 400, param: "ignore_eos", message: "a boolean"},
		{name: "min_tokens negative", body: cmpl + `"min_tokens":-1}`, status: 400, param: "min_tokens"},
		{name: "min_tokens above max_tokens", body: cmpl + `"min_tokens":5,"max_tokens":4}`, status: 400, param: "min_tokens"},
		{name: "min_tokens above default room", promptLen: 95, chat: true, body: chat + `"min_tokens":10}`, status: 400, param: "min_tokens"},
		{name: "completions logprobs too many", body: cmpl + `"logprobs":21}`, status: 400, param: "logprobs"},
		{name: "completions logprobs negative", body: cmpl + `"logprobs":-1}`, status: 400, param: "logprobs"},
		{name: "completions logprobs bool", body: cmpl + `"logprobs":true}`, status: 400, param: "logprobs"},
		{name: "chat logprobs number", chat: true, body: chat + `"logprobs":5}`, status: 400, param: "logprobs"},
		{name: "top_logprobs without logprobs", chat: true, body: chat + `"top_logprobs":2}`, status: 400, param: "top_logprobs", message: "`logprobs` must be set to true"},
		{name: "top_logprobs too many", chat: true, body: chat + `"logprobs":true,"top_logprobs":21}`, status: 400, param: "top_logprobs"},
		{name: "echo string", body: cmpl + `"echo":"1"}`, status: 400, param: "echo"},
		{name: "user number", body: cmpl + `"user":1}`, status: 400, param: "user"},
		{name: "stream string", chat: true, body: chat + `"stream":"yes"}`, status: 400, param: "stream"},
		{name: "stream_options without stream", chat: true, body: chat + `"stream_options":{"include_usage":true}}`, status: 400, param: "stream_options", message: "stream=True"},
		{name: "stream_options with stream false", body: cmpl + `"stream":false,"stream_options":{"include_usage":true}}`, status: 400, param: "stream_options"},
		{name: "include_usage wrong type", chat: true, body: chat + `"stream":true,"stream_options":{"include_usage":1}}`, status: 400, param: "stream_options.include_usage"},
		{name: "messages missing", chat: true, body: `{"model":"m"}`, status: 400, param: "messages"},
		{name: "messages bad role", chat: true, body: `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, status: 400, param: "messages", message: "robot"},
		{name: "messages not objects", chat: true, body: `{"model":"m","messages":["hi"]}`, status: 400, param: "messages", message: "message object"},
		{name: "content number", chat: true, body: `{"model":"m","messages":[{"role":"user","content":5}]}`, status: 400, param: "messages.content"},
		{name: "content image part", chat: true, body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, status: 400, param: "messages", message: "only \"text\" parts"},
		{name: "prompt plus max_tokens too long", promptLen: 90, body: cmpl + `"max_tokens":20}`, status: 400, param: "max_tokens",
			message: "This model's maximum context length is 100 tokens. However, you requested 110 tokens (90 in the messages, 20 in the completion). Please reduce the length of the messages or completion."},
		{name: "prompt fills the context", promptLen: 100, chat: true, body: chat + `"stream":false}`, status: 400, param: "messages",
			message: "However, your request has 100 input tokens"},
		{name: "prompt over the context", promptLen: 140, body: cmpl + `"stream":false}`, status: 400, param: "prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := resolve(tt.chat, tt.body, tt.promptLen)
			if err == nil {
				t.Fatal("request accepted, want an error")
			}
			status, body := errorReply(t, err)
			if status != tt.status || body.Error.Code != tt.status {
				t.Errorf("status %d, code %d; want %d", status, body.Error.Code, tt.status)
			}
			var param string
			if body.Error.Param != nil {
				param = *body.Error.Param
			}
			if param != tt.param {
				t.Errorf("param %q, want %q (message %q)", param, tt.param, body.Error.Message)
			}
			if !strings.Contains(body.Error.Message, tt.message) {
				t.Errorf("message %q does not contain %q", body.Error.Message, tt.message)
			}
			wantType := TypeBadRequest
			if tt.status == http.StatusNotFound {
				wantType = TypeNotFound
			}
			if body.Error.Type != wantType {
				t.Errorf("type %q, want %q", body.Error.Type, wantType)
			}
		})
	}
}

func TestValidationMapsParams(t *testing.T) {
	defaults := sampling.Defaults()
	tests := []struct {
		name      string
		chat      bool
		body      string
		promptLen int
		want      sampling.Params
		wantGen   Generation
	}{{
		name:    "completions defaults to 16 tokens",
		body:    `{"model":"m","prompt":"hi"}`,
		want:    with(defaults, func(p *sampling.Params) { p.MaxTokens = 16 }),
		wantGen: Generation{Model: "m", N: 1},
	}, {
		name:      "completions default is capped by the room left",
		body:      `{"model":"alias","prompt":"hi"}`,
		promptLen: 95,
		want:      with(defaults, func(p *sampling.Params) { p.MaxTokens = 5 }),
		wantGen:   Generation{Model: "alias", N: 1},
	}, {
		name:      "chat defaults to the room left; no model means the first name",
		chat:      true,
		body:      `{"messages":[{"role":"user","content":"hi"}]}`,
		promptLen: 30,
		want:      with(defaults, func(p *sampling.Params) { p.MaxTokens = 70 }),
		wantGen:   Generation{Model: "m", N: 1},
	}, {
		name: "every completions field",
		body: `{"model":"m","prompt":["a","b"],"max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":-1,"min_p":0.1,
			"seed":42,"stop":"x","stop_token_ids":[3],"n":3,"ignore_eos":true,"min_tokens":2,"logprobs":4,"echo":true,
			"user":"u","presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,"stream":true,
			"stream_options":{"include_usage":true},"include_stop_str_in_output":true}`,
		want: sampling.Params{Temperature: 0.5, TopP: 0.9, MinP: 0.1, PresencePenalty: 0.5, FrequencyPenalty: -0.5,
			RepetitionPenalty: 1.1, Seed: 42, HasSeed: true, MaxTokens: 7, MinTokens: 2, IgnoreEOS: true,
			StopTokenIDs: []int{3}, Logprobs: 4},
		wantGen: Generation{Model: "m", N: 3, Stream: true, IncludeUsage: true, Echo: true, Logprobs: true,
			Stop: []string{"x"}, IncludeStop: true},
	}, {
		name: "chat fields; max_completion_tokens wins",
		chat: true,
		body: `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"a"}]},{"role":"user","content":"b"}],
			"max_tokens":3,"max_completion_tokens":9,"top_k":5,"logprobs":true,"top_logprobs":2,"stop":["s","t"]}`,
		want:    with(defaults, func(p *sampling.Params) { p.MaxTokens, p.TopK, p.Logprobs = 9, 5, 2 }),
		wantGen: Generation{Model: "m", N: 1, Logprobs: true, Stop: []string{"s", "t"}},
	}, {
		name:    "chat logprobs without top_logprobs",
		chat:    true,
		body:    `{"model":"m","messages":[{"role":"user","content":null}],"logprobs":true,"max_tokens":1}`,
		want:    with(defaults, func(p *sampling.Params) { p.MaxTokens, p.Logprobs = 1, 0 }),
		wantGen: Generation{Model: "m", N: 1, Logprobs: true},
	}, {
		name:      "max_tokens exactly fills the context",
		body:      `{"model":"m","prompt":[[1,2]],"max_tokens":98}`,
		promptLen: 2,
		want:      with(defaults, func(p *sampling.Params) { p.MaxTokens = 98 }),
		wantGen:   Generation{Model: "m", N: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, p, err := resolve(tt.chat, tt.body, tt.promptLen)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantGen, *g, cmpopts.IgnoreUnexported(Generation{})); diff != "" {
				t.Errorf("generation (-want +got):\n%s", diff)
			}
		})
	}
}

func with(p sampling.Params, f func(*sampling.Params)) sampling.Params {
	f(&p)
	return p
}

// dead is a dead engine's error, as requests get it.
var dead = &engine.DeadError{Reason: engine.DeathStepTimeout, Err: errors.New("a step ran for more than the step timeout (1m0s)")}

func TestAsError(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		retryAfter string
	}{
		{&sampling.ParamError{Param: "top_p", Msg: "bad"}, 400, ""},
		{fmt.Errorf("submit request: %w", engine.ErrOverloaded), 503, "1"},
		{errors.New("boom"), 500, ""},
		{&http.MaxBytesError{Limit: 10}, 413, ""},
		{fmt.Errorf("submit cmpl-1: %w", engine.ErrClosed), 503, "5"},
		{fmt.Errorf("submit cmpl-1: %w", dead), 503, ""}, // it does not come back: no Retry-After
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		WriteError(rec, tt.err)
		if rec.Code != tt.status || rec.Header().Get("Retry-After") != tt.retryAfter {
			t.Errorf("%v: status %d Retry-After %q, want %d %q", tt.err, rec.Code, rec.Header().Get("Retry-After"), tt.status, tt.retryAfter)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%v: Content-Type %q", tt.err, ct)
		}
	}
}

// TestDeadEngineError: a dead engine's error is a 503 whose message names
// the reason and the cause, the same for every request (without the
// request's own prefix).
func TestDeadEngineError(t *testing.T) {
	e := AsError(fmt.Errorf("submit chatcmpl-7: %w", dead))
	if e.Status != 503 || e.Type != TypeServiceUnavailable || e.RetryAfter != 0 ||
		e.Message != "The server cannot serve: its engine is dead (step_timeout): a step ran for more than the step timeout (1m0s)" {
		t.Errorf("AsError(dead) = %+v", e)
	}
}

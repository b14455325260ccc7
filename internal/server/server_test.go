package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

func TestChatStreamWithUsage(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	msgs := []openai.ChatMessage{{Role: "system", Content: "be terse"}, {Role: "user", Content: "hi"}}
	rendered := chatML(msgs...)
	body := `{"model":"alias","messages":[{"role":"system","content":"be terse"},{"role":"user","content":"hi"}],
		"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`
	resp := env.post(t, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readEvents(t, resp.Body)
	if len(events) < 4 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("events %q: want role, content, usage chunks then [DONE]", events)
	}
	var chunks []openai.ChatCompletionChunk
	for _, e := range events[:len(events)-1] {
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Object != openai.ObjectChatChunk || c.Model != "alias" || !strings.HasPrefix(c.ID, "chatcmpl-") ||
			(len(chunks) > 0 && c.ID != chunks[0].ID) {
			t.Errorf("chunk header %+v", c)
		}
		chunks = append(chunks, c)
	}
	if d := chunks[0].Choices[0].Delta; d.Role != "assistant" {
		t.Errorf("first delta %+v, want the assistant role", d)
	}
	var content strings.Builder
	var finish []string
	for _, c := range chunks[:len(chunks)-1] {
		if len(c.Choices) != 1 || c.Usage != nil {
			t.Fatalf("content chunk %+v", c)
		}
		content.WriteString(c.Choices[0].Delta.Content)
		if f := c.Choices[0].FinishReason; f != nil {
			finish = append(finish, *f)
		}
	}
	if got, want := content.String(), letters('\n', 7); got != want {
		t.Errorf("content %q, want %q", got, want)
	}
	if !cmp.Equal(finish, []string{"length"}) {
		t.Errorf("finish reasons %q, want one \"length\"", finish)
	}
	last := chunks[len(chunks)-1]
	want := &openai.Usage{PromptTokens: len(rendered), CompletionTokens: 7, TotalTokens: len(rendered) + 7}
	if len(last.Choices) != 0 || !cmp.Equal(last.Usage, want, cmpopts.IgnoreFields(openai.Usage{}, "PromptTokensDetails")) {
		t.Errorf("usage chunk %+v, want no choices and usage %+v", last, want)
	}
}

func TestCompletionsNAndEcho(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	var resp openai.CompletionResponse
	decodeBody(t, env.post(t, "/v1/completions",
		`{"model":"test-model","prompt":["hello","xy"],"n":2,"echo":true,"max_tokens":3,"seed":1}`), 200, &resp)
	if !strings.HasPrefix(resp.ID, "cmpl-") || resp.Object != openai.ObjectCompletion || resp.Model != modelName {
		t.Errorf("header %+v", resp)
	}
	length := "length"
	want := []openai.CompletionChoice{
		{Index: 0, Text: "hello" + letters('o', 3), FinishReason: &length},
		{Index: 1, Text: "hello" + letters('o', 3), FinishReason: &length},
		{Index: 2, Text: "xy" + letters('y', 3), FinishReason: &length},
		{Index: 3, Text: "xy" + letters('y', 3), FinishReason: &length},
	}
	if diff := cmp.Diff(want, resp.Choices); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
	wantUsage := openai.Usage{PromptTokens: 7, CompletionTokens: 12, TotalTokens: 19}
	if resp.Usage == nil || !cmp.Equal(*resp.Usage, wantUsage, cmpopts.IgnoreFields(openai.Usage{}, "PromptTokensDetails")) {
		t.Errorf("usage %+v, want %+v", resp.Usage, wantUsage)
	}
}

func TestStopStrings(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	// The prompt "a" continues "bcdefgh…"; "def" spans three tokens.
	t.Run("non-streaming", func(t *testing.T) {
		var resp openai.CompletionResponse
		decodeBody(t, env.post(t, "/v1/completions", `{"prompt":"a","stop":["zz","def"],"max_tokens":20}`), 200, &resp)
		c := resp.Choices[0]
		if c.Text != "bc" || c.FinishReason == nil || *c.FinishReason != "stop" {
			t.Errorf("choice %+v, want text \"bc\" finished by stop", c)
		}
		if resp.Usage.CompletionTokens != 5 {
			t.Errorf("completion tokens %d, want 5 (generation ends at the token completing the stop)", resp.Usage.CompletionTokens)
		}
	})
	t.Run("streaming never shows part of it", func(t *testing.T) {
		events := readEvents(t, env.post(t, "/v1/completions", `{"prompt":"a","stop":"def","max_tokens":20,"stream":true}`).Body)
		var text strings.Builder
		for _, e := range events[:len(events)-1] {
			var c openai.CompletionResponse
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(c.Choices[0].Text, "def") {
				t.Errorf("chunk %q shows part of the stop string", c.Choices[0].Text)
			}
			text.WriteString(c.Choices[0].Text)
		}
		if text.String() != "bc" || events[len(events)-1] != "[DONE]" {
			t.Errorf("text %q, events %q", text.String(), events)
		}
	})
	t.Run("include_stop_str_in_output", func(t *testing.T) {
		var resp openai.ChatCompletionResponse
		decodeBody(t, env.post(t, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"x"}],"stop":"cd","include_stop_str_in_output":true}`), 200, &resp)
		if got := resp.Choices[0].Message.Content; got != "abcd" {
			t.Errorf("content %q, want \"abcd\"", got)
		}
	})
}

func TestEOSEndsWithStop(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 3})
	var resp openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":50}`), 200, &resp)
	c := resp.Choices[0]
	if c.Message.Content != "abc" || c.Message.Role != "assistant" || *c.FinishReason != "stop" {
		t.Errorf("choice %+v, want \"abc\" finished by stop", c)
	}
	// EOS is a generated token, counted as vLLM counts it.
	if resp.Object != openai.ObjectChat || resp.Usage.CompletionTokens != 4 {
		t.Errorf("response %+v, want 4 completion tokens", resp)
	}
}

func TestLogprobs(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	t.Run("chat", func(t *testing.T) {
		var resp openai.ChatCompletionResponse
		decodeBody(t, env.post(t, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"logprobs":true,"top_logprobs":2}`), 200, &resp)
		lp := resp.Choices[0].Logprobs
		want := &openai.ChatLogprobs{Content: []openai.ChatTokenLogprob{
			{Token: "a", Logprob: -0.25, Bytes: []int{'a'}, TopLogprobs: []openai.ChatTopLogprob{
				{Token: "a", Logprob: -0.25, Bytes: []int{'a'}}, {Token: "0", Logprob: -2, Bytes: []int{'0'}}}},
			{Token: "b", Logprob: -0.25, Bytes: []int{'b'}, TopLogprobs: []openai.ChatTopLogprob{
				{Token: "b", Logprob: -0.25, Bytes: []int{'b'}}, {Token: "0", Logprob: -2, Bytes: []int{'0'}}}},
		}}
		if diff := cmp.Diff(want, lp); diff != "" {
			t.Errorf("logprobs (-want +got):\n%s", diff)
		}
	})
	t.Run("completions with echo offsets", func(t *testing.T) {
		var resp openai.CompletionResponse
		decodeBody(t, env.post(t, "/v1/completions", `{"prompt":"ab","max_tokens":2,"logprobs":1,"echo":true}`), 200, &resp)
		want := &openai.CompletionLogprobs{
			Tokens:        []string{"c", "d"},
			TokenLogprobs: []float64{-0.25, -0.25},
			TopLogprobs:   []map[string]float64{{"c": -0.25}, {"d": -0.25}},
			TextOffset:    []int{2, 3},
		}
		if diff := cmp.Diff(want, resp.Choices[0].Logprobs); diff != "" {
			t.Errorf("logprobs (-want +got):\n%s", diff)
		}
	})
}

func TestErrors(t *testing.T) {
	env := startEnv(t, &alphabetExec{}, func(e *engine.Config, _ *Config) { e.MaxModelLen = 64 })
	long := strings.Repeat("x", 60)
	tests := []struct {
		name, path, body string
		status           int
		param, message   string
	}{
		{"unknown model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`,
			404, "model", "The model `nope` does not exist."},
		{"context length", "/v1/completions", `{"prompt":"` + long + `","max_tokens":10}`, 400, "max_tokens",
			"This model's maximum context length is 64 tokens. However, you requested 70 tokens (60 in the messages, 10 in the completion). Please reduce the length of the messages or completion."},
		{"prompt fills the context", "/v1/completions", `{"prompt":"` + long + long + `"}`, 400, "prompt", "your request has 120 input tokens"},
		{"out of vocabulary", "/v1/completions", `{"prompt":[1,2,999]}`, 400, "prompt", "out of vocabulary"},
		{"malformed", "/v1/completions", `{"prompt":`, 400, "", "malformed JSON"},
		{"bad parameter", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_p":7}`, 400, "top_p", "top_p"},
		{"tokenize unknown model", "/tokenize", `{"model":"nope","prompt":"x"}`, 404, "model", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body openai.ErrorBody
			decodeBody(t, env.post(t, tt.path, tt.body), tt.status, &body)
			param := ""
			if body.Error.Param != nil {
				param = *body.Error.Param
			}
			if body.Error.Code != tt.status || param != tt.param || !strings.Contains(body.Error.Message, tt.message) {
				t.Errorf("error %+v (param %q), want code %d param %q message containing %q", body.Error, param, tt.status, tt.param, tt.message)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	env := startEnv(t, &alphabetExec{}, func(_ *engine.Config, c *Config) {
		c.APIKey = "sekret"
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "# metrics") })
	})
	chat := `{"messages":[{"role":"user","content":"x"}],"max_tokens":1}`
	for _, auth := range []string{"", "Bearer wrong", "sekret", "Bearer sekret2"} {
		var body openai.ErrorBody
		decodeBody(t, env.post(t, "/v1/chat/completions", chat, "Authorization", auth), 401, &body)
		if body.Error.Code != 401 || body.Error.Type != openai.TypeAuthentication {
			t.Errorf("Authorization %q: error %+v", auth, body.Error)
		}
	}
	var ok openai.ChatCompletionResponse
	decodeBody(t, env.post(t, "/v1/chat/completions", chat, "Authorization", "Bearer sekret"), 200, &ok)
	if resp := env.post(t, "/tokenize", `{"prompt":"x"}`); resp.StatusCode != 401 {
		t.Errorf("/tokenize without a key: status %d, want 401", resp.StatusCode)
	}
	// Probes stay open; everything else, /metrics included, needs the key
	// (vLLM leaves /metrics, /version and the profiler open).
	for path, want := range map[string]int{"/health": 200, "/ready": 200, "/version": 401, "/metrics": 401, "/metrics/": 401, "/debug/engine": 401} {
		for _, auth := range []string{"", "Bearer sekret"} {
			req, _ := http.NewRequest(http.MethodGet, env.url+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
				want = 200
			}
			resp, err := env.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s with Authorization %q: status %d, want %d", path, auth, resp.StatusCode, want)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, env.url+"/v1/models", nil)
	resp, err := env.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/v1/models without a key: status %d, want 401", resp.StatusCode)
	}
}

func TestUnknownRoutesGetOpenAIErrors(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	tests := []struct {
		method, path string
		status       int
		allow, msg   string
	}{
		{"PUT", "/v1/responses/resp_1", 405, "GET, DELETE", "use GET or DELETE"},
		{"GET", "/v1/responses/resp_1/cancel", 405, "POST", "use POST"},
		{"GET", "/v1/responses/resp_1", 404, "", "Response with id 'resp_1' not found."},
		{"GET", "/v1/nope", 404, "", "Invalid URL (GET /v1/nope)"},
		{"GET", "/", 404, "", "Invalid URL (GET /)"},
		{"GET", "/v1/chat/completions", 405, "POST", "Method GET is not allowed"},
		{"DELETE", "/v1/models", 405, "GET", "use GET"},
		{"POST", "/health", 405, "GET", "use GET"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, env.url+tt.path, strings.NewReader("{}"))
		resp, err := env.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body openai.ErrorBody
		decodeBody(t, resp, tt.status, &body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tt.method, tt.path, ct)
		}
		if got := resp.Header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, got, tt.allow)
		}
		if body.Error.Code != tt.status || !strings.Contains(body.Error.Message, tt.msg) {
			t.Errorf("%s %s: error %+v, want code %d and %q", tt.method, tt.path, body.Error, tt.status, tt.msg)
		}
	}
}

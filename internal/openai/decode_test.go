package openai

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPromptShapes(t *testing.T) {
	tests := []struct {
		body string
		want Prompt
	}{
		{`"hello"`, Prompt{Texts: []string{"hello"}}},
		{`["a","b"]`, Prompt{Texts: []string{"a", "b"}}},
		{`[1,2,3]`, Prompt{Tokens: [][]int{{1, 2, 3}}}},
		{`[[1],[2,3]]`, Prompt{Tokens: [][]int{{1}, {2, 3}}}},
		{`null`, Prompt{}},
	}
	for _, tt := range tests {
		var got Prompt
		if err := json.Unmarshal([]byte(tt.body), &got); err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.body, diff)
		}
		if tt.want.Len() == 0 {
			continue
		}
		// Marshal must give back a body that decodes to the same prompt.
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var again Prompt
		if err := json.Unmarshal(b, &again); err != nil || !cmp.Equal(got, again) {
			t.Errorf("%s: round trip gave %s → %+v (%v)", tt.body, b, again, err)
		}
	}
}

func TestMessageContent(t *testing.T) {
	body := `{"model":"m","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"name":"bob"},
		{"role":"assistant","content":null},
		{"role":"tool","content":"42","tool_call_id":"c1"}]}`
	req, err := DecodeChatRequest(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []ChatMessage{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "one\ntwo", Name: "bob"},
		{Role: "assistant"},
		{Role: "tool", Content: "42", ToolCallID: "c1"},
	}
	if diff := cmp.Diff(want, req.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestTokenizeRequests(t *testing.T) {
	tests := []struct {
		name, body string
		param      string // "" when it must be accepted
		tokenize   bool
	}{
		{"prompt", `{"model":"m","prompt":"hi"}`, "", true},
		{"messages", `{"messages":[{"role":"user","content":"hi"}]}`, "", true},
		{"neither", `{"model":"m"}`, "prompt", true},
		{"both", `{"prompt":"x","messages":[]}`, "prompt", true},
		{"bad role", `{"messages":[{"role":"x","content":"hi"}]}`, "messages", true},
		{"detokenize", `{"tokens":[1,2]}`, "", false},
		{"detokenize negative", `{"tokens":[1,-2]}`, "tokens", false},
		{"detokenize wrong type", `{"tokens":"12"}`, "tokens", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.tokenize {
				_, err = DecodeTokenizeRequest(strings.NewReader(tt.body))
			} else {
				_, err = DecodeDetokenizeRequest(strings.NewReader(tt.body))
			}
			switch {
			case tt.param == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.param != "" && (err == nil || AsError(err).Param != tt.param):
				t.Fatalf("err %v, want a 400 for %q", err, tt.param)
			}
		})
	}
}

// checkDecoded asserts the fuzz invariant: a body is either rejected with a
// 4xx API error, or every parameter it yields passes sampling's checks.
func checkDecoded(t *testing.T, g *Generation, err error) {
	t.Helper()
	if err != nil {
		var api *Error
		if !errors.As(err, &api) || api.Status < 400 || api.Status > 404 {
			t.Fatalf("error %v (%T) is not a client error", err, err)
		}
		return
	}
	if g.N < 1 || g.N > MaxN {
		t.Fatalf("accepted n = %d", g.N)
	}
	for _, promptLen := range []int{1, 50, 99, 100, 1000} {
		p, err := g.Params(promptLen, testMaxModelLen)
		if err != nil {
			if AsError(err).Status != http.StatusBadRequest {
				t.Fatalf("Params(%d): %v is not a 400", promptLen, err)
			}
			continue
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Params(%d) = %+v, invalid: %v", promptLen, p, err)
		}
		if promptLen+p.MaxTokens > testMaxModelLen {
			t.Fatalf("Params(%d): max_tokens %d overflows the context", promptLen, p.MaxTokens)
		}
	}
}

func FuzzDecodeCompletionRequest(f *testing.F) {
	f.Add(`{"model":"m","prompt":"hi","max_tokens":5,"stop":["a"],"logprobs":2,"n":2,"echo":true}`)
	f.Add(`{"model":"m","prompt":[[1,2],[3]],"temperature":0,"top_k":-1,"seed":7,"stream":true,"stream_options":{"include_usage":true}}`)
	f.Add(`{"prompt":["x","y"],"min_tokens":3,"max_tokens":2}`)
	f.Add(`{"model":"alias","prompt":[1.5]}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeCompletionRequest(strings.NewReader(body))
		if err == nil {
			var g *Generation
			g, err = req.Validate(served)
			checkDecoded(t, g, err)
			return
		}
		checkDecoded(t, nil, err)
	})
}

func FuzzDecodeChatRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,"logprobs":true,"top_logprobs":3}`)
	f.Add(`{"messages":[{"role":"system","content":[{"type":"text","text":"a"}]}],"stream":true,"n":128}`)
	f.Add(`{"model":"m","messages":[{"role":"tool","content":null}],"top_logprobs":1}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeChatRequest(strings.NewReader(body))
		if err == nil {
			var g *Generation
			g, err = req.Validate(served)
			checkDecoded(t, g, err)
			return
		}
		checkDecoded(t, nil, err)
	})
}

func TestSSEWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewSSEWriter(rec)
	chunks := []CompletionResponse{
		{ID: "a", Object: ObjectCompletion, Choices: []CompletionChoice{{Text: "<b>&"}}},
		{ID: "a", Object: ObjectCompletion, Choices: []CompletionChoice{}, Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
	}
	for _, c := range chunks {
		if err := s.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Error("events were not flushed")
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var got []CompletionResponse
	sc := bufio.NewScanner(rec.Body)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	// Every event is one data line followed by a blank line.
	for i := 0; i < len(lines); i += 2 {
		if i+1 >= len(lines) || lines[i+1] != "" || !strings.HasPrefix(lines[i], "data: ") {
			t.Fatalf("bad framing at line %d: %q", i, lines)
		}
		data := strings.TrimPrefix(lines[i], "data: ")
		if i == len(lines)-2 {
			if data != "[DONE]" {
				t.Errorf("last event %q, want [DONE]", data)
			}
			break
		}
		var c CompletionResponse
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		got = append(got, c)
	}
	if diff := cmp.Diff(chunks, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !strings.Contains(lines[2], `"choices":[]`) {
		t.Errorf("usage chunk %q must carry an empty choices array", lines[2])
	}
}

func TestLogprobsFormats(t *testing.T) {
	var c CompletionLogprobs
	c.Add("a", -0.5, []TopLogprob{{Token: "a", Logprob: -0.5}, {Token: "b", Logprob: -1}}, 3)
	c.Add("c", float32(negInf()), nil, 4)
	want := CompletionLogprobs{
		Tokens:        []string{"a", "c"},
		TokenLogprobs: []float64{-0.5, -9999},
		TopLogprobs:   []map[string]float64{{"a": -0.5, "b": -1}, {"c": -9999}},
		TextOffset:    []int{3, 4},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("completions logprobs (-want +got):\n%s", diff)
	}
	var ch ChatLogprobs
	ch.Add(TopLogprob{Token: "é", Bytes: []byte("é"), Logprob: -0.25}, []TopLogprob{{Token: "x", Bytes: []byte("x"), Logprob: -2}})
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"content":[{"token":"é","logprob":-0.25,"bytes":[195,169],"top_logprobs":[{"token":"x","logprob":-2,"bytes":[120]}]}]}`
	if string(b) != wantJSON {
		t.Errorf("chat logprobs\n got %s\nwant %s", b, wantJSON)
	}
}

func negInf() float64 {
	var zero float64
	return -1 / zero
}

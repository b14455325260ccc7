package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// namedEvent is one event of a Responses stream.
type namedEvent struct {
	name string
	ev   openai.ResponseEvent
	raw  string
}

// readNamedEvents reads `event:` / `data:` pairs, checking that each
// event's name is its data's type.
func readNamedEvents(t *testing.T, r io.Reader) []namedEvent {
	t.Helper()
	var out []namedEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var e namedEvent
			e.name, e.raw = name, strings.TrimPrefix(line, "data: ")
			if err := json.Unmarshal([]byte(e.raw), &e.ev); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			if e.ev.Type != name {
				t.Fatalf("event %q has data of type %q", name, e.ev.Type)
			}
			out = append(out, e)
			name = ""
		default:
			t.Fatalf("line %q", line)
		}
	}
	return out
}

// responseOf decodes a whole Responses answer.
func responseOf(t *testing.T, resp *http.Response) openai.Response {
	t.Helper()
	var r openai.Response
	decodeBody(t, resp, 200, &r)
	return r
}

// outputText joins a response's message text.
func outputText(r openai.Response) string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func storeOn(n int) envOption { return func(_ *engine.Config, c *Config) { c.ResponsesStore = n } }

// TestResponsesText: a string input is a user message; the answer is one
// message item with the generated text, usage as the Responses API counts
// it, status completed, or incomplete when max_output_tokens cut it.
func TestResponsesText(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 6})
	r := responseOf(t, env.post(t, "/v1/responses", `{"model":"alias","input":"hi","instructions":"Be brief."}`))
	prompt := chatML(openai.ChatMessage{Role: "system", Content: "Be brief."}, openai.ChatMessage{Role: "user", Content: "hi"})
	want := letters(prompt[len(prompt)-1], 6)
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "alias" || len(r.Output) != 1 ||
		r.Output[0].Type != "message" || !strings.HasPrefix(r.Output[0].ID, "msg_") || outputText(r) != want || r.IncompleteDetails != nil {
		t.Fatalf("response %+v, want the text %q", r, want)
	}
	if u := r.Usage; u == nil || u.InputTokens != len(prompt) || u.OutputTokens != 7 || u.TotalTokens != len(prompt)+7 {
		t.Errorf("usage %+v, want %d input tokens (the rendered prompt) and 7 output", r.Usage, len(prompt))
	}
	r = responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","max_output_tokens":3}`))
	if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" || len(outputText(r)) != 3 || r.MaxOutputTokens != 3 {
		t.Errorf("cut response %+v", r)
	}
}

// TestResponsesStream: the event sequence vLLM sends, numbered from 0,
// each event named by its type; the deltas make the text the final
// response holds.
func TestResponsesStream(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 5})
	events := readNamedEvents(t, env.post(t, "/v1/responses", `{"input":"hi","stream":true}`).Body)
	var names []string
	var deltas strings.Builder
	for i, e := range events {
		if e.ev.SequenceNumber != i {
			t.Errorf("event %d has sequence_number %d", i, e.ev.SequenceNumber)
		}
		if e.name != "response.output_text.delta" || len(names) == 0 || names[len(names)-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "response.output_text.delta" {
			deltas.WriteString(*e.ev.Delta)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v", names, want)
	}
	final := events[len(events)-1].ev.Response
	if final.Status != "completed" || outputText(*final) != deltas.String() || deltas.Len() != 5 || final.Usage == nil || final.Usage.OutputTokens != 6 {
		t.Errorf("final %+v, deltas %q", final, deltas.String())
	}
	if created := events[0].ev.Response; created.Status != "in_progress" || created.ID != final.ID || len(created.Output) != 0 {
		t.Errorf("created %+v", created)
	}
}

// TestResponsesToolCalls: function tools (flat, as the Responses API
// writes them) with a required choice come back as function_call items,
// whole and streamed as added / arguments deltas / done.
func TestResponsesToolCalls(t *testing.T) {
	script := `[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "parameters": {"zone": "CET"}}]`
	env := startExec(t, &scriptExec{script}, longContext)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
		`{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}}]`
	body := `{"input":"Weather?","tool_choice":"required",` + tools + `}`
	r := responseOf(t, env.post(t, "/v1/responses", body))
	if len(r.Output) != 2 || r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" || r.Output[0].Arguments != `{"city":"Paris"}` ||
		!strings.HasPrefix(r.Output[0].CallID, "call_") || !strings.HasPrefix(r.Output[0].ID, "fc_") || r.Output[1].Name != "get_time" || r.Status != "completed" {
		t.Fatalf("output %+v", r.Output)
	}
	if r.ToolChoice != "required" || len(r.Tools) != 2 {
		t.Errorf("tool_choice %v, tools %+v", r.ToolChoice, r.Tools)
	}
	events := readNamedEvents(t, env.post(t, "/v1/responses", strings.TrimSuffix(body, "}")+`,"stream":true}`).Body)
	args := map[string]string{}
	var added, done int
	for _, e := range events {
		switch e.name {
		case "response.output_item.added":
			added++
		case "response.function_call_arguments.delta":
			args[e.ev.ItemID] += *e.ev.Delta
		case "response.function_call_arguments.done":
			if args[e.ev.ItemID] != *e.ev.Arguments || e.ev.Name == "" {
				t.Errorf("arguments done %s after deltas %q", e.raw, args[e.ev.ItemID])
			}
			done++
		}
	}
	final := events[len(events)-1].ev.Response
	if added != 2 || done != 2 || len(final.Output) != 2 || final.Output[1].Name != "get_time" {
		t.Errorf("streamed: %d added, %d done, final %+v", added, done, final.Output)
	}
	// A named function, flat as the Responses API writes it.
	named := startExec(t, &scriptExec{`{"zone": "CET"}`}, longContext)
	r = responseOf(t, named.post(t, "/v1/responses", `{"input":"x","tool_choice":{"type":"function","name":"get_time"},`+tools+`}`))
	if len(r.Output) != 1 || r.Output[0].Name != "get_time" || r.Output[0].Arguments != `{"zone":"CET"}` {
		t.Errorf("named: %+v", r.Output)
	}
}

// TestResponsesConversation: input items (messages, a function call and
// its output) and previous_response_id render as the chat they make: the
// prompt counted is /tokenize's for the same messages. The store keeps
// responses for previous_response_id, item_reference and GET; without it
// previous_response_id is vLLM's 404.
func TestResponsesConversation(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 3}, longContext, storeOn(8))
	count := func(msgs string) int {
		var tok openai.TokenizeResponse
		decodeBody(t, env.post(t, "/tokenize", `{"messages":`+msgs+`}`), 200, &tok)
		return tok.Count
	}
	items := `[{"role":"user","content":[{"type":"input_text","text":"Weather?"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18 degrees"}]`
	r := responseOf(t, env.post(t, "/v1/responses", `{"input":`+items+`}`))
	chat := `[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18 degrees"}`
	if want := count(chat + `]`); r.Usage.InputTokens != want {
		t.Errorf("items: %d input tokens, want %d (the same chat's)", r.Usage.InputTokens, want)
	}
	first := outputText(r)
	r2 := responseOf(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":"And tomorrow?","previous_response_id":%q}`, r.ID)))
	if want := count(chat + fmt.Sprintf(`,{"role":"assistant","content":%q},{"role":"user","content":"And tomorrow?"}]`, first)); r2.Usage.InputTokens != want {
		t.Errorf("previous_response_id: %d input tokens, want %d", r2.Usage.InputTokens, want)
	}
	if r2.PreviousResponseID == nil || *r2.PreviousResponseID != r.ID || !r2.Store {
		t.Errorf("second response %+v", r2)
	}
	// An item_reference is the stored item.
	r3 := responseOf(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":[{"role":"user","content":"Weather?"},{"type":"item_reference","id":%q}]}`, r.Output[0].ID)))
	if want := count(fmt.Sprintf(`[{"role":"user","content":"Weather?"},{"role":"assistant","content":%q}]`, first)); r3.Usage.InputTokens != want {
		t.Errorf("item_reference: %d input tokens, want %d", r3.Usage.InputTokens, want)
	}
	resp, err := env.srv.Client().Get(env.url + "/v1/responses/" + r2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseOf(t, resp); got.ID != r2.ID || outputText(got) != outputText(r2) {
		t.Errorf("GET: %+v", got)
	}
	// store: false is not kept.
	r4 := responseOf(t, env.post(t, "/v1/responses", `{"input":"x","store":false}`))
	var e openai.ErrorBody
	decodeBody(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":"y","previous_response_id":%q}`, r4.ID)), 404, &e)
	if e.Error.Param == nil || *e.Error.Param != "previous_response_id" || e.Error.Message != fmt.Sprintf("Response with id '%s' not found.", r4.ID) {
		t.Errorf("store false: %+v", e.Error)
	}
	// Without a store nothing is kept: store: true is quietly not honoured.
	plain := startEnv(t, &alphabetExec{eosAt: 3})
	r5 := responseOf(t, plain.post(t, "/v1/responses", `{"input":"x"}`))
	decodeBody(t, plain.post(t, "/v1/responses", fmt.Sprintf(`{"input":"y","previous_response_id":%q}`, r5.ID)), 404, &e)
	if r5.Store {
		t.Errorf("a server without a store says it stored %s", r5.ID)
	}
}

// TestResponsesStoreBounded: the store keeps the most recently used
// responses up to its size.
func TestResponsesStoreBounded(t *testing.T) {
	s := newResponseStore(2)
	for _, id := range []string{"a", "b", "c"} {
		s.put(openai.Response{ID: id, Output: []openai.ResponseItem{{ID: "msg_" + id, Type: "message"}}}, nil, nil)
		if id == "b" {
			s.get("a")
		}
	}
	if _, ok := s.get("b"); ok {
		t.Error("the least recently used response was kept")
	}
	if _, ok := s.item("msg_b"); ok {
		t.Error("an evicted response's item was kept")
	}
	for _, id := range []string{"a", "c"} {
		if _, ok := s.get(id); !ok {
			t.Errorf("%s was evicted", id)
		}
	}
	s.maxBytes = 1500
	s.put(openai.Response{ID: "big"}, []openai.ChatMessage{{Role: "user", Content: strings.Repeat("x", 900)}}, nil)
	if _, ok := s.get("a"); ok || s.bytes > s.maxBytes || s.lru.Len() != 1 {
		t.Errorf("over the byte bound: %d bytes kept", s.bytes)
	}
}

// TestResponsesErrors: what the Responses API asks for and glassbox does
// not serve is refused by name, errors name the Responses field, and the
// body is OpenAI's.
func TestResponsesErrors(t *testing.T) {
	env := startEnv(t, &alphabetExec{}, storeOn(4))
	cases := []struct{ body, param, msg string }{
		{`{}`, "input", "`input` is required"},
		{`{"input":"x","max_output_tokens":100000}`, "max_output_tokens", "maximum context length"},
		{`{"input":"x","background":true,"store":false}`, "background", "`store` is true"},
		{`{"input":"x","background":true,"stream":true}`, "background", "streaming one is not supported"},
		{`{"input":"x","reasoning":{"effort":"low"}}`, "reasoning.effort", "not supported"},
		{`{"input":"x","truncation":"auto"}`, "truncation", "not supported"},
		{`{"input":"x","tools":[{"type":"web_search"}]}`, "tools", "only function tools"},
		{`{"input":"x","include":["reasoning.encrypted_content"]}`, "include", "not supported"},
		{`{"input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{"type":"string","multipleOf":3}}}}`, "text.format", "multipleOf"},
		{`{"input":"x","text":{"format":{"type":"grammar"}}}`, "text.format", "json_schema"},
		{`{"input":[{"type":"item_reference","id":"msg_nope"}]}`, "input", "msg_nope"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "input", "input_image"},
		{`{"input":[{"type":"reasoning","summary":[]}]}`, "input", "reasoning"},
		{`{"input":"x","model":"nope"}`, "model", "does not exist"},
	}
	for _, tc := range cases {
		var e openai.ErrorBody
		resp := env.post(t, "/v1/responses", tc.body)
		status := 400
		if tc.param == "model" {
			status = 404
		}
		decodeBody(t, resp, status, &e)
		if e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: %+v, want param %s and %q", tc.body, e.Error, tc.param, tc.msg)
		}
	}
}

// TestResponsesStructuredOutput: text.format json_schema holds the output
// to the schema, as response_format does for chat.
func TestResponsesStructuredOutput(t *testing.T) {
	env := startExec(t, &randomExec{})
	person := mustValidator(t, personSchema)
	for _, stream := range []string{"false", "true"} {
		body := `{"input":"who?","seed":3,"max_output_tokens":200,"stream":` + stream + `,"text":{"format":{"type":"json_schema","name":"p","strict":true,"schema":` + personSchema + `}}}`
		var r openai.Response
		if stream == "true" {
			events := readNamedEvents(t, env.post(t, "/v1/responses", body).Body)
			r = *events[len(events)-1].ev.Response
		} else {
			r = responseOf(t, env.post(t, "/v1/responses", body))
		}
		if r.Status != "completed" || r.Text.Format == nil || r.Text.Format.Type != "json_schema" {
			t.Fatalf("stream %s: %+v", stream, r)
		}
		validates(t, person, outputText(r))
	}
}

// TestResponsesAgentDefaults: what the Agents SDK's Agent without a model
// sends (reasoning effort "none", text.verbosity "low") is served, the
// verbosity given back in the response's text as sent.
func TestResponsesAgentDefaults(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 4})
	r := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","reasoning":{"effort":"none"},"text":{"verbosity":"low"}}`))
	if r.Status != "completed" || outputText(r) == "" || r.Text.Verbosity == nil || *r.Text.Verbosity != "low" || r.Text.Format == nil || r.Text.Format.Type != "text" {
		t.Errorf("response %+v, text %+v", r, r.Text)
	}
}

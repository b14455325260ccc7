package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// do sends a request with a method and no body.
func (e *testEnv) do(t *testing.T, method, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// waitStatus polls GET /v1/responses/{id} until the response has status.
func waitStatus(t *testing.T, env *testEnv, id, status string) openai.Response {
	t.Helper()
	for {
		r := responseOf(t, env.do(t, http.MethodGet, "/v1/responses/"+id))
		if r.Status == status {
			return r
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("response %s stayed %s, want %s", id, r.Status, status)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestResponsesBackground: background: true answers at once with the
// response queued; it stays queued until its first token, is in_progress
// while it generates, and the store holds it completed, with its output
// and usage, once it ends, whether or not anyone waits.
func TestResponsesBackground(t *testing.T) {
	x := &alphabetExec{eosAt: 6, hold: make(chan struct{}), holdAfter: 0}
	env := startEnv(t, x, storeOn(8))
	released := false
	t.Cleanup(func() {
		if !released {
			close(x.hold)
		}
	})
	q := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","background":true,"metadata":{"k":"v"}}`))
	if q.Status != "queued" || !q.Background || len(q.Output) != 0 || q.Usage != nil || q.Metadata["k"] != "v" {
		t.Fatalf("background answer %+v, want it queued", q)
	}
	// The engine is parked before the first token: still queued.
	if r := responseOf(t, env.do(t, http.MethodGet, "/v1/responses/"+q.ID)); r.Status != "queued" {
		t.Errorf("before its first token the response is %s", r.Status)
	}
	close(x.hold)
	released = true
	env.server.background.Wait()
	r := waitStatus(t, env, q.ID, "completed")
	prompt := chatML(openai.ChatMessage{Role: "user", Content: "hi"})
	if outputText(r) != letters(prompt[len(prompt)-1], 6) || r.Usage == nil || r.Usage.OutputTokens != 7 || !r.Background {
		t.Errorf("completed background response %+v", r)
	}
	// It continues as any stored response does.
	next := responseOf(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":"more","previous_response_id":%q}`, q.ID)))
	if next.Status != "completed" {
		t.Errorf("continuing a background response: %+v", next)
	}
}

// TestResponsesCancel: cancelling a background response ends its
// generation (the engine request aborted), and the store keeps it
// cancelled with what was generated before; in_progress before that. A
// response answered in its request cannot be cancelled; an unknown one is
// vLLM's 404.
func TestResponsesCancel(t *testing.T) {
	x := &alphabetExec{hold: make(chan struct{}), holdAfter: 2}
	env := startEnv(t, x, storeOn(8))
	released := false
	t.Cleanup(func() {
		if !released {
			close(x.hold)
		}
	})
	q := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","background":true,"max_output_tokens":50}`))
	waitStatus(t, env, q.ID, "in_progress")
	c := responseOf(t, env.post(t, "/v1/responses/"+q.ID+"/cancel", ""))
	if c.ID != q.ID || c.Status != "cancelled" {
		t.Fatalf("cancel answered %+v", c)
	}
	env.server.background.Wait() // the generation's goroutine ended with the engine parked
	close(x.hold)
	released = true
	if reason := <-env.obs.finished; reason != "abort" {
		t.Errorf("the cancelled request finished with %q, want abort", reason)
	}
	r := responseOf(t, env.do(t, http.MethodGet, "/v1/responses/"+q.ID))
	if r.Status != "cancelled" || len(r.Output) != 1 || len(outputText(r)) != 2 || r.Output[0].Status != "incomplete" || r.IncompleteDetails != nil {
		t.Errorf("cancelled response %+v, want the 2 tokens generated before, incomplete", r)
	}
	if again := responseOf(t, env.post(t, "/v1/responses/"+q.ID+"/cancel", "")); again.Status != "cancelled" {
		t.Errorf("cancelling again: %+v", again)
	}

	sync := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","max_output_tokens":3}`))
	var e openai.ErrorBody
	decodeBody(t, env.post(t, "/v1/responses/"+sync.ID+"/cancel", ""), 400, &e)
	if !strings.Contains(e.Error.Message, "synchronous") {
		t.Errorf("cancelling a synchronous response: %+v", e.Error)
	}
	decodeBody(t, env.post(t, "/v1/responses/resp_nope/cancel", ""), 404, &e)
	if !strings.Contains(e.Error.Message, "resp_nope") {
		t.Errorf("cancelling an unknown response: %+v", e.Error)
	}
}

// TestResponsesDelete: a deleted response is gone (GET, input_items,
// previous_response_id and its items' references answer 404 or 400), and
// deleting a running background response ends its generation.
func TestResponsesDelete(t *testing.T) {
	x := &alphabetExec{eosAt: 4, hold: make(chan struct{}), holdAfter: 1}
	env := startEnv(t, x, storeOn(8))
	released := false
	t.Cleanup(func() {
		if !released {
			close(x.hold)
		}
	})
	bg := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi","background":true}`))
	var del openai.ResponseDeleted
	decodeBody(t, env.do(t, http.MethodDelete, "/v1/responses/"+bg.ID), 200, &del)
	if del.ID != bg.ID || del.Object != "response" || !del.Deleted {
		t.Errorf("deleted %+v", del)
	}
	env.server.background.Wait()
	close(x.hold)
	released = true
	if reason := <-env.obs.finished; reason != "abort" {
		t.Errorf("the deleted response's request finished with %q, want abort", reason)
	}
	r := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi"}`))
	decodeBody(t, env.do(t, http.MethodDelete, "/v1/responses/"+r.ID), 200, &del)
	var e openai.ErrorBody
	for _, path := range []string{"/v1/responses/" + r.ID, "/v1/responses/" + r.ID + "/input_items", "/v1/responses/" + bg.ID} {
		decodeBody(t, env.do(t, http.MethodGet, path), 404, &e)
	}
	decodeBody(t, env.do(t, http.MethodDelete, "/v1/responses/"+r.ID), 404, &e)
	decodeBody(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":"x","previous_response_id":%q}`, r.ID)), 404, &e)
	decodeBody(t, env.post(t, "/v1/responses", fmt.Sprintf(`{"input":[{"type":"item_reference","id":%q}]}`, r.Output[0].ID)), 400, &e)
}

// TestResponsesInputItems: GET /v1/responses/{id}/input_items lists the
// request's input items, ids kept or given, newest first by default, in
// pages the SDKs' cursor parameters (after, limit, order) walk.
func TestResponsesInputItems(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 3}, storeOn(8), longContext)
	first := responseOf(t, env.post(t, "/v1/responses", `{"input":"hi"}`))
	body := fmt.Sprintf(`{"input":[{"role":"user","content":"a"},{"type":"function_call","id":"fc_mine","call_id":"call_1","name":"f","arguments":"{}"},`+
		`{"type":"function_call_output","call_id":"call_1","output":"42"},{"type":"item_reference","id":%q},`+
		`{"role":"developer","content":[{"type":"input_text","text":"b"}]}],"tools":[{"type":"function","name":"f"}],"tool_choice":"none"}`, first.Output[0].ID)
	r := responseOf(t, env.post(t, "/v1/responses", body))
	type item struct {
		ID, Type, Role, Status, Name, Arguments, Output string
		CallID                                          string `json:"call_id"`
		Content                                         []struct{ Type, Text string }
	}
	list := func(query string) (page struct {
		Object  string
		Data    []item
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}) {
		t.Helper()
		resp := env.do(t, http.MethodGet, "/v1/responses/"+r.ID+"/input_items"+query)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", query, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		return page
	}
	all := list("?order=asc")
	if all.Object != "list" || len(all.Data) != 5 || all.HasMore {
		t.Fatalf("input items %+v", all)
	}
	d := all.Data
	if d[0].Type != "message" || d[0].Role != "user" || len(d[0].Content) != 1 || d[0].Content[0].Type != "input_text" || d[0].Content[0].Text != "a" ||
		!strings.HasPrefix(d[0].ID, "msg_") || d[0].Status != "completed" {
		t.Errorf("user message %+v", d[0])
	}
	if d[1].ID != "fc_mine" || d[1].Type != "function_call" || d[1].CallID != "call_1" || d[1].Name != "f" || d[1].Arguments != "{}" {
		t.Errorf("function call %+v", d[1])
	}
	if d[2].Type != "function_call_output" || d[2].CallID != "call_1" || d[2].Output != "42" || d[2].ID == "" {
		t.Errorf("function call output %+v", d[2])
	}
	if d[3].ID != first.Output[0].ID || d[3].Role != "assistant" || d[3].Content[0].Type != "output_text" || d[3].Content[0].Text != outputText(first) {
		t.Errorf("item reference %+v, want the stored item %+v", d[3], first.Output[0])
	}
	if d[4].Role != "developer" || d[4].Content[0].Text != "b" {
		t.Errorf("developer message %+v", d[4])
	}
	// Newest first, two at a time, as the SDK's pagination walks it.
	var walked []string
	for query := "?limit=2"; ; {
		p := list(query)
		for _, it := range p.Data {
			walked = append(walked, it.ID)
		}
		if !p.HasMore {
			break
		}
		query = "?limit=2&after=" + *p.LastID
	}
	if want := []string{d[4].ID, d[3].ID, d[2].ID, d[1].ID, d[0].ID}; strings.Join(walked, " ") != strings.Join(want, " ") {
		t.Errorf("walked %v, want %v", walked, want)
	}
	if p := list("?order=asc&before=" + d[2].ID + "&limit=1"); len(p.Data) != 1 || p.Data[0].ID != d[1].ID || !p.HasMore {
		t.Errorf("before %s: %+v", d[2].ID, p)
	}
	var e openai.ErrorBody
	for _, c := range []struct{ query, param string }{{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?order=up", "order"},
		{"?after=msg_nope", "after"}, {"?include[]=everything", "include"}} {
		decodeBody(t, env.do(t, http.MethodGet, "/v1/responses/"+r.ID+"/input_items"+c.query), 400, &e)
		if e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %+v, want a 400 naming %s", c.query, e.Error, c.param)
		}
	}
	text := responseOf(t, env.post(t, "/v1/responses", `{"input":"just text"}`))
	resp := env.do(t, http.MethodGet, "/v1/responses/"+text.ID+"/input_items")
	var one struct{ Data []item }
	decodeBody(t, resp, 200, &one)
	if len(one.Data) != 1 || one.Data[0].Role != "user" || one.Data[0].Content[0].Text != "just text" {
		t.Errorf("a string input: %+v", one.Data)
	}
}

// TestResponsesBackgroundNeedsTheStore: without a store there is nowhere
// to keep a background response: a 400 naming background.
func TestResponsesBackgroundNeedsTheStore(t *testing.T) {
	env := startEnv(t, &alphabetExec{eosAt: 3})
	var e openai.ErrorBody
	decodeBody(t, env.post(t, "/v1/responses", `{"input":"x","background":true}`), 400, &e)
	if e.Error.Param == nil || *e.Error.Param != "background" || !strings.Contains(e.Error.Message, "--responses-store-size") {
		t.Errorf("%+v", e.Error)
	}
}

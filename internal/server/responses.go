package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// responseJob is a Responses request being served as a chat completion of
// the conversation it continues.
type responseJob struct {
	*job
	req   *openai.ResponsesRequest
	msgs  []openai.ChatMessage // the conversation, for the store
	input []openai.ListedItem  // the input's items, for the store
	store bool
}

// handleResponses serves POST /v1/responses (OpenAI's Responses API, as
// vLLM serves it): the input, after the conversation previous_response_id
// names, is rendered with the chat template and generated as a chat
// completion, with the same tool calling and structured outputs; the
// output comes back as message and function_call items, whole or as the
// Responses event stream. The engine sees a chat request: the metrics are
// chat's.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	req, err := openai.DecodeResponsesRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rj, err := s.prepareResponse(req, arrival)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rj.readHeaders(r)
	if req.Background {
		s.startBackground(w, r, rj)
		return
	}
	if err := s.submit(rj.job); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Stream {
		s.streamResponse(w, r, rj)
		return
	}
	s.respondResponse(w, r, rj)
}

// prepareResponse builds the conversation and the chat request that serve
// req: a previous_response_id the store does not hold is vLLM's 404, one
// still being generated in the background a 400.
func (s *Server) prepareResponse(req *openai.ResponsesRequest, arrival time.Time) (*responseJob, error) {
	if req.Background && !s.responses.enabled() {
		return nil, openai.BadRequest("background", "background responses are kept in the response store, and this server keeps none: "+
			"start glassbox serve with --responses-store-size above 0")
	}
	var previous []openai.ChatMessage
	if id := req.PreviousResponseID; id != nil && *id != "" {
		stored, ok := s.responses.get(*id)
		if !ok {
			return nil, openai.ResponseNotFound("previous_response_id", *id)
		}
		if st := stored.resp.Status; st == "queued" || st == "in_progress" {
			return nil, openai.BadRequest("previous_response_id", "response %s is %s: continue it once it has ended", *id, st)
		}
		previous = openai.AppendOutput(stored.msgs, stored.resp.Output)
	}
	msgs, err := req.Conversation(previous, s.responses.item)
	if err != nil {
		return nil, err
	}
	chat, err := req.Chat(msgs)
	if err != nil {
		return nil, err
	}
	j, err := s.prepareChat(chat, arrival)
	if err != nil {
		return nil, openai.ResponsesError(err)
	}
	j.id = "resp_" + randomHex(16)
	// As vLLM, store: true (the default) is honoured when the store is on
	// and quietly not otherwise.
	store := s.responses.enabled() && (req.Store == nil || *req.Store)
	return &responseJob{job: j, req: req, msgs: msgs, input: req.InputItems(s.responses.item, newItemID), store: store}, nil
}

// response is the response object with what is known so far.
func (rj *responseJob) response(status string, output []openai.ResponseItem, usage *openai.Usage) openai.Response {
	req, p := rj.req, rj.prompts[0].params
	resp := openai.Response{
		ID: rj.id, Object: "response", CreatedAt: rj.created, Status: status, Instructions: req.Instructions,
		MaxOutputTokens: p.MaxTokens, Model: rj.gen.Model, Output: output, ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		PreviousResponseID: req.PreviousResponseID, Temperature: p.Temperature, TopP: p.TopP, ToolChoice: "auto",
		Tools: req.Tools, Text: openai.ResponseText{Format: &openai.ResponseTextFormat{Type: "text"}}, Truncation: "disabled",
		User: req.User, Metadata: req.Metadata, Store: rj.store, Background: req.Background, ServiceTier: "auto",
	}
	if output == nil {
		resp.Output = []openai.ResponseItem{}
	}
	if resp.Tools == nil {
		resp.Tools = []openai.ResponseTool{}
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if req.Text != nil {
		if req.Text.Format != nil {
			resp.Text.Format = req.Text.Format
		}
		resp.Text.Verbosity = req.Text.Verbosity
	}
	if tc := req.ToolChoice; tc != nil {
		resp.ToolChoice = tc.Mode
		if tc.Mode == "function" {
			resp.ToolChoice = map[string]string{"type": "function", "name": tc.Name}
		}
	}
	if req.Logprobs() && req.TopLogprobs != nil {
		resp.TopLogprobs = *req.TopLogprobs
	}
	if status == "incomplete" {
		resp.IncompleteDetails = &openai.IncompleteDetails{Reason: "max_output_tokens"}
	}
	if usage != nil {
		resp.Usage = &openai.ResponseUsage{InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens,
			InputTokensDetails: openai.InputTokensDetails{CachedTokens: usage.PromptTokensDetails.CachedTokens}}
	}
	return resp
}

// responseStatus is the response's status for a finish reason: cut by
// max_output_tokens it is incomplete.
func responseStatus(finish string) string {
	if finish == "length" {
		return "incomplete"
	}
	return "completed"
}

// responseOutput gathers a response's output as it is generated.
type responseOutput struct {
	started bool
	text    strings.Builder
	lps     []openai.ChatTokenLogprob
	finish  string
}

func (c *responseOutput) add(s *Server, rj *responseJob, ev event) {
	c.text.WriteString(ev.out.Text)
	if lp := s.chatLogprobs(rj.job, &ev.out); lp != nil {
		c.lps = append(c.lps, lp.Content...)
	}
	if f := finishReason(&ev.out); f != nil {
		c.finish = *f
	}
}

// responseItems reads the output into a message item (the prose) and a
// function_call item per call; the last item is incomplete when the
// response is (cut by max_output_tokens) or was cancelled, a call it cut
// kept as a cut call is.
func (s *Server) responseItems(rj *responseJob, c *responseOutput, status string) []openai.ResponseItem {
	finish := c.finish
	if status == "cancelled" {
		finish, status = "length", "incomplete"
	}
	reader := newToolReader(rj.gen.Tools, s.cfg.ToolParser)
	content, deltas := reader.read(c.text.String())
	more, moreDeltas, _ := reader.finish(finish)
	content += more
	var output []openai.ResponseItem
	if content != "" {
		output = append(output, openai.ResponseItem{ID: "msg_" + randomHex(16), Type: "message", Status: status,
			Content: []openai.OutputText{openai.NewOutputText(content, c.lps)}})
	}
	for _, call := range compactCalls(mergeCalls(nil, append(deltas, moreDeltas...))) {
		output = append(output, openai.ResponseItem{ID: "fc_" + randomHex(16), Type: "function_call", Status: "completed",
			CallID: call.ID, Name: call.Function.Name, Arguments: call.Function.Arguments})
	}
	if n := len(output); n > 0 && status == "incomplete" {
		output[n-1].Status = status
	}
	return output
}

// respondResponse waits for the output and writes the response object.
func (s *Server) respondResponse(w http.ResponseWriter, r *http.Request, rj *responseJob) {
	var c responseOutput
	err := s.run(r.Context(), rj.job, func(ev event) error {
		c.add(s, rj, ev)
		return nil
	})
	if err != nil {
		s.endResponse(w, r, rj.job, err)
		return
	}
	status := responseStatus(c.finish)
	resp := rj.response(status, s.responseItems(rj, &c, status), rj.usage())
	if rj.store {
		s.responses.put(resp, rj.msgs, rj.input)
	}
	s.writeJSON(w, r, resp)
}

// streamResponse sends the Responses event stream: response.created and
// response.in_progress, then each output item as it is generated (added,
// its text or arguments in deltas, done), then response.completed with the
// whole response (its status "incomplete" when max_output_tokens cut it),
// as vLLM sends them; a failure after the stream began is an error event.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, rj *responseJob) {
	st := &responseStream{sse: openai.NewSSEWriter(w)}
	initial := rj.response("in_progress", nil, nil)
	if st.send(openai.ResponseEvent{Type: "response.created", Response: &initial}) != nil ||
		st.send(openai.ResponseEvent{Type: "response.in_progress", Response: &initial}) != nil {
		rj.group.Abort()
		return
	}
	reader := newToolReader(rj.gen.Tools, s.cfg.ToolParser)
	var finish string
	err := s.run(r.Context(), rj.job, func(ev event) error {
		content, calls := reader.read(ev.out.Text)
		var lp []openai.ChatTokenLogprob
		if l := s.chatLogprobs(rj.job, &ev.out); l != nil {
			lp = l.Content
		}
		if f := finishReason(&ev.out); f != nil {
			finish = *f
			var more string
			var moreCalls []openai.ToolCallDelta
			more, moreCalls, _ = reader.finish(finish)
			content += more
			calls = append(calls, moreCalls...)
		}
		if err := st.text(content, lp); err != nil {
			return err
		}
		for _, c := range calls {
			if err := st.call(c); err != nil {
				return err
			}
		}
		return nil
	})
	var oe *outputError
	switch {
	case errors.As(err, &oe):
		s.generationFailed(r, rj.id, oe.err)
		e := openai.AsError(oe.err)
		code := e.Type
		_ = st.send(openai.ResponseEvent{Type: "error", Code: &code, Message: e.Message})
		return
	case err != nil:
		s.log.DebugContext(r.Context(), "stream ended early", "id", rj.id, "err", err)
		return
	}
	status := responseStatus(finish)
	if st.close(status) != nil {
		return
	}
	final := rj.response(status, st.items, rj.usage())
	if rj.store {
		s.responses.put(final, rj.msgs, rj.input)
	}
	_ = st.send(openai.ResponseEvent{Type: "response.completed", Response: &final})
}

// responseStream writes one response's events and keeps its items.
type responseStream struct {
	sse   *openai.SSEWriter
	seq   int
	items []openai.ResponseItem
	open  bool            // the last item is still being generated
	buf   strings.Builder // the open message's text
	lps   []openai.ChatTokenLogprob
}

func (st *responseStream) send(ev openai.ResponseEvent) error {
	ev.SequenceNumber = st.seq
	st.seq++
	return st.sse.SendEvent(ev.Type, ev)
}

// at is the open item's index and id, for its events.
func (st *responseStream) at() (*int, string) {
	i := len(st.items) - 1
	return &i, st.items[i].ID
}

// text streams content: the open message's delta, opening one first.
func (st *responseStream) text(delta string, lp []openai.ChatTokenLogprob) error {
	if delta == "" {
		return nil
	}
	if !st.open || st.items[len(st.items)-1].Type != "message" {
		if err := st.close("completed"); err != nil {
			return err
		}
		st.items = append(st.items, openai.ResponseItem{ID: "msg_" + randomHex(16), Type: "message", Status: "in_progress"})
		st.open = true
		st.buf.Reset()
		st.lps = nil
		i, id := st.at()
		item, part, zero := st.items[*i], openai.NewOutputText("", nil), 0
		if err := st.send(openai.ResponseEvent{Type: "response.output_item.added", OutputIndex: i, Item: &item}); err != nil {
			return err
		}
		if err := st.send(openai.ResponseEvent{Type: "response.content_part.added", OutputIndex: i, ItemID: id, ContentIndex: &zero, Part: &part}); err != nil {
			return err
		}
	}
	st.buf.WriteString(delta)
	st.lps = append(st.lps, lp...)
	if lp == nil {
		lp = []openai.ChatTokenLogprob{}
	}
	i, id := st.at()
	zero := 0
	return st.send(openai.ResponseEvent{Type: "response.output_text.delta", OutputIndex: i, ItemID: id, ContentIndex: &zero, Delta: &delta, Logprobs: &lp})
}

// call streams a tool-call delta: a new call opens a function_call item,
// the arguments that follow are its deltas.
func (st *responseStream) call(d openai.ToolCallDelta) error {
	if d.ID != "" {
		if err := st.close("completed"); err != nil {
			return err
		}
		st.items = append(st.items, openai.ResponseItem{ID: "fc_" + randomHex(16), Type: "function_call", Status: "in_progress",
			CallID: d.ID, Name: d.Function.Name})
		st.open = true
		i, _ := st.at()
		item := st.items[*i]
		if err := st.send(openai.ResponseEvent{Type: "response.output_item.added", OutputIndex: i, Item: &item}); err != nil {
			return err
		}
	}
	if d.Function.Arguments == "" || !st.open {
		return nil
	}
	i, id := st.at()
	st.items[*i].Arguments += d.Function.Arguments
	return st.send(openai.ResponseEvent{Type: "response.function_call_arguments.delta", OutputIndex: i, ItemID: id, Delta: &d.Function.Arguments})
}

// close ends the open item with status: its done events.
func (st *responseStream) close(status string) error {
	if !st.open {
		return nil
	}
	st.open = false
	i, id := st.at()
	it := &st.items[*i]
	it.Status = status
	if it.Type == "function_call" {
		args := it.Arguments
		if err := st.send(openai.ResponseEvent{Type: "response.function_call_arguments.done", OutputIndex: i, ItemID: id, Name: it.Name, Arguments: &args}); err != nil {
			return err
		}
		item := *it
		return st.send(openai.ResponseEvent{Type: "response.output_item.done", OutputIndex: i, Item: &item})
	}
	text, zero := st.buf.String(), 0
	part := openai.NewOutputText(text, st.lps)
	it.Content = []openai.OutputText{part}
	lps := part.Logprobs
	if err := st.send(openai.ResponseEvent{Type: "response.output_text.done", OutputIndex: i, ItemID: id, ContentIndex: &zero, Text: &text, Logprobs: &lps}); err != nil {
		return err
	}
	if err := st.send(openai.ResponseEvent{Type: "response.content_part.done", OutputIndex: i, ItemID: id, ContentIndex: &zero, Part: &part}); err != nil {
		return err
	}
	item := *it
	return st.send(openai.ResponseEvent{Type: "response.output_item.done", OutputIndex: i, Item: &item})
}

// randomHex is n random bytes in hex, for ids.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// Background responses (background: true), as vLLM serves them: the
// request is answered at once with the response queued, generation goes
// on without the client, and the store holds the response as it goes
// (queued until its first token, in_progress, then completed, incomplete,
// failed, or cancelled by POST /v1/responses/{id}/cancel or a DELETE).
// The generation's goroutine ends when its request does: the engine
// delivers a final output to every request it accepted, and a cancel or
// delete aborts it.

// startBackground submits rj, stores it queued and answers with it; the
// generation goes on in a goroutine of its own, detached from the HTTP
// request.
func (s *Server) startBackground(w http.ResponseWriter, r *http.Request, rj *responseJob) {
	if err := s.submit(rj.job); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	queued := rj.response("queued", nil, nil)
	if !s.responses.start(queued, rj.msgs, rj.input, cancel) {
		cancel()
		rj.group.Abort()
		s.fail(w, r, openai.BadRequest("background", "the background response is larger than the whole response store"))
		return
	}
	s.background.Go(func() {
		defer cancel()
		s.runBackground(ctx, rj)
	})
	s.writeJSON(w, r, queued)
}

// runBackground generates rj's output and stores the response when it
// ends: cut short by a cancel, its items keep what was generated.
func (s *Server) runBackground(ctx context.Context, rj *responseJob) {
	var c responseOutput
	err := s.run(ctx, rj.job, func(ev event) error {
		if !c.started {
			c.started = true
			s.responses.progress(rj.id)
		}
		c.add(s, rj, ev)
		return nil
	})
	status := responseStatus(c.finish)
	var oe *outputError
	switch {
	case errors.As(err, &oe):
		status = "failed"
		s.log.Error("background response failed", "id", rj.id, "err", oe.err)
	case err != nil:
		status = "cancelled"
	}
	resp := rj.response(status, s.responseItems(rj, &c, status), rj.usage())
	if oe != nil {
		resp.Error = &openai.ResponseError{Code: "server_error", Message: openai.AsError(oe.err).Message}
	}
	s.responses.finish(resp)
}

// progress marks a queued response in_progress: its first token is out.
func (s *responseStore) progress(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		if r := e.Value.(*storedResponse); r.resp.Status == "queued" {
			r.resp.Status = "in_progress"
		}
	}
}

// finish stores a background response as it ended, unless it was deleted
// meanwhile; a cancelled one stays cancelled. It may then be evicted.
func (s *responseStore) finish(resp openai.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[resp.ID]
	if !ok {
		return
	}
	r := e.Value.(*storedResponse)
	if r.resp.Status == "cancelled" {
		resp.Status, resp.IncompleteDetails = "cancelled", nil
	}
	s.bytes -= r.size
	r.resp, r.cancel = resp, nil
	r.size = sizeOf(r)
	s.bytes += r.size
	s.index(r)
	s.evict()
}

// cancel ends a background response that is queued or in progress and
// returns it, cancelled; cancelling a cancelled one returns it again. A
// response answered in its request, or one that has ended, cannot be
// cancelled (400), an unknown one is vLLM's 404.
func (s *responseStore) cancel(id string) (openai.Response, error) {
	if !s.enabled() {
		return openai.Response{}, openai.ResponseNotFound("response_id", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return openai.Response{}, openai.ResponseNotFound("response_id", id)
	}
	r := e.Value.(*storedResponse)
	switch {
	case !r.resp.Background:
		return openai.Response{}, openai.BadRequest("response_id", "Cannot cancel a synchronous response.")
	case r.resp.Status == "cancelled":
	case r.resp.Status != "queued" && r.resp.Status != "in_progress":
		return openai.Response{}, openai.BadRequest("response_id", "Cannot cancel a response that has ended: its status is %s", r.resp.Status)
	default:
		r.resp.Status = "cancelled"
		r.cancel()
	}
	return r.resp, nil
}

// delete drops a response, ending its generation if it runs.
func (s *responseStore) delete(id string) bool {
	if !s.enabled() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return false
	}
	if r := e.Value.(*storedResponse); r.cancel != nil {
		r.cancel()
	}
	s.remove(e)
	return true
}

// handleCancelResponse serves POST /v1/responses/{id}/cancel.
func (s *Server) handleCancelResponse(w http.ResponseWriter, r *http.Request) {
	resp, err := s.responses.cancel(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, r, resp)
}

// handleDeleteResponse serves DELETE /v1/responses/{id}: OpenAI's
// deletion object, or vLLM's 404.
func (s *Server) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.responses.delete(id) {
		s.fail(w, r, openai.ResponseNotFound("response_id", id))
		return
	}
	s.writeJSON(w, r, openai.ResponseDeleted{ID: id, Object: "response", Deleted: true})
}

// handleInputItems serves GET /v1/responses/{id}/input_items: a page of
// the items the response's request gave as input, with OpenAI's cursor
// parameters.
func (s *Server) handleInputItems(w http.ResponseWriter, r *http.Request) {
	q, err := openai.ParseItemQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	stored, ok := s.responses.get(id)
	if !ok {
		s.fail(w, r, openai.ResponseNotFound("response_id", id))
		return
	}
	page, err := openai.Page(stored.input, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, r, page)
}

// newItemID is an input item's id: prefix_ and 32 hex digits.
func newItemID(prefix string) string { return fmt.Sprintf("%s_%s", prefix, randomHex(16)) }

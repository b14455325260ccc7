package server

import (
	"container/list"
	"net/http"
	"sync"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// responseStoreBytes bounds what the stored responses hold, whatever their
// number: a stored response keeps the whole conversation it answered.
const responseStoreBytes = 256 << 20

// responseStore keeps the responses clients may continue
// (previous_response_id), refer to (item_reference) or fetch (GET
// /v1/responses/{id}): the most recently used, up to a number
// (--responses-store-size) and a byte size, the least recently used
// evicted first. vLLM keeps every response when its store is enabled;
// glassbox bounds it so a long-running server cannot fill its memory.
// Safe for concurrent use.
type responseStore struct {
	mu       sync.Mutex
	max      int
	bytes    int64
	lru      *list.List // of *storedResponse, most recent first
	byID     map[string]*list.Element
	items    map[string]openai.ResponseItem // output item id → item
	maxBytes int64
}

// storedResponse is one response and the conversation it answered.
type storedResponse struct {
	resp openai.Response
	msgs []openai.ChatMessage
	size int64
}

func newResponseStore(max int) *responseStore {
	return &responseStore{max: max, maxBytes: responseStoreBytes, lru: list.New(), byID: map[string]*list.Element{}, items: map[string]openai.ResponseItem{}}
}

// enabled reports whether responses are kept at all.
func (s *responseStore) enabled() bool { return s != nil && s.max > 0 }

// put keeps resp, which answered msgs, evicting what no longer fits.
func (s *responseStore) put(resp openai.Response, msgs []openai.ChatMessage) {
	if !s.enabled() {
		return
	}
	size := int64(256)
	for _, m := range msgs {
		size += int64(len(m.Content) + 64)
		for _, c := range m.ToolCalls {
			size += int64(len(c.Function.Arguments) + len(c.Function.Name) + 64)
		}
	}
	for _, it := range resp.Output {
		size += int64(len(it.Arguments) + 64)
		for _, c := range it.Content {
			size += int64(len(c.Text))
		}
	}
	if size > s.maxBytes {
		return // larger than the whole store: not kept
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[resp.ID]; ok {
		s.remove(e)
	}
	s.byID[resp.ID] = s.lru.PushFront(&storedResponse{resp: resp, msgs: msgs, size: size})
	s.bytes += size
	for _, it := range resp.Output {
		s.items[it.ID] = it
	}
	for s.lru.Len() > s.max || s.bytes > s.maxBytes {
		s.remove(s.lru.Back())
	}
}

// remove drops one entry; the caller holds mu.
func (s *responseStore) remove(e *list.Element) {
	r := s.lru.Remove(e).(*storedResponse)
	delete(s.byID, r.resp.ID)
	for _, it := range r.resp.Output {
		delete(s.items, it.ID)
	}
	s.bytes -= r.size
}

// get returns a stored response, marking it used.
func (s *responseStore) get(id string) (*storedResponse, bool) {
	if !s.enabled() {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	s.lru.MoveToFront(e)
	return e.Value.(*storedResponse), true
}

// item finds a stored output item, as a later request's input.
func (s *responseStore) item(id string) (openai.InputItem, bool) {
	if !s.enabled() {
		return openai.InputItem{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	return it.Input(), ok
}

// handleGetResponse serves GET /v1/responses/{id}: a stored response, or
// vLLM's 404.
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	stored, ok := s.responses.get(id)
	if !ok {
		s.fail(w, r, openai.ResponseNotFound("response_id", id))
		return
	}
	s.writeJSON(w, r, stored.resp)
}

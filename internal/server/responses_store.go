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
// (previous_response_id), refer to (item_reference), fetch (GET
// /v1/responses/{id}), list the input of, delete or cancel: the most
// recently used, up to a number (--responses-store-size) and a byte size,
// the least recently used evicted first, but never a background response
// while it runs (the engine's queue bounds how many run). vLLM keeps every
// response when its store is enabled; glassbox bounds it so a
// long-running server cannot fill its memory. Safe for concurrent use: a
// background response's goroutine updates its entry while handlers read
// it, and readers get copies.
type responseStore struct {
	mu       sync.Mutex
	max      int
	bytes    int64
	lru      *list.List // of *storedResponse, most recent first
	byID     map[string]*list.Element
	items    map[string]openai.ResponseItem // output item id → item
	maxBytes int64
}

// storedResponse is one response, the conversation it answered and its
// input items. Its slices are never modified once stored: an update
// replaces them.
type storedResponse struct {
	resp  openai.Response
	msgs  []openai.ChatMessage
	input []openai.ListedItem
	size  int64
	// cancel ends a background response's generation; nil once it has
	// ended (or for a response answered in its request).
	cancel func()
}

func newResponseStore(max int) *responseStore {
	return &responseStore{max: max, maxBytes: responseStoreBytes, lru: list.New(), byID: map[string]*list.Element{}, items: map[string]openai.ResponseItem{}}
}

// enabled reports whether responses are kept at all.
func (s *responseStore) enabled() bool { return s != nil && s.max > 0 }

// sizeOf estimates what an entry holds.
func sizeOf(r *storedResponse) int64 {
	size := int64(256)
	for _, m := range r.msgs {
		size += int64(len(m.Content) + 64)
		for _, c := range m.ToolCalls {
			size += int64(len(c.Function.Arguments) + len(c.Function.Name) + 64)
		}
	}
	for _, it := range r.resp.Output {
		size += int64(len(it.Arguments) + 64)
		for _, c := range it.Content {
			size += int64(len(c.Text))
		}
	}
	for _, it := range r.input {
		size += int64(len(it.Text) + len(it.Arguments) + len(it.Output) + 64)
	}
	return size
}

// put keeps resp, which answered msgs from input, evicting what no longer
// fits.
func (s *responseStore) put(resp openai.Response, msgs []openai.ChatMessage, input []openai.ListedItem) {
	s.insert(&storedResponse{resp: resp, msgs: msgs, input: input})
}

// start keeps a background response, queued; cancel ends its generation.
// It is not evicted until finish. It reports false when the store cannot
// hold it.
func (s *responseStore) start(resp openai.Response, msgs []openai.ChatMessage, input []openai.ListedItem, cancel func()) bool {
	return s.insert(&storedResponse{resp: resp, msgs: msgs, input: input, cancel: cancel})
}

func (s *responseStore) insert(r *storedResponse) bool {
	if !s.enabled() {
		return false
	}
	r.size = sizeOf(r)
	if r.size > s.maxBytes {
		return false // larger than the whole store: not kept
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[r.resp.ID]; ok {
		s.remove(e)
	}
	s.byID[r.resp.ID] = s.lru.PushFront(r)
	s.bytes += r.size
	s.index(r)
	s.evict()
	return true
}

// index makes r's output items referable; the caller holds mu.
func (s *responseStore) index(r *storedResponse) {
	for _, it := range r.resp.Output {
		s.items[it.ID] = it
	}
}

// evict drops the least recently used entries that do not run until the
// store is within its bounds; the caller holds mu.
func (s *responseStore) evict() {
	for e := s.lru.Back(); e != nil && (s.lru.Len() > s.max || s.bytes > s.maxBytes); {
		prev := e.Prev()
		if e.Value.(*storedResponse).cancel == nil {
			s.remove(e)
		}
		e = prev
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

// get returns a copy of a stored response, marking it used.
func (s *responseStore) get(id string) (storedResponse, bool) {
	if !s.enabled() {
		return storedResponse{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return storedResponse{}, false
	}
	s.lru.MoveToFront(e)
	return *e.Value.(*storedResponse), true
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

// handleGetResponse serves GET /v1/responses/{id}: a stored response (a
// background one as it stands), or vLLM's 404.
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	stored, ok := s.responses.get(id)
	if !ok {
		s.fail(w, r, openai.ResponseNotFound("response_id", id))
		return
	}
	s.writeJSON(w, r, stored.resp)
}

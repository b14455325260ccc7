package openai

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
)

// ListedItem is one item of a response's input as GET
// /v1/responses/{id}/input_items lists it: a message, a function call or
// a call's output, each with its id.
type ListedItem struct {
	ID        string
	Type      string // message, function_call, function_call_output
	Role      string // a message's
	Text      string // a message's text
	CallID    string
	Name      string
	Arguments string
	Output    string
}

// MarshalJSON writes the fields of the item's type, as OpenAI lists them:
// an assistant message's text is output_text, others' input_text.
func (it ListedItem) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case "function_call":
		return ResponseItem{ID: it.ID, Type: it.Type, Status: "completed", CallID: it.CallID, Name: it.Name, Arguments: it.Arguments}.MarshalJSON()
	case "function_call_output":
		return json.Marshal(struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Status string `json:"status"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{it.ID, it.Type, "completed", it.CallID, it.Output})
	}
	type part struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations,omitempty"`
	}
	p := part{Type: "input_text", Text: it.Text}
	if it.Role == "assistant" {
		p = part{Type: "output_text", Text: it.Text, Annotations: []any{}}
	}
	return json.Marshal(struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{it.ID, "message", "completed", it.Role, []part{p}})
}

// InputItems lists the request's input as the store keeps it: each item
// with the id the client gave it, the stored item's for an
// item_reference, or one newID makes ("msg", "fc" or "fco" its prefix).
// Conversation has checked the items.
func (r *ResponsesRequest) InputItems(resolve func(id string) (InputItem, bool), newID func(prefix string) string) []ListedItem {
	if r.Input.Text != nil {
		return []ListedItem{{ID: newID("msg"), Type: "message", Role: "user", Text: *r.Input.Text}}
	}
	out := make([]ListedItem, 0, len(r.Input.Items))
	for _, it := range r.Input.Items {
		id := it.ID
		if it.Type == "item_reference" {
			it, _ = resolve(it.ID)
		}
		l := ListedItem{ID: id, Type: it.Type, Role: it.Role, Text: string(it.Content), CallID: it.CallID, Name: it.Name, Arguments: it.Arguments, Output: string(it.Output)}
		prefix := map[string]string{"function_call": "fc", "function_call_output": "fco"}[it.Type]
		if prefix == "" {
			l.Type, prefix = "message", "msg"
		}
		if l.ID == "" {
			l.ID = newID(prefix)
		}
		out = append(out, l)
	}
	return out
}

// ItemQuery is input_items' query: a page of at most Limit items in
// Order, after or before an item's id.
type ItemQuery struct {
	After, Before string
	Limit         int
	Order         string // asc, desc
}

// ParseItemQuery reads the query the SDKs send (after, before, limit
// 1..100, order asc or desc, include); a value out of range is a 400
// naming it. include's values ask for parts of items a text-only server
// never holds (images, file search results, reasoning): accepted, they add
// nothing.
func ParseItemQuery(q url.Values) (ItemQuery, error) {
	iq := ItemQuery{After: q.Get("after"), Before: q.Get("before"), Limit: 20, Order: "desc"}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return iq, BadRequest("limit", "limit must be an integer from 1 to 100, got %q", s)
		}
		iq.Limit = n
	}
	if s := q.Get("order"); s != "" {
		if s != "asc" && s != "desc" {
			return iq, BadRequest("order", "order must be asc or desc, got %q", s)
		}
		iq.Order = s
	}
	known := []string{"message.output_text.logprobs", "message.input_image.image_url", "computer_call_output.output.image_url",
		"file_search_call.results", "code_interpreter_call.outputs", "reasoning.encrypted_content", "web_search_call.action.sources",
		"web_search_call.results"}
	for _, inc := range append(q["include"], q["include[]"]...) {
		if !slices.Contains(known, inc) {
			return iq, BadRequest("include", "include %q is not one of OpenAI's values", inc)
		}
	}
	return iq, nil
}

// ItemList is a page of input items.
type ItemList struct {
	Object  string       `json:"object"` // list
	Data    []ListedItem `json:"data"`
	FirstID *string      `json:"first_id"`
	LastID  *string      `json:"last_id"`
	HasMore bool         `json:"has_more"`
}

// Page is the page of items q asks for: items in q's order, from just
// after q.After (or up to just before q.Before), at most q.Limit. An
// after or before that names no item is a 400 naming it.
func Page(items []ListedItem, q ItemQuery) (ItemList, error) {
	items = slices.Clone(items)
	if q.Order == "desc" {
		slices.Reverse(items)
	}
	find := func(param, id string) (int, error) {
		i := slices.IndexFunc(items, func(it ListedItem) bool { return it.ID == id })
		if i < 0 {
			return 0, BadRequest(param, "%s %q is not an item of this response's input", param, id)
		}
		return i, nil
	}
	lo, hi := 0, len(items)
	if q.After != "" {
		i, err := find("after", q.After)
		if err != nil {
			return ItemList{}, err
		}
		lo = i + 1
	}
	if q.Before != "" {
		i, err := find("before", q.Before)
		if err != nil {
			return ItemList{}, err
		}
		hi = i
	}
	if hi < lo {
		hi = lo
	}
	page := ItemList{Object: "list", Data: items[lo:hi]}
	switch {
	case len(page.Data) <= q.Limit:
	case q.Before != "" && q.After == "": // the items nearest before it
		page.Data, page.HasMore = page.Data[len(page.Data)-q.Limit:], true
	default:
		page.Data, page.HasMore = page.Data[:q.Limit], true
	}
	if n := len(page.Data); n > 0 {
		page.FirstID, page.LastID = &page.Data[0].ID, &page.Data[n-1].ID
	}
	return page, nil
}

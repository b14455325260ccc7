package openai

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
)

// FuzzItemPage: no query panics the parser or the pager, every refusal is
// a 400 naming a parameter, and a page is a run of at most limit items in
// the asked order, after its cursor, with has_more when items are left
// in its direction.
func FuzzItemPage(f *testing.F) {
	for _, q := range []string{"", "limit=2", "order=asc&after=i3", "before=i1&limit=1", "limit=0", "order=sideways", "include[]=message.output_text.logprobs",
		"after=nope", "after=i4&before=i1", "limit=100&order=desc&include=reasoning.encrypted_content"} {
		f.Add(q)
	}
	items := make([]ListedItem, 6)
	for i := range items {
		items[i] = ListedItem{ID: fmt.Sprintf("i%d", i), Type: "message", Role: "user", Text: "t"}
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := ParseItemQuery(values)
		var page ItemList
		if err == nil {
			page, err = Page(items, q)
		}
		if err != nil {
			var api *Error
			if !errors.As(err, &api) || api.Status != 400 || api.Param == "" {
				t.Fatalf("%q: %v, want a 400 naming a parameter", raw, err)
			}
			return
		}
		if len(page.Data) > q.Limit || page.Object != "list" {
			t.Fatalf("%q: %d items, limit %d", raw, len(page.Data), q.Limit)
		}
		ordered := slices.Clone(items)
		if q.Order == "desc" {
			slices.Reverse(ordered)
		}
		if len(page.Data) == 0 {
			if page.FirstID != nil || page.LastID != nil || page.HasMore {
				t.Fatalf("%q: an empty page %+v", raw, page)
			}
			return
		}
		at := slices.IndexFunc(ordered, func(it ListedItem) bool { return it.ID == page.Data[0].ID })
		if at < 0 || at+len(page.Data) > len(ordered) || !slices.EqualFunc(page.Data, ordered[at:at+len(page.Data)], func(a, b ListedItem) bool { return a.ID == b.ID }) {
			t.Fatalf("%q: page %v is not a run of %v", raw, page.Data, ordered)
		}
		if *page.FirstID != page.Data[0].ID || *page.LastID != page.Data[len(page.Data)-1].ID {
			t.Fatalf("%q: first and last ids %s %s", raw, *page.FirstID, *page.LastID)
		}
		if q.After != "" && ordered[at-1].ID != q.After {
			t.Fatalf("%q: the page starts at %s, not after %s", raw, page.Data[0].ID, q.After)
		}
	})
}

// TestItemPage: the SDK's walk (after the last id of each page) visits
// every item once, newest first by default; before takes the items
// nearest before its id.
func TestItemPage(t *testing.T) {
	items := []ListedItem{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	var walked []string
	q := ItemQuery{Limit: 2, Order: "desc"}
	for {
		p, err := Page(items, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Data {
			walked = append(walked, it.ID)
		}
		if !p.HasMore {
			break
		}
		q.After = *p.LastID
	}
	if !slices.Equal(walked, []string{"c", "b", "a"}) {
		t.Errorf("walked %v", walked)
	}
	p, err := Page(items, ItemQuery{Limit: 1, Order: "asc", Before: "c"})
	if err != nil || len(p.Data) != 1 || p.Data[0].ID != "b" || !p.HasMore {
		t.Errorf("before c: %+v %v", p, err)
	}
}

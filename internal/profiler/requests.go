package profiler

import (
	"cmp"
	"slices"
	"time"
)

// slice is one piece of a request's async track: a span (start < end or
// equal) or, with instant set, a point.
type slice struct {
	name       string
	start, end float64
	instant    bool
	args       map[string]any
}

// track is one request's pieces while they are gathered.
type track struct {
	id     string
	order  int // first appearance, for a stable output order
	pieces []slice
	decode *slice // the decode run still open
}

func (t *track) closeDecode() {
	if t.decode != nil {
		t.pieces = append(t.pieces, *t.decode)
		t.decode = nil
	}
}

// requestEvents builds one async track per request seen in the window:
// "queued" (admission to first step, when it falls in the window), each
// "prefill" chunk, "decode" runs (consecutive decode steps merged), and
// "preempted" and "finished" instants, all nested in a slice named after the
// request.
func requestEvents(rec *recording, us func(time.Time) float64) []event {
	tracks := map[string]*track{}
	get := func(id string) *track {
		t := tracks[id]
		if t == nil {
			t = &track{id: id, order: len(tracks)}
			tracks[id] = t
		}
		return t
	}
	for _, s := range rec.steps {
		start, end := us(s.start), us(s.end)
		for _, id := range rec.preempted[s.preempted[0]:s.preempted[1]] {
			t := get(id)
			t.closeDecode()
			t.pieces = append(t.pieces, slice{name: "preempted", start: start, end: start, instant: true})
		}
		for _, q := range rec.seqs[s.seqs[0]:s.seqs[1]] {
			t := get(q.ID)
			if q.Decode {
				if t.decode == nil {
					t.decode = &slice{name: "decode", start: start, args: map[string]any{"tokens": 0}}
				}
				t.decode.end = end
				t.decode.args["tokens"] = t.decode.args["tokens"].(int) + q.Tokens
				continue
			}
			t.closeDecode()
			t.pieces = append(t.pieces, slice{name: "prefill", start: start, end: end, args: map[string]any{"tokens": q.Tokens}})
		}
	}
	for _, f := range rec.finished {
		t := get(f.id)
		t.closeDecode()
		if !f.queued.IsZero() && (f.firstScheduled.IsZero() || !f.firstScheduled.Before(rec.start)) {
			until := f.firstScheduled
			if until.IsZero() {
				until = f.end // it never ran: aborted while waiting
			}
			t.pieces = append(t.pieces, slice{name: "queued", start: us(f.queued), end: us(until)})
		}
		// The engine stamps the end inside the step that finished it; the
		// step's slices end a little later, and "finished" belongs after them.
		at := us(f.end)
		for _, p := range t.pieces {
			at = max(at, p.end)
		}
		t.pieces = append(t.pieces, slice{name: "finished", start: at, end: at, instant: true,
			args: map[string]any{"reason": string(f.reason), "prompt_tokens": f.promptTokens,
				"cached_tokens": f.cachedTokens, "generated_tokens": f.generated}})
	}
	ordered := make([]*track, 0, len(tracks))
	for _, t := range tracks {
		t.closeDecode()
		ordered = append(ordered, t)
	}
	slices.SortFunc(ordered, func(a, b *track) int { return a.order - b.order })
	var evs []event
	for _, t := range ordered {
		evs = append(evs, t.events()...)
	}
	return evs
}

// events lays a track out as begin/end pairs under one enclosing slice.
func (t *track) events() []event {
	slices.SortStableFunc(t.pieces, func(a, b slice) int { return cmp.Compare(a.start, b.start) })
	first, last := t.pieces[0].start, t.pieces[0].end
	for _, p := range t.pieces {
		first, last = min(first, p.start), max(last, p.end)
	}
	ev := func(name, ph string, ts float64, args map[string]any) event {
		e := event{Name: name, Cat: "request", Ph: ph, Ts: ts, Pid: pidRequests, ID: t.id, Args: args}
		if ph == "n" {
			e.S = "p"
		}
		return e
	}
	evs := []event{ev(t.id, "b", first, nil)}
	for _, p := range t.pieces {
		if p.instant {
			evs = append(evs, ev(p.name, "n", p.start, p.args))
			continue
		}
		evs = append(evs, ev(p.name, "b", p.start, p.args), ev(p.name, "e", p.end, nil))
	}
	return append(evs, ev(t.id, "e", last, nil))
}

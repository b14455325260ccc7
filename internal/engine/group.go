package engine

import (
	"context"
	"fmt"
	"slices"
)

// Group is one call's sequences: n samples of each of its prompts, as
// vLLM's parallel sampling fans a request out. Members are numbered in the
// order they are added, sample k of the i-th prompt being member i*n+k;
// each has the request id "<group id>-<member>" and, when seeded, the seed
// plus k, so that seeded samples of one prompt differ. Next hands over
// every member's outputs on one goroutine, with no goroutine per member.
//
// A Group is not safe for concurrent use: one goroutine adds, reads and
// closes it.
type Group struct {
	e       *Engine
	pick    func() *Engine // data parallelism: the rank of each Add (nil: e)
	id      string
	n       int
	ready   chan struct{} // shared by the members' streams: holds a token while one has pending output
	members []*Stream
	engines []*Engine // each member's
	done    []bool    // the final output was handed over
	left    int       // members whose final output was not handed over
	scan    int       // where Next looks first, so no member starves the others
}

// NewGroup starts an empty group of n samples per prompt; id names it and
// prefixes its members' request ids.
func (e *Engine) NewGroup(id string, n int) *Group {
	return &Group{e: e, id: id, n: max(n, 1), ready: make(chan struct{}, 1)}
}

// ID is the group's id.
func (g *Group) ID() string { return g.id }

// Len is the number of members added so far.
func (g *Group) Len() int { return len(g.members) }

// Add submits the n samples of one prompt: each member is base with its
// id, GroupSize n, Group (base's, or the group's id when empty) and its
// seed set, then given to each with its sample index (its own TextSink, its
// own constraint). All n are queued or none: a full queue is ErrOverloaded,
// and the caller may AwaitRoom and add again.
func (g *Group) Add(base Request, each func(k int, r *Request)) error {
	e := g.e
	if g.pick != nil {
		e = g.pick()
	}
	first := len(g.members)
	states := make([]*reqState, 0, g.n)
	for k := range g.n {
		r := base
		r.ID = fmt.Sprintf("%s-%d", g.id, first+k)
		r.GroupSize = g.n
		if r.Group == "" {
			r.Group = g.id
		}
		if r.Params.HasSeed {
			r.Params.Seed += int64(k)
		}
		if each != nil {
			each(k, &r)
		}
		rs, err := e.prepare(&r)
		if err != nil {
			return err
		}
		rs.stream.ready = g.ready
		states = append(states, rs)
	}
	if err := e.enqueue(states); err != nil {
		return err
	}
	for _, rs := range states {
		g.members = append(g.members, rs.stream)
		g.engines = append(g.engines, e)
		g.done = append(g.done, false)
	}
	g.left += len(states)
	return nil
}

// Next waits for the next output of any member and returns it with the
// member's number. It returns false once every member's final output has
// been handed over, or when ctx is done.
func (g *Group) Next(ctx context.Context) (member int, out Output, ok bool) {
	for g.left > 0 {
		for i := range g.members {
			m := (g.scan + i) % len(g.members)
			if g.done[m] {
				continue
			}
			if o, ok := g.members[m].TryNext(); ok {
				g.scan = m + 1
				if o.Finished {
					g.done[m] = true
					g.left--
				}
				return m, o, true
			}
		}
		select {
		case <-g.ready:
		case <-ctx.Done():
			return -1, Output{}, false
		}
	}
	return -1, Output{}, false
}

// Abort ends every unfinished member as aborted; their final outputs still
// come through Next.
func (g *Group) Abort() {
	var seen []*Engine
	for _, e := range g.engines {
		if slices.Contains(seen, e) {
			continue
		}
		seen = append(seen, e)
		var ids []string
		for m, st := range g.members {
			if !g.done[m] && g.engines[m] == e {
				ids = append(ids, st.ID())
			}
		}
		e.abort(ids...)
	}
}

// Close aborts what is unfinished and waits until every member has ended,
// so that their KV blocks are free when it returns. The engine delivers a
// final output to every submitted request, aborted or shut down.
func (g *Group) Close() {
	if g.left == 0 {
		return
	}
	g.Abort()
	for g.left > 0 {
		g.Next(context.Background())
	}
}

package workload

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// gcall is a graph call of one-token messages (user messages named by
// text), after the given calls, its wait after them, its segments.
func gcall(after []int, wait time.Duration, segs []Segment, msgs ...Message) GraphCall {
	if len(msgs) == 0 {
		msgs = []Message{{Role: "user", Content: "hi"}}
	}
	if segs == nil {
		segs = []Segment{{Kind: Unique, Count: len(msgs)}}
	}
	c := GraphCall{After: after, Wait: wait, Messages: msgs, Segments: segs, OutputLen: 4}
	c.Tokens = make([]int, len(msgs))
	for i := range c.Tokens {
		c.Tokens[i] = 1
	}
	return c
}

// graphPlan is a plan of the sessions in one stage of n sessions.
func graphPlan(t *testing.T, st Stage, sessions ...GraphSession) *Plan {
	t.Helper()
	for i := range sessions {
		if sessions[i].ID == "" {
			sessions[i].ID = fmt.Sprintf("s%d", i)
		}
		for j := range sessions[i].Calls {
			sessions[i].Calls[j].ID = fmt.Sprintf("c%d", j)
		}
		sessions[i].SetDepths()
		if err := sessions[i].Check(); err != nil {
			t.Fatal(err)
		}
	}
	if st.Sessions == 0 {
		st.Sessions = len(sessions)
	}
	return &Plan{Graph: &GraphPlan{Sessions: sessions}, Stages: []Stage{st}, Chat: true, Interval: time.Second}
}

// graphSent is a request as the virtual client sent it.
type graphSent struct {
	Request
	sent, end time.Duration
	cancelled bool
}

// driveGraph runs sch in virtual time: request r takes serve(r) and
// answers answer(r) (a failure when its OK is false); a cancelled request
// ends when it is cancelled. It returns the requests in the order sent.
func driveGraph(t *testing.T, sch *Schedule, serve func(Request) time.Duration, answer func(Request) Outcome) []*graphSent {
	t.Helper()
	var out, live []*graphSent
	now := time.Duration(0)
	for range 100000 {
		ready, next := sch.Poll(now)
		for _, r := range ready {
			g := &graphSent{Request: r, sent: now, end: now + serve(r)}
			out, live = append(out, g), append(live, g)
		}
		for _, c := range sch.Cancelled() {
			for _, g := range live {
				if g.Index == c.Index {
					g.end, g.cancelled = now, true
				}
			}
		}
		if sch.Done() {
			return out
		}
		wake := next
		for _, g := range live {
			wake = soonest(wake, g.end)
		}
		if wake < 0 {
			t.Fatalf("at %v the schedule waits on nothing", now)
		}
		now = max(now, wake)
		slices.SortStableFunc(live, func(a, b *graphSent) int { return int(a.end - b.end) })
		for len(live) > 0 && live[0].end <= now {
			g := live[0]
			live = live[1:]
			o := answer(g.Request)
			if g.cancelled {
				o = Outcome{ErrorType: "CancelledError"}
			}
			sch.Finished(g.Request, g.end, o)
		}
	}
	t.Fatal("the schedule never ended")
	return nil
}

func ok(r Request) Outcome {
	return Outcome{OK: true, Text: fmt.Sprintf("answer %d.%d", r.User, r.Call), OutputTokens: 2}
}

// bySessionCall indexes sent requests by session and call.
func bySessionCall(out []*graphSent) map[[2]int]*graphSent {
	m := map[[2]int]*graphSent{}
	for _, g := range out {
		m[[2]int{g.User, g.Call}] = g
	}
	return m
}

// TestGraphFanOutAndJoin: a call that three calls wait on fans out: the
// three go together, its successors' recorded wait after its answer; the
// call that waits on all three joins them, its wait after the last
// answer; a second session, a chain, runs on its own clock beside it.
func TestGraphFanOutAndJoin(t *testing.T) {
	const w = 100 * time.Millisecond
	fan := GraphSession{Calls: []GraphCall{gcall(nil, 0, nil), gcall([]int{0}, w, nil), gcall([]int{0}, w, nil), gcall([]int{0}, w, nil),
		gcall([]int{1, 2, 3}, 2*w, nil)}}
	chain := GraphSession{Calls: []GraphCall{gcall(nil, 0, nil), gcall([]int{0}, w/2, nil), gcall([]int{1}, w/2, nil)}}
	serve := func(r Request) time.Duration {
		if r.User == 0 && r.Call >= 1 && r.Call <= 3 {
			return time.Duration(r.Call) * time.Second
		}
		return 500 * time.Millisecond
	}
	p := graphPlan(t, Stage{}, fan, chain)
	if p.NumRequests() != 8 || p.AgentTurns() != 3 {
		t.Fatalf("%d requests, %d turns; want 8 and 3", p.NumRequests(), p.AgentTurns())
	}
	m := bySessionCall(driveGraph(t, p.Start(), serve, ok))
	if len(m) != 8 {
		t.Fatalf("%d calls sent, want 8", len(m))
	}
	for i := 1; i <= 3; i++ {
		c := m[[2]int{0, i}]
		if want := m[[2]int{0, 0}].end + w; c.sent != want || c.Due != want || c.Send != want || c.Tool != w || c.Turn != 1 {
			t.Errorf("fan-out call %d sent %v (due %v, tool %v, turn %d), want at the root's answer + %v: %v", i, c.sent, c.Due, c.Tool, c.Turn, w, want)
		}
	}
	join := m[[2]int{0, 4}]
	if want := m[[2]int{0, 3}].end + 2*w; join.sent != want || join.Due != want || join.Turn != 2 {
		t.Errorf("the join sent at %v (due %v, turn %d), want at the last of the three answers + %v: %v", join.sent, join.Due, join.Turn, 2*w, want)
	}
	for i := 1; i < 3; i++ {
		if c, prev := m[[2]int{1, i}], m[[2]int{1, i - 1}]; c.sent != prev.end+w/2 {
			t.Errorf("chain call %d sent %v after its predecessor's answer, want %v", i, c.sent-prev.end, w/2)
		}
	}
	if m[[2]int{1, 0}].sent != 0 || m[[2]int{0, 0}].sent != 0 || m[[2]int{1, 0}].SessionID != "s1" {
		t.Errorf("the sessions' roots: %+v %+v; want both at 0", m[[2]int{0, 0}].Request, m[[2]int{1, 0}].Request)
	}
}

// TestGraphSessionPool: a stage runs at most concurrent_sessions at once
// and starts them no faster than its rate, as inference-perf's session
// pool does: the next start's slot is 1/rate after the later of the last
// one's slot and its start.
func TestGraphSessionPool(t *testing.T) {
	var sessions []GraphSession
	for range 4 {
		sessions = append(sessions, GraphSession{Calls: []GraphCall{gcall(nil, 0, nil)}})
	}
	took := []time.Duration{10 * time.Second, 200 * time.Millisecond, 100 * time.Millisecond, time.Second}
	p := graphPlan(t, Stage{Rate: 1, MaxConcurrency: 1}, sessions...)
	m := bySessionCall(driveGraph(t, p.Start(), func(r Request) time.Duration { return took[r.User] }, ok))
	// s1 waits for s0's place (its slot 1 s); its start at 10 s pushes
	// the next slot to 10 s, which s2 takes when s1 ends (10.2 s); s3's
	// slot is 1 s after s2's (11 s), after s2 ended (10.3 s).
	for i, want := range [][2]time.Duration{{0, 0}, {time.Second, 10 * time.Second}, {10 * time.Second, 10200 * time.Millisecond},
		{11 * time.Second, 11 * time.Second}} {
		if g := m[[2]int{i, 0}]; g.Due != want[0] || g.sent != want[1] || g.Send != want[1] {
			t.Errorf("session %d: due %v, sent %v (Send %v); want due %v, sent %v", i, g.Due, g.sent, g.Send, want[0], want[1])
		}
	}
}

// TestGraphFailure: a failed call ends its session, whose place goes to
// the next session then; the calls that wait on it are never sent, the
// session's other branch runs on; when the stage's last session ends,
// what that branch still has out is cancelled.
func TestGraphFailure(t *testing.T) {
	a := GraphSession{Calls: []GraphCall{gcall(nil, 0, nil), gcall([]int{0}, 0, nil), gcall([]int{0}, 0, nil), gcall([]int{1}, 0, nil)}}
	b := GraphSession{Calls: []GraphCall{gcall(nil, 0, nil)}}
	c := GraphSession{Calls: []GraphCall{gcall(nil, 0, nil), gcall([]int{0}, 0, nil)}}
	serve := func(r Request) time.Duration {
		switch {
		case r.User == 0 && r.Call == 2:
			return 30 * time.Second
		case r.User == 1:
			return 10 * time.Second
		}
		return 500 * time.Millisecond
	}
	answer := func(r Request) Outcome {
		if r.User == 0 && r.Call == 1 {
			return Outcome{ErrorType: "HTTP Error 500"}
		}
		return ok(r)
	}
	out := driveGraph(t, graphPlan(t, Stage{MaxConcurrency: 2}, a, b, c).Start(), serve, answer)
	m := bySessionCall(out)
	if _, sent := m[[2]int{0, 3}]; sent || len(out) != 6 {
		t.Fatalf("%d requests, want 6; the call after the failed one sent: %v", len(out), sent)
	}
	if g := m[[2]int{2, 0}]; g.sent != time.Second || m[[2]int{2, 1}].end != 2*time.Second {
		t.Errorf("the third session started at %v, want at the first's failure (1 s), and to run its calls", g.sent)
	}
	if g := m[[2]int{0, 2}]; !g.cancelled || g.end != 10*time.Second {
		t.Errorf("the failed session's other branch: ended %v, cancelled %v; want it to run on until the stage's last session ended (10 s), then cancelled", g.end, g.cancelled)
	}
}

// TestGraphSubstitution: a call's prompt is its recorded conversation with
// its predecessor's messages as sent and answer as answered in their
// place; after a live tool call, the tool results that answer it name the
// live call of the same function; the recorded messages go as they are
// with Recorded, and a live answer whose arguments are not JSON is
// replaced by the recorded one with BadToolCalls.
func TestGraphSubstitution(t *testing.T) {
	sys, u1 := Message{Role: "system", Content: "be brief"}, Message{Role: "user", Content: "plan"}
	recAns := Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "r1", Name: "get", Arguments: "{}"}, {ID: "r2", Name: "put", Arguments: "{}"}}}
	tool1, tool2 := Message{Role: "tool", Content: "got", ToolCallID: "r1"}, Message{Role: "tool", Content: "put", ToolCallID: "r2"}
	session := func() GraphSession {
		return GraphSession{Calls: []GraphCall{
			gcall(nil, 0, nil, sys, u1),
			gcall([]int{0}, 0, []Segment{{Kind: Shared, Count: 2, From: 0}, {Kind: Output, Count: 1, From: 0}, {Kind: Unique, Count: 2}},
				sys, u1, recAns, tool1, tool2),
		}}
	}
	live := []ToolCall{{ID: "L1", Name: "put", Arguments: `{"x":1}`}, {ID: "L2", Name: "get", Arguments: `{"y":2}`}}
	answer := func(r Request) Outcome {
		return Outcome{OK: true, Text: "calling", ToolCalls: live, OutputTokens: 9}
	}
	second := func(p *Plan) Request {
		for _, g := range driveGraph(t, p.Start(), func(Request) time.Duration { return time.Second }, answer) {
			if g.Call == 1 {
				return g.Request
			}
		}
		t.Fatal("call 1 never sent")
		return Request{}
	}
	r := second(graphPlan(t, Stage{}, session()))
	ms := r.Sample.Messages
	if len(ms) != 5 || ms[0].Content != sys.Content || ms[1].Content != u1.Content || ms[2].Content != "calling" || !slices.Equal(ms[2].ToolCalls, live) {
		t.Fatalf("substituted messages %+v", ms)
	}
	if ms[3].ToolCallID != "L2" || ms[4].ToolCallID != "L1" || ms[3].Content != "got" {
		t.Errorf("tool results name %q and %q, want the live calls of their functions, L2 (get) and L1 (put)", ms[3].ToolCallID, ms[4].ToolCallID)
	}
	if r.Sample.PromptLen != 2+9+2 || !strings.Contains(r.Sample.Prompt, "calling") {
		t.Errorf("prompt of %d tokens %q; want the recorded 4 and the live answer's 9", r.Sample.PromptLen, r.Sample.Prompt)
	}
	p := graphPlan(t, Stage{}, session())
	p.Graph.Recorded = true
	if ms := second(p).Sample.Messages; ms[2].Content != "" || ms[2].ToolCalls[0].ID != "r1" || ms[3].ToolCallID != "r1" {
		t.Errorf("Recorded sent %+v, want the recorded messages", ms)
	}
	live[0].Arguments = `{"x":` // a tool-call parser's slip
	p = graphPlan(t, Stage{}, session())
	if ms := second(p).Sample.Messages; ms[2].Content != "calling" {
		t.Errorf("without BadToolCalls the live answer goes as it came, got %+v", ms[2])
	}
	p = graphPlan(t, Stage{}, session())
	p.Graph.BadToolCalls = true
	if ms := second(p).Sample.Messages; ms[2].ToolCalls[0].ID != "r1" || ms[3].ToolCallID != "r1" || ms[4].ToolCallID != "r2" {
		t.Errorf("with BadToolCalls the recorded answer and its ids go in place of a malformed live one, got %+v", ms)
	}
}

// TestGraphTimeouts: a call still waiting for its predecessors the
// predecessor-wait timeout after its session started fails the session
// (it and what waits on it are never sent); a stage's timeout cancels
// what is in flight and the next stage starts an interval after.
func TestGraphTimeouts(t *testing.T) {
	p := graphPlan(t, Stage{}, GraphSession{Calls: []GraphCall{gcall(nil, 0, nil), gcall([]int{0}, 0, nil), gcall(nil, 0, nil)}})
	p.Graph.WaitTimeout = 2 * time.Second
	m := bySessionCall(driveGraph(t, p.Start(), func(r Request) time.Duration { return time.Duration(3-r.Call) * time.Second }, ok))
	if _, sent := m[[2]int{0, 1}]; sent || !m[[2]int{0, 0}].cancelled || m[[2]int{0, 0}].end != 2*time.Second {
		t.Errorf("calls %v: want call 1 never sent, call 0 cancelled at the wait timeout (2 s) when its session, the stage's last, failed", m)
	}
	var sessions []GraphSession
	for range 3 {
		sessions = append(sessions, GraphSession{Calls: []GraphCall{gcall(nil, 0, nil)}})
	}
	p = graphPlan(t, Stage{Sessions: 2, Timeout: 4 * time.Second}, sessions...)
	p.Stages = append(p.Stages, Stage{Sessions: 5})
	out := driveGraph(t, p.Start(), func(Request) time.Duration { return 10 * time.Second }, ok)
	if len(out) != 3 || !out[0].cancelled || out[0].end != 4*time.Second || out[2].User != 2 || out[2].Stage != 1 || out[2].sent != 5*time.Second {
		t.Errorf("stage timeout: %+v; want the first stage's two cancelled at 4 s, the third session in stage 1 at 5 s", out)
	}
}

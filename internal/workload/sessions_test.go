package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// sentTurn is one request as a virtual client sent it.
type sentTurn struct {
	Request
	sent, answered time.Duration
}

// driveVirtual runs sch in virtual time against a server that answers r
// after serve(r), successfully unless fail(r), and returns every request
// in the order sent.
func driveVirtual(t *testing.T, sch *Schedule, serve func(Request) time.Duration, fail func(Request) bool) []sentTurn {
	t.Helper()
	var out []sentTurn
	var pending []int // indexes into out, in flight
	now := time.Duration(0)
	for range 100000 {
		ready, next := sch.Poll(now)
		for _, r := range ready {
			out = append(out, sentTurn{Request: r, sent: now, answered: now + serve(r)})
			pending = append(pending, len(out)-1)
		}
		if sch.Done() {
			if len(pending) > 0 {
				t.Fatalf("done with %d requests in flight", len(pending))
			}
			return out
		}
		wake := next
		for _, i := range pending {
			wake = soonest(wake, out[i].answered)
		}
		if wake < 0 {
			t.Fatalf("at %v the schedule waits on nothing", now)
		}
		now = max(now, wake)
		slices.SortStableFunc(pending, func(a, b int) int { return int(out[a].answered - out[b].answered) })
		for len(pending) > 0 && out[pending[0]].answered <= now {
			q := out[pending[0]]
			pending = pending[1:]
			ok := fail == nil || !fail(q.Request)
			sch.Finished(q.Request, q.answered, Outcome{OK: ok, Text: "answer", OutputTokens: 1})
		}
	}
	t.Fatal("the schedule never ended")
	return nil
}

// agentPlan builds agent sessions of c with a local vocabulary.
func agentPlan(t *testing.T, c AgentConfig) *Plan {
	t.Helper()
	if c.SystemLen == 0 {
		c.SystemLen = 20
	}
	if c.InputLen == 0 {
		c.InputLen, c.OutputLen = 5, 4
	}
	if c.Burstiness == 0 {
		c.Burstiness = 1
	}
	p, err := NewAgentPlan(context.Background(), c, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// bySession groups sent turns by session, in turn order.
func bySession(out []sentTurn) map[int][]sentTurn {
	m := map[int][]sentTurn{}
	for _, r := range out {
		m[r.User] = append(m[r.User], r)
	}
	return m
}

// TestAgentSessionsOwnClocks: each session starts at its offset and sends
// turn k+1 the moment turn k's answer is in and its tool has run, whatever
// the other sessions do: one session whose every answer takes 20 s holds
// no one up, and no turn waits for the other sessions' starts.
func TestAgentSessionsOwnClocks(t *testing.T) {
	const tool = 300 * time.Millisecond
	p := agentPlan(t, AgentConfig{Sessions: 6, Turns: 4, ToolLatency: ToolLatency{Mean: tool}, Rate: 0.5, Burstiness: math.Inf(1)})
	if p.NumRequests() != 24 || len(p.Stages[0].Offsets) != 6 {
		t.Fatalf("%d requests, %d starts", p.NumRequests(), len(p.Stages[0].Offsets))
	}
	serve := func(r Request) time.Duration {
		if r.User == 2 {
			return 20 * time.Second
		}
		return 100*time.Millisecond + time.Duration(r.User)*10*time.Millisecond
	}
	out := driveVirtual(t, p.Start(), serve, nil)
	if len(out) != 24 {
		t.Fatalf("%d requests sent, want 24", len(out))
	}
	for i, r := range out {
		if r.Index != i {
			t.Fatalf("request %d sent as index %d: the indexes must follow the sends", i, r.Index)
		}
	}
	starts := p.Stages[0].Offsets
	for user, turns := range bySession(out) {
		if len(turns) != 4 {
			t.Fatalf("session %d sent %d turns", user, len(turns))
		}
		for k, r := range turns {
			due := starts[user]
			if k > 0 {
				due = turns[k-1].answered + tool
			}
			if r.Turn != k || r.Due != due || r.sent != due {
				t.Errorf("session %d turn %d: turn %d due %v sent %v, want due and sent at %v (its start, or its last answer plus the tool)", user, k, r.Turn, r.Due, r.sent, due)
			}
			if want := map[bool]time.Duration{true: 0, false: tool}[k == 0]; r.Tool != want {
				t.Errorf("session %d turn %d: tool %v, want %v", user, k, r.Tool, want)
			}
			if k > 0 && !strings.HasPrefix(r.Sample.Prompt, turns[k-1].Sample.Prompt+" answer ") {
				t.Errorf("session %d turn %d does not carry its conversation", user, k)
			}
		}
	}
}

// TestAgentSessionsDuration: --duration stops starting sessions and, by
// default, every session it started runs all its turns, however long
// after; cut, the turns due from --duration on are not sent.
func TestAgentSessionsDuration(t *testing.T) {
	const tool = time.Second
	serve := func(Request) time.Duration { return 500 * time.Millisecond }
	for _, cut := range []bool{false, true} {
		// Sessions start at 1, 2, ... 6 s, 5 turns of 1.5 s each.
		p := agentPlan(t, AgentConfig{Sessions: 6, Turns: 5, ToolLatency: ToolLatency{Mean: tool}, Rate: 1, Burstiness: math.Inf(1),
			Until: 3500 * time.Millisecond, Cut: cut})
		out := driveVirtual(t, p.Start(), serve, nil)
		sessions := bySession(out)
		if len(sessions) != 3 {
			t.Fatalf("cut %v: %d sessions started before 3.5 s, want 3 (starts %v)", cut, len(sessions), p.Stages[0].Offsets)
		}
		for user, turns := range sessions {
			want := 5
			if cut {
				// Turn k is due at start + 1.5 s·k: those before 3.5 s go.
				want = int((3500*time.Millisecond-p.Stages[0].Offsets[user]-1)/(1500*time.Millisecond)) + 1
			}
			if len(turns) != want {
				t.Errorf("cut %v: session %d sent %d turns, want %d", cut, user, len(turns), want)
			}
			for _, r := range turns {
				if cut && r.Due >= 3500*time.Millisecond {
					t.Errorf("cut: session %d's turn %d went at %v, after --duration", user, r.Turn, r.sent)
				}
			}
		}
	}
}

// TestAgentSessionsCapSessions: --max-concurrency caps the sessions running
// at once: a session due while both places are taken starts when one
// frees, its first turn held on the client (its queue time), and then runs
// on its own clock.
func TestAgentSessionsCapSessions(t *testing.T) {
	const tool = 200 * time.Millisecond
	p := agentPlan(t, AgentConfig{Sessions: 4, Turns: 3, ToolLatency: ToolLatency{Mean: tool}, Rate: math.Inf(1), MaxConcurrency: 2})
	serve := func(r Request) time.Duration { return time.Duration(1+r.User) * 100 * time.Millisecond }
	out := driveVirtual(t, p.Start(), serve, nil)
	sessions := bySession(out)
	if len(out) != 12 || len(sessions) != 4 {
		t.Fatalf("%d requests of %d sessions", len(out), len(sessions))
	}
	end := func(user int) time.Duration { ts := sessions[user]; return ts[len(ts)-1].answered }
	// Sessions 0 and 1 start at once; 0 ends first (its answers are
	// quicker), so 2 takes its place, then 3 takes 1's.
	for user, startAt := range []time.Duration{0, 0, end(0), end(1)} {
		first := sessions[user][0]
		if first.Due != 0 || first.sent != startAt {
			t.Errorf("session %d: first turn due %v, sent %v; want due 0, sent %v", user, first.Due, first.sent, startAt)
		}
	}
	running := 0
	events := map[time.Duration]int{}
	for user := range sessions {
		events[sessions[user][0].sent]++
		events[end(user)]--
	}
	var times []time.Duration
	for at := range events {
		times = append(times, at)
	}
	slices.Sort(times)
	for _, at := range times {
		if running += events[at]; running > 2 {
			t.Fatalf("%d sessions running at %v", running, at)
		}
	}
}

// TestAgentSessionsHeldAtDuration: a session due before --duration but
// held for a place starts if one frees before --duration, and not after.
func TestAgentSessionsHeldAtDuration(t *testing.T) {
	for _, c := range []struct {
		serve   time.Duration
		started int
	}{{1200 * time.Millisecond, 2}, {1800 * time.Millisecond, 1}} {
		// Sessions due at 1, 2 and 3 s, one place, --duration 2.5 s: the
		// first ends at 1 s + serve, freeing the place for the second.
		p := agentPlan(t, AgentConfig{Sessions: 3, Turns: 1, Rate: 1, Burstiness: math.Inf(1), MaxConcurrency: 1, Until: 2500 * time.Millisecond})
		out := driveVirtual(t, p.Start(), func(Request) time.Duration { return c.serve }, nil)
		if len(out) != c.started {
			t.Fatalf("answers of %v: %d sessions started, want %d", c.serve, len(out), c.started)
		}
		if c.started == 2 && (out[1].Due != 2*time.Second || out[1].sent != time.Second+c.serve) {
			t.Errorf("the held session: due %v, sent %v; want due 2s, sent when the place freed", out[1].Due, out[1].sent)
		}
	}
}

// TestAgentSessionsFailedTurn: a failed turn calls no tool: the session's
// next turn is due at once, with the conversation as it was.
func TestAgentSessionsFailedTurn(t *testing.T) {
	p := agentPlan(t, AgentConfig{Sessions: 1, Turns: 3, ToolLatency: ToolLatency{Mean: time.Second}, Rate: math.Inf(1)})
	out := driveVirtual(t, p.Start(), func(Request) time.Duration { return time.Second }, func(r Request) bool { return r.Turn == 1 })
	if len(out) != 3 {
		t.Fatalf("%d turns", len(out))
	}
	// Turn 0 answers at 1 s, its tool runs to 2 s; turn 1 fails at 3 s.
	if out[1].sent != 2*time.Second || out[2].sent != 3*time.Second || out[2].Tool != 0 {
		t.Errorf("turn 1 sent at %v, turn 2 at %v (tool %v): want 2s, then 3s at once after the failure", out[1].sent, out[2].sent, out[2].Tool)
	}
	if strings.Contains(out[2].Sample.Prompt, out[1].Sample.Prompt) {
		t.Error("a failed turn's prompt joined the conversation")
	}
}

// TestAgentSessionsChatMessages: an agent turn carries its conversation as
// the chat messages an agent sends: the system prompt, then each input as a
// user message and each answer as an assistant message, growing turn by
// turn; a failed turn's input and a conversation without a system prompt
// leave no message behind.
func TestAgentSessionsChatMessages(t *testing.T) {
	roles := func(ms []Message) string {
		var rs []string
		for _, m := range ms {
			rs = append(rs, m.Role)
		}
		return strings.Join(rs, ",")
	}
	p := agentPlan(t, AgentConfig{Sessions: 2, Turns: 4, ToolLatency: ToolLatency{Mean: time.Second}, Rate: math.Inf(1)})
	out := driveVirtual(t, p.Start(), func(Request) time.Duration { return time.Second }, func(r Request) bool { return r.User == 1 && r.Turn == 1 })
	want := map[int][]string{
		0: {"system,user", "system,user,assistant,user", "system,user,assistant,user,assistant,user", "system,user,assistant,user,assistant,user,assistant,user"},
		1: {"system,user", "system,user,assistant,user", "system,user,assistant,user", "system,user,assistant,user,assistant,user"},
	}
	for user, turns := range bySession(out) {
		sys := p.Agent.Sessions[user].System.Prompt
		for k, r := range turns {
			ms := r.Sample.Messages
			if got := roles(ms); got != want[user][k] {
				t.Fatalf("session %d turn %d: roles %s, want %s", user, k, got, want[user][k])
			}
			if ms[0].Content != sys || ms[len(ms)-1].Content != p.Agent.Sessions[user].Turns[k].Input.Prompt {
				t.Errorf("session %d turn %d: messages %q do not start with the system prompt and end with the turn's input", user, k, ms)
			}
			for _, m := range ms {
				if m.Role == "assistant" && m.Content != "answer" {
					t.Errorf("session %d turn %d: assistant message %q, want the answer", user, k, m.Content)
				}
			}
		}
	}
	// Without a system prompt a conversation starts at its first input.
	p, err := NewAgentPlan(context.Background(), AgentConfig{Sessions: 1, Turns: 2, InputLen: 5, OutputLen: 4, Rate: 1, Burstiness: 1},
		simTok{sim.NewVocab()}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	out = driveVirtual(t, p.Start(), func(Request) time.Duration { return time.Second }, nil)
	if got := roles(out[0].Sample.Messages) + ";" + roles(out[1].Sample.Messages); got != "user;user,assistant,user" {
		t.Errorf("without a system prompt: roles %s, want user;user,assistant,user", got)
	}
}

// TestToolLatencyDistributions: the tool latency's draws have the mean
// (and the lognormal its deviation) asked for; what cannot be drawn is
// refused naming the flag.
func TestToolLatencyDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 40000
	for _, c := range []struct {
		tl       ToolLatency
		sd, tail float64 // the standard deviation, and the share of draws over twice the mean
	}{
		{ToolLatency{Mean: 2 * time.Second}, 0, 0},
		{ToolLatency{Distribution: "exponential", Mean: 2 * time.Second}, 2, math.Exp(-2)},
		{ToolLatency{Distribution: "lognormal", Mean: 2 * time.Second, StdDev: 3 * time.Second}, 3, -1},
	} {
		if err := c.tl.Check(); err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		over := 0
		for range n {
			x := c.tl.Draw(rng).Seconds()
			sum, sq = sum+x, sq+x*x
			if x > 4 {
				over++
			}
		}
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean-2) > 0.06 || math.Abs(sd-c.sd) > 0.1*c.sd+1e-9 {
			t.Errorf("%s: mean %.3f s, std dev %.3f s; want 2 and %.1f", c.tl, mean, sd, c.sd)
		}
		if c.tail >= 0 && math.Abs(float64(over)/n-c.tail) > 0.01 {
			t.Errorf("%s: %.3f of draws over 4 s, want %.3f", c.tl, float64(over)/n, c.tail)
		}
	}
	for _, c := range []struct {
		tl   ToolLatency
		flag string
	}{
		{ToolLatency{Distribution: "pareto", Mean: time.Second}, "--agent-tool-latency-distribution"},
		{ToolLatency{Mean: -time.Second}, "--agent-tool-latency"},
		{ToolLatency{Mean: time.Second, StdDev: time.Second}, "--agent-tool-latency-stddev"},
		{ToolLatency{Distribution: "lognormal", Mean: time.Second}, "--agent-tool-latency-stddev"},
		{ToolLatency{Distribution: "exponential", Mean: time.Second, StdDev: -time.Second}, "--agent-tool-latency-stddev"},
	} {
		if err := c.tl.Check(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: %v, want an error naming %s", c.tl, err, c.flag)
		}
	}
	if err := (&AgentConfig{Sessions: 1, Turns: 1, InputLen: 1, OutputLen: 1, Rate: 1, Burstiness: 1, Cut: true}).Check(); err == nil ||
		!strings.Contains(err.Error(), "--duration") {
		t.Errorf("a cut without --duration: %v", err)
	}
}

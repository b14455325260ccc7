package workload

import "time"

// Graph sessions in the Schedule (GraphPlan). A stage starts its sessions
// as inference-perf's session pool does: the next when a place is free
// and the rate allows, each start pushing the next one's slot to 1/Rate
// after the later of its own slot and its start. A started session's calls
// with no predecessor go at once; every other call is made when its last
// predecessor answers and goes its recorded wait after, whatever the other
// sessions do: a fan-out's calls together, a join's when the last of its
// calls has answered. A failed call ends its session (its place frees)
// and skips every call that waits on it; calls of other branches go on
// until the stage ends. Every decision is taken on due times and the
// finish times the schedule is told, so bench and simulate make the same.

// graphState is the schedule's graph sessions.
type graphState struct {
	runs []*graphRun // by session, nil until it starts
	base int         // the stage's first session
	next time.Duration
	cut  bool // the stage's timeout has passed
	// waits are the started sessions' predecessor-wait deadlines, in
	// the order they fall.
	waits []graphWait
}

type graphWait struct {
	at      time.Duration
	session int
}

// graphRun is one started session.
type graphRun struct {
	calls   []callState
	pending int  // calls not yet answered, failed or skipped
	ended   bool // every call answered, or one failed: its place is free
	cut     bool // cancelled with its stage: nothing more of it runs
}

type callPhase int

const (
	callWaiting callPhase = iota // on its predecessors
	callMade                     // a request, queued, sleeping or sent
	callAnswered
	callFailed
	callSkipped // a predecessor failed or waited too long
)

type callState struct {
	phase   callPhase
	waiting int // predecessors not yet answered
	end     time.Duration
	sent    []sentMessage // its messages as sent
	answer  sentMessage   // its live answer
}

// sentMessage is a message with its tokens (and ids, when known).
type sentMessage struct {
	Message
	ids    []int
	tokens int
}

// graphPlaceFree reports whether the stage may run another session.
func (s *Schedule) graphPlaceFree() bool {
	limit := s.stages[s.stage].MaxConcurrency
	return limit <= 0 || s.running < limit
}

// graphBegin readies the stage's sessions: the first starts at the stage's
// start, from where the stage before left off.
func (s *Schedule) graphBegin(prev int) {
	s.g.base += prev
	s.g.next, s.g.cut = s.stageStart, false
	if n := len(s.p.Graph.Sessions) - s.g.base; s.stages[s.stage].Sessions > n {
		s.stages[s.stage].Sessions = max(n, 0)
	}
}

// pollGraph starts the stage's sessions due by now and a place allows,
// and brings next forward to when the next one may start.
func (s *Schedule) pollGraph(now time.Duration, next *time.Duration) {
	st := &s.stages[s.stage]
	if st.Timeout > 0 && !s.g.cut {
		if end := s.stageStart + st.Timeout; now >= end {
			s.cutGraphStage()
			return
		} else {
			*next = soonest(*next, end)
		}
	}
	for s.pos < st.Sessions && s.graphPlaceFree() && s.g.next <= now && !s.stopped {
		s.startGraph(s.g.next, s.g.next)
	}
	if s.pos < st.Sessions && s.graphPlaceFree() {
		*next = soonest(*next, s.g.next)
	}
	s.expireWaits(now, next)
}

// startGraph starts the stage's next session, due at due (the rate's
// slot) and started at start (later when it waited for a place): its
// calls with no predecessor are made, due then.
func (s *Schedule) startGraph(due, start time.Duration) {
	g := s.p.Graph
	idx := s.g.base + s.pos
	s.pos++
	s.running++
	iv := time.Duration(0)
	if r := s.stages[s.stage].Rate; r > 0 {
		iv = Seconds(1 / r)
	}
	s.g.next = max(s.g.next+iv, start)
	sess := &g.Sessions[idx]
	run := &graphRun{calls: make([]callState, len(sess.Calls)), pending: len(sess.Calls)}
	s.g.runs[idx] = run
	for i, c := range sess.Calls {
		run.calls[i].waiting = len(c.After)
	}
	for i := range sess.Calls {
		if run.calls[i].waiting == 0 {
			run.calls[i].phase = callMade
			r := s.callRequest(idx, i, due, 0)
			r.Send = start
			s.queue = append(s.queue, r)
		}
	}
	if g.WaitTimeout > 0 {
		s.g.waits = append(s.g.waits, graphWait{start + g.WaitTimeout, idx})
	}
}

// callRequest makes session idx's call i a request, due at due after a
// wait of wait; it is numbered when it goes.
func (s *Schedule) callRequest(idx, i int, due, wait time.Duration) Request {
	s.open++
	sess := &s.p.Graph.Sessions[idx]
	return Request{Index: -1, Stage: s.stage - s.base, User: idx, Turn: sess.Calls[i].Depth, Call: i, Due: due, Send: due, Tool: wait,
		Model: s.pickModel(), SessionID: sess.ID}
}

// graphFinished takes call r's answer (or failure) at at: the calls that
// waited only on it are made, due its successors' recorded wait later; a
// failure skips every call that waits on it and ends the session.
func (s *Schedule) graphFinished(r Request, at time.Duration, o Outcome) {
	run := s.g.runs[r.User]
	if run == nil || run.cut {
		return
	}
	sess := &s.p.Graph.Sessions[r.User]
	c := &run.calls[r.Call]
	c.end = at
	run.pending--
	if !o.OK {
		c.phase = callFailed
		s.skipAfter(sess, run, r.Call)
		s.endGraph(run, at)
		return
	}
	c.phase = callAnswered
	c.answer = sentMessage{Message: Message{Role: "assistant", Content: o.Text, ToolCalls: o.ToolCalls}, ids: o.IDs, tokens: o.OutputTokens}
	for j := r.Call + 1; j < len(sess.Calls); j++ {
		cj := &run.calls[j]
		if cj.phase != callWaiting || !after(sess.Calls[j].After, r.Call) {
			continue
		}
		if cj.waiting--; cj.waiting > 0 || s.stopped {
			continue
		}
		last := time.Duration(0)
		for _, p := range sess.Calls[j].After {
			last = max(last, run.calls[p].end)
		}
		wait := sess.Calls[j].Wait
		cj.phase = callMade
		s.ready(s.callRequest(r.User, j, last+wait, wait), last+wait, at)
	}
	if run.pending == 0 {
		s.endGraph(run, at)
	}
}

func after(preds []int, i int) bool {
	for _, p := range preds {
		if p == i {
			return true
		}
	}
	return false
}

// skipAfter skips every call still waiting that depends on call i.
func (s *Schedule) skipAfter(sess *GraphSession, run *graphRun, i int) {
	for j := i + 1; j < len(sess.Calls); j++ {
		cj := &run.calls[j]
		if cj.phase != callWaiting {
			continue
		}
		for _, p := range sess.Calls[j].After {
			if ph := run.calls[p].phase; ph == callFailed || ph == callSkipped {
				cj.phase = callSkipped
				run.pending--
				break
			}
		}
	}
}

// endGraph ends a session at at (its last answer, or its first failure):
// its place goes to the next session due, and when it was the stage's
// last, what its other branches still have out is cancelled.
func (s *Schedule) endGraph(run *graphRun, at time.Duration) {
	if run.ended {
		return
	}
	run.ended = true
	s.running--
	st := &s.stages[s.stage]
	for s.pos < st.Sessions && s.graphPlaceFree() && s.g.next <= at && !s.stopped {
		s.startGraph(s.g.next, at)
	}
	if s.pos == st.Sessions && s.running == 0 && s.open > 0 {
		s.cutGraphRuns()
		s.dropPending(true)
	}
}

// cutGraphStage ends the stage at its timeout: no more sessions start,
// and what the running ones have out is cancelled.
func (s *Schedule) cutGraphStage() {
	s.g.cut = true
	s.pos = s.stages[s.stage].Sessions
	s.cutGraphRuns()
	s.running = 0
	s.dropPending(true)
}

// cutGraphRuns stops the stage's sessions: their answers make nothing more.
func (s *Schedule) cutGraphRuns() {
	for i := s.g.base; i < s.g.base+s.pos; i++ {
		if run := s.g.runs[i]; run != nil {
			run.cut = true
		}
	}
	s.g.waits = nil
}

// expireWaits fails the sessions whose calls have waited past the
// predecessor-wait timeout: those calls, and what waits on them, skip.
func (s *Schedule) expireWaits(now time.Duration, next *time.Duration) {
	for len(s.g.waits) > 0 && s.g.waits[0].at <= now {
		w := s.g.waits[0]
		s.g.waits = s.g.waits[1:]
		run := s.g.runs[w.session]
		if run == nil || run.ended || run.cut {
			continue
		}
		for i := range run.calls {
			if run.calls[i].phase == callWaiting {
				run.calls[i].phase = callSkipped
				run.pending--
			}
		}
		s.endGraph(run, w.at)
	}
	if len(s.g.waits) > 0 {
		*next = soonest(*next, s.g.waits[0].at)
	}
}

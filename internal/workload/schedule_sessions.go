package workload

import "time"

// Agent sessions on their own clocks (AgentPlan.OwnClocks). The stage's
// offsets are the sessions' starts: a session starts at its offset (open
// loop) and sends its first turn; each later turn is made when the
// previous answer arrives, due once the tool has run (closed loop), and
// goes at once then. No session waits on another: the only client-side
// hold is --max-concurrency's, which caps the sessions running at once, so
// a session due while every place is taken starts when one frees (its
// first turn still due at its offset, the hold visible as queue time).
// --duration (the plan's Until) stops starting sessions; a running session
// finishes its turns, unless the plan cuts it there (AgentPlan.Cut).
// Every decision is taken on the due times, never on when the caller
// happened to poll, so bench's wall clock and simulate's virtual one make
// the same ones.

// heldStart is a session due to start while every place was taken.
type heldStart struct {
	user int
	due  time.Duration
}

func (s *Schedule) ownClocks() bool { return s.p.Agent != nil && s.p.Agent.OwnClocks }

// startDue starts the stage's next session, due at due, or holds it for
// a place.
func (s *Schedule) startDue(due time.Duration) {
	user := s.pos
	s.pos++
	if !s.placeFree() {
		s.held = append(s.held, heldStart{user, due})
		return
	}
	s.startSession(user, due, due)
}

// placeFree reports whether another session may run.
func (s *Schedule) placeFree() bool {
	limit := s.p.MaxConcurrency
	if s.stage < len(s.stages) && s.stages[s.stage].MaxConcurrency > 0 {
		limit = s.stages[s.stage].MaxConcurrency
	}
	return limit <= 0 || s.running < limit
}

// startSession queues session user's first turn, due at due and sent
// at send (later when it was held for a place).
func (s *Schedule) startSession(user int, due, send time.Duration) {
	s.running++
	s.users[user] = session{busy: true}
	r := s.turnRequest(user, 0, due, 0)
	r.Send = send
	s.queue = append(s.queue, r)
}

// closeStarts starts no more of the stage's sessions: the next is due at
// or after --duration. Those held for a place, due before it, may still
// start if a place frees before it (nextTurn).
func (s *Schedule) closeStarts() {
	s.pos = len(s.stages[s.stage].Offsets)
}

// turnRequest makes session user's turn, due at due after the tool's
// time; it is numbered when it goes.
func (s *Schedule) turnRequest(user, turn int, due, tool time.Duration) Request {
	s.open++
	return Request{Index: -1, Stage: s.stage - s.base, User: user, Turn: turn, Sample: s.p.Agent.Sessions[user].Turns[turn].Input,
		Due: due, Send: due, Tool: tool, Model: s.pickModel()}
}

// nextTurn moves r's session on after r's answer at at (Finished has
// taken the answer into its conversation and set the tool's time): its
// next turn, due when the tool has run, or its end, which frees its place
// for a held session.
func (s *Schedule) nextTurn(r Request, at time.Duration) {
	a, u := s.p.Agent, &s.users[r.User]
	if t := r.Turn + 1; t < len(a.Sessions[r.User].Turns) && !s.stopped {
		due := at + u.tool
		if !a.Cut || s.p.Until <= 0 || due < s.p.Until {
			s.ready(s.turnRequest(r.User, t, due, u.tool), due, at)
			return
		}
		// Cut at --duration: the session ends short of its turns.
	}
	u.busy = false
	s.running--
	for len(s.held) > 0 && s.placeFree() && !s.stopped {
		if s.p.Until > 0 && at >= s.p.Until {
			s.held = nil // a place freed after --duration starts nothing
			break
		}
		h := s.held[0]
		s.held = s.held[1:]
		s.startSession(h.user, h.due, max(h.due, at)) // the place freed at at
	}
}

// nameRound gives r, request k of its stage, its session's name and
// round (Plan.SessionName). As inference-perf's LocalUserSession, a
// conversation counts its rounds from 1 as they take their turn, a
// recycled conversation is a new session with a name of its own, and
// every stage starts new session objects (round 1 again) under the
// names the users had.
func (s *Schedule) nameRound(r *Request, k int) {
	if s.p.SessionName == nil {
		return
	}
	u := &s.users[r.User]
	conv := 0
	if a := s.p.Agent; a != nil {
		conv = k / len(a.Sessions) / len(a.Sessions[r.User].Turns)
	}
	if !u.named || u.conv != conv {
		if conv > 0 || s.names[r.User] == "" {
			s.names[r.User] = s.p.SessionName(r.User, conv)
		}
		u.named, u.conv, u.round = true, conv, 0
	}
	u.round++
	r.SessionID, r.Round = s.names[r.User], u.round
}

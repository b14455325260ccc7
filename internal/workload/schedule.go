package workload

import "time"

// Request is one request of a running plan, ready to send.
type Request struct {
	Index int // in the order requests were scheduled, from 0
	Stage int
	User  int // the session's user, or -1
	// Sample is what to send; a session round's prompt carries its
	// conversation so far.
	Sample Sample
	Due    time.Duration // when the plan scheduled it, from the run's start
}

// Schedule runs a Plan against a clock it is told: Poll hands out the
// requests that may go now, Finished reports one done. Times are offsets
// from the run's start, on whatever clock the caller keeps (the wall clock
// for bench, a virtual one for simulate), so one schedule drives both. It
// enforces what inference-perf and vLLM's bench enforce on the client: a
// stage starts only after the previous one has drained, a session's user
// has one request in flight, and no more than MaxConcurrency go at once.
// It is not safe for concurrent use.
type Schedule struct {
	p          *Plan
	stage, pos int           // the next offset to schedule
	stageStart time.Duration // of the current stage
	open       int           // requests of the current stage not yet finished
	lastDone   time.Duration
	inFlight   int
	index      int
	queue      []Request // due session rounds released by their user, waiting for a slot
	users      []session
	stopped    bool
}

// session is one user's conversation (inference-perf's LocalUserSession).
type session struct {
	busy    bool      // a round is queued or in flight
	waiting []Request // later rounds, in order
	text    string    // the conversation so far
	ids     []int
	tokens  int // its length in tokens
}

// Start begins running the plan at offset 0.
func (p *Plan) Start() *Schedule {
	s := &Schedule{p: p}
	if p.Sessions {
		s.users = make([]session, len(p.Prompts))
	}
	return s
}

// OpenLoop is the plan of vLLM's bench serve: requests at the arrival
// offsets, cycling through the samples, at most maxConcurrency at once
// (0: no cap), sending stopping at until when it is positive.
func OpenLoop(samples []Sample, arr *Arrivals, maxConcurrency int, until time.Duration) *Plan {
	var offs []time.Duration
	for {
		off, ok := arr.Next()
		if !ok {
			break
		}
		offs = append(offs, off)
	}
	return &Plan{Prompts: samples, Stages: []Stage{{Rate: arr.rate, Duration: arr.duration, Offsets: offs}},
		MaxConcurrency: maxConcurrency, Until: until}
}

// Poll returns the requests that may be sent at now, and when to poll next
// if nothing finishes before then (negative: only a completion can move the
// schedule on, or it is done).
func (s *Schedule) Poll(now time.Duration) (ready []Request, next time.Duration) {
	next = -1
	if s.p.Until > 0 && now >= s.p.Until && !s.stopped {
		s.stop()
	}
	for !s.stopped && s.stage < len(s.p.Stages) {
		st := &s.p.Stages[s.stage]
		if s.pos == len(st.Offsets) {
			if s.open > 0 {
				break // the stage drains before the next starts
			}
			s.stage++
			s.pos = 0
			if s.stage < len(s.p.Stages) {
				s.stageStart = max(s.lastDone, s.stageStart+st.Duration) + s.p.Interval
				for i := range s.users {
					s.users[i] = session{} // every stage starts new conversations
				}
			}
			continue
		}
		due := s.stageStart + st.Offsets[s.pos]
		if due > now {
			next = due
			break
		}
		if !s.p.Sessions && !s.slotFree() {
			break // waits for a slot: sent later, still due at its offset
		}
		if r, now := s.schedule(due); now {
			ready = append(ready, s.release(r))
		}
	}
	for len(s.queue) > 0 && s.slotFree() {
		r := s.queue[0]
		s.queue = s.queue[1:]
		ready = append(ready, s.release(r))
	}
	return ready, next
}

func (s *Schedule) slotFree() bool {
	return s.p.MaxConcurrency <= 0 || s.inFlight < s.p.MaxConcurrency
}

// schedule makes the stage's next request, due at due. Without sessions
// it goes at once (Poll checked the slot); a session round queues behind
// its user's round in flight, or for a slot.
func (s *Schedule) schedule(due time.Duration) (r Request, now bool) {
	n := len(s.p.Prompts)
	r = Request{Index: s.index, Stage: s.stage, User: -1, Sample: s.p.Prompts[s.pos%n], Due: due}
	s.index++
	s.open++
	s.pos++
	if !s.p.Sessions {
		return r, true
	}
	r.User = (s.pos - 1) % n
	u := &s.users[r.User]
	if u.busy {
		u.waiting = append(u.waiting, r)
	} else {
		u.busy = true
		s.queue = append(s.queue, r)
	}
	return r, false
}

// release sends r: a session round gets its conversation prepended, as
// inference-perf's user session does (context + " " + prompt).
func (s *Schedule) release(r Request) Request {
	s.inFlight++
	if r.User < 0 {
		return r
	}
	u := &s.users[r.User]
	base := r.Sample
	r.Sample.Prompt = u.text + " " + base.Prompt
	if base.PromptIDs != nil {
		r.Sample.PromptIDs = append(append(append(make([]int, 0, len(u.ids)+len(s.p.separator)+len(base.PromptIDs)), u.ids...), s.p.separator...), base.PromptIDs...)
	}
	r.Sample.PromptLen = u.tokens + len(s.p.separator) + base.PromptLen
	return r
}

// Finished reports r done at at: with ok, text and ids are its answer and
// outputTokens their length, which a session appends to its user's
// conversation; a failed round leaves the conversation as it was. Poll
// again afterwards: a slot, a user or the next stage may have come free.
func (s *Schedule) Finished(r Request, at time.Duration, ok bool, text string, ids []int, outputTokens int) {
	s.inFlight--
	s.open--
	s.lastDone = max(s.lastDone, at)
	if r.User < 0 || r.User >= len(s.users) || r.Stage != s.stage {
		return
	}
	u := &s.users[r.User]
	if ok {
		u.text = r.Sample.Prompt + " " + text
		if r.Sample.PromptIDs != nil {
			u.ids = append(append(append(u.ids[:0:0], r.Sample.PromptIDs...), s.p.separator...), ids...)
		}
		u.tokens = r.Sample.PromptLen + len(s.p.separator) + outputTokens
	}
	u.busy = false
	if len(u.waiting) > 0 {
		next := u.waiting[0]
		u.waiting = u.waiting[1:]
		u.busy = true
		s.queue = append(s.queue, next)
	}
}

// stop ends sending (Plan.Until): what has not gone is dropped.
func (s *Schedule) stop() {
	s.stopped = true
	s.open -= len(s.queue)
	for i := range s.users {
		s.open -= len(s.users[i].waiting)
		s.users[i].waiting = nil
	}
	s.queue = nil
}

// Done reports whether every request has been scheduled and has finished.
func (s *Schedule) Done() bool {
	return s.inFlight == 0 && (s.stopped || s.stage >= len(s.p.Stages))
}

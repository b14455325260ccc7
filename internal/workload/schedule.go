package workload

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Schedule runs a Plan against a clock it is told: Poll hands out the
// requests that may go now, Finished reports one done, Cancelled lists
// those to abandon. Times are offsets from the run's start, on whatever
// clock the caller keeps (the wall clock for bench, a virtual one for
// simulate), so one schedule drives both. It enforces what inference-perf
// and vLLM's bench enforce on the client: a stage starts only after the
// previous one has drained, a session's user has one request in flight, no
// more than the concurrency cap go at once, a request past its timeout is
// abandoned, a sweep's probe finds the stages, a tripped circuit breaker
// ends the run. It is not safe for concurrent use.
type Schedule struct {
	p          *Plan
	stages     []Stage // the probe first, when sweeping
	base       int     // index of the first reported stage in stages
	stage, pos int     // the next offset to schedule
	next       int     // the next prompt, when the prompts run on across stages
	stageStart time.Duration
	open       int // requests of the current stage not yet finished
	lastDone   time.Duration
	inFlight   map[int]Request
	index      int
	queue      []Request // due session rounds released by their user, waiting for a slot
	sleeping   []sleeper // session rounds waiting out their tool's latency
	users      []session
	names      []string    // each user's session name (Plan.SessionName), kept across stages
	running    int         // agent sessions on their own clocks started and not ended
	held       []heldStart // their starts due while --max-concurrency's places were taken
	g          *graphState // graph sessions, nil without
	// slotWait is set while a due request waits for a --max-concurrency
	// slot, slotFreed the last finish while it did: what waited goes then.
	slotWait  bool
	slotFreed time.Duration
	stopped   bool
	rng       *rand.Rand

	deadlines []deadline // request timeouts, in send order
	cancel    []Cancel   // to abandon, for Cancelled
	samples   []inFlightSample
	probeCut  bool // the probe passed its timeout
	breaker   Breaker
	sat       float64
	err       error
}

type deadline struct {
	at    time.Duration
	index int
}

// session is one user's conversation (inference-perf's LocalUserSession).
type session struct {
	busy    bool      // a round is queued, sleeping or in flight
	waiting []Request // later rounds, in order
	text    string    // the conversation so far
	ids     []int
	// msgs is the conversation so far as chat messages (agent sessions
	// on their own clocks), ending with the last answer.
	msgs    []Message
	tokens  int           // its length in tokens
	readyAt time.Duration // its next round goes no earlier (the tool's latency)
	tool    time.Duration // that latency, for the next round's Request.Tool
	// named is set once the stage's conversation has its name; conv is
	// which of the user's conversations it is, round its rounds so far.
	named       bool
	conv, round int
}

// sleeper is a session round released when its tool's latency is over.
type sleeper struct {
	at  time.Duration
	req Request
}

// Start begins running the plan at offset 0.
func (p *Plan) Start() *Schedule {
	s := &Schedule{p: p, inFlight: map[int]Request{}, rng: rand.New(rand.NewPCG(p.Seed, 0x5c4ed))}
	if p.Sweep != nil {
		s.stages = []Stage{p.Sweep.Probe}
		s.base = 1
	} else {
		s.stages = p.Stages
	}
	if p.Sessions {
		s.users = make([]session, len(p.Prompts))
		s.names = make([]string, len(p.Prompts))
	}
	if p.Breaker != nil {
		s.breaker = p.Breaker()
	}
	if p.Graph != nil && len(s.stages) > 0 {
		s.stages = slices.Clone(s.stages) // their session counts are clamped to the corpus as they run
		s.g = &graphState{runs: make([]*graphRun, len(p.Graph.Sessions))}
		s.graphBegin(0)
	}
	return s
}

// Stages are the stages the schedule has run or will run (a sweep's, once
// its probe has found them), the probe not among them.
func (s *Schedule) Stages() []Stage { return s.stages[s.base:] }

// Saturation is the rate a sweep's probe found (0 before, or without one).
func (s *Schedule) Saturation() float64 { return s.sat }

// Err is why the schedule stopped early: a sweep's probe that found no
// saturation rate. A run a circuit breaker stopped is not an error.
func (s *Schedule) Err() error { return s.err }

// Poll returns the requests that may be sent at now, and when to poll next
// if nothing finishes before then (negative: only a completion can move the
// schedule on, or it is done). Call Cancelled after it.
func (s *Schedule) Poll(now time.Duration) (ready []Request, next time.Duration) {
	s.sampleTo(now)
	next = -1
	if s.p.Until > 0 && now >= s.p.Until && !s.stopped && !s.ownClocks() {
		s.stop(false)
	}
	s.expire(now)
	for !s.stopped && s.stage < len(s.stages) {
		st := &s.stages[s.stage]
		if s.isProbe() && !s.probeCut {
			if cut := s.stageStart + s.p.Sweep.Timeout; now >= cut {
				s.cutProbe()
			} else {
				next = soonest(next, cut)
			}
		}
		if s.g != nil {
			// Graph sessions: the stage ends when its sessions have.
			s.pollGraph(now, &next)
			if s.pos < st.Sessions || s.open > 0 || !s.advance(st) {
				break
			}
			continue
		}
		if s.pos == len(st.Offsets) {
			if s.open > 0 {
				break // the stage drains before the next starts
			}
			if !s.advance(st) {
				break
			}
			continue
		}
		due := s.stageStart + st.Offsets[s.pos]
		if s.ownClocks() && s.p.Until > 0 && due >= s.p.Until {
			s.closeStarts() // known now: no session starts at or after --duration
			continue
		}
		if due > now {
			next = soonest(next, due)
			break
		}
		if s.ownClocks() {
			s.startDue(due)
			continue
		}
		if !s.p.Sessions && !s.slotFree() {
			s.slotWait = true
			break // waits for a slot: sent later, still due at its offset
		}
		if r, goes := s.schedule(due, now); goes {
			ready = append(ready, s.release(r, now))
		}
	}
	next = s.wake(now, next)
	for len(s.queue) > 0 {
		if !s.slotFree() {
			s.slotWait = true
			break
		}
		r := s.queue[0]
		s.queue = s.queue[1:]
		ready = append(ready, s.release(r, now))
	}
	if s.slotFree() {
		s.slotWait = false
	}
	if len(s.deadlines) > 0 {
		next = soonest(next, s.deadlines[0].at)
	}
	return ready, next
}

func soonest(a, b time.Duration) time.Duration {
	if a < 0 || b < a {
		return b
	}
	return a
}

func (s *Schedule) isProbe() bool { return s.base == 1 && s.stage == 0 }

// advance moves past a drained stage; false when the schedule has ended.
func (s *Schedule) advance(st *Stage) bool {
	lead := s.p.Interval
	if s.isProbe() {
		// inference-perf notices the drain within its 1 s poll and keeps
		// sampling meanwhile.
		s.sampleTo(s.lastDone + time.Second)
		sat, err := s.p.Sweep.saturation(s.samples)
		if err != nil {
			s.err = err
			s.stopped = true
			return false
		}
		s.sat = sat
		s.stages = append(s.stages, s.p.Sweep.stages(sat, s.rng)...)
		lead = time.Second // inference-perf starts the first stage right after the probe, with its 1 s lead
	}
	s.stage++
	s.pos = 0
	if s.stage < len(s.stages) {
		s.stageStart = max(s.lastDone, s.stageStart+st.Duration) + lead
		for i := range s.users {
			s.users[i] = session{} // every stage starts new conversations
		}
		if s.g != nil {
			s.graphBegin(st.Sessions)
		}
	}
	return true
}

// cutProbe ends a sweep's probe at its timeout: nothing more is sent and
// what is in flight is abandoned, as inference-perf cancels it.
func (s *Schedule) cutProbe() {
	s.probeCut = true
	s.pos = len(s.stages[s.stage].Offsets)
	s.dropPending(true)
}

// dropPending drops what is scheduled but not sent, and with abandon
// cancels what is in flight.
func (s *Schedule) dropPending(abandon bool) {
	s.open -= len(s.queue) + len(s.sleeping)
	s.sleeping, s.held = nil, nil
	for i := range s.users {
		s.open -= len(s.users[i].waiting)
		s.users[i].waiting = nil
	}
	s.queue = nil
	if abandon {
		var rs []Request
		for _, r := range s.inFlight {
			rs = append(rs, r)
		}
		slices.SortFunc(rs, func(a, b Request) int { return a.Index - b.Index })
		for _, r := range rs {
			s.cancel = append(s.cancel, Cancel{r, false})
		}
	}
}

func (s *Schedule) slotFree() bool {
	limit := s.p.MaxConcurrency
	if s.stage < len(s.stages) && s.stages[s.stage].MaxConcurrency > 0 && s.g == nil { // a graph stage's caps sessions
		limit = s.stages[s.stage].MaxConcurrency
	}
	return limit <= 0 || len(s.inFlight) < limit
}

// schedule makes the stage's next request, due at due. Without sessions
// it goes at once (Poll checked the slot); a session round queues behind
// its user's round in flight (and its tool's latency), or for a slot.
func (s *Schedule) schedule(due, now time.Duration) (r Request, goes bool) {
	n := len(s.p.Prompts)
	k := s.pos
	if s.p.Continuous {
		k = s.next
		s.next++
	}
	r = Request{Stage: s.stage - s.base, User: -1, Sample: s.p.Prompts[k%n], Due: due, Send: due}
	s.pos++
	if a := s.p.Agent; a != nil {
		user, turn, ok := a.turn(k)
		if !ok {
			return r, false // past the last turn of a session that does not start over: nothing is sent
		}
		r.User, r.Turn, r.Sample = user, turn, a.Sessions[user].Turns[turn].Input
	}
	r.Index, r.Model = s.index, s.pickModel()
	s.index++
	s.open++
	if !s.p.Sessions {
		return r, true
	}
	if s.p.Agent == nil {
		r.User = k % n
	}
	s.nameRound(&r, k)
	u := &s.users[r.User]
	if u.busy {
		u.waiting = append(u.waiting, r)
	} else {
		u.busy = true
		r.Tool = u.tool
		r.Send = max(due, u.readyAt)
		s.ready(r, u.readyAt, now)
	}
	return r, false
}

// ready queues a session round for a slot, or puts it to sleep until its
// user's tool has run (at, which its Send already counts).
func (s *Schedule) ready(r Request, at, now time.Duration) {
	if at > now {
		s.sleeping = append(s.sleeping, sleeper{at, r})
		return
	}
	s.queue = append(s.queue, r)
}

// wake queues the sleeping rounds due by now, in the order they wake, and
// returns next brought forward to the next one's waking.
func (s *Schedule) wake(now, next time.Duration) time.Duration {
	slices.SortStableFunc(s.sleeping, func(a, b sleeper) int { return int(a.at - b.at) })
	i := 0
	for ; i < len(s.sleeping) && s.sleeping[i].at <= now; i++ {
		s.queue = append(s.queue, s.sleeping[i].req)
	}
	s.sleeping = s.sleeping[i:]
	if len(s.sleeping) > 0 {
		next = soonest(next, s.sleeping[0].at)
	}
	return next
}

// pickModel draws the LoRA adapter of the next request by the traffic
// split's weights ("" without one).
func (s *Schedule) pickModel() string {
	if len(s.p.LoRA) == 0 {
		return ""
	}
	x := s.rng.Float64()
	for _, l := range s.p.LoRA {
		if x < l.Split {
			return l.Name
		}
		x -= l.Split
	}
	return s.p.LoRA[len(s.p.LoRA)-1].Name
}

// release sends r at now: a session round gets its conversation
// prepended, as inference-perf's user session does (context + " " + prompt).
func (s *Schedule) release(r Request, now time.Duration) Request {
	if r.Index < 0 {
		r.Index = s.index // a session's turn is numbered as it goes
		s.index++
	}
	if s.slotWait {
		r.Send = max(r.Send, s.slotFreed) // it waited for the slot freed then
	}
	if s.g != nil {
		r.Sample = s.graphSample(r)
	} else if r.User >= 0 {
		u := &s.users[r.User]
		if a := s.p.Agent; a != nil && r.Turn == 0 {
			// A conversation starts from its system prompt.
			sys := a.Sessions[r.User].System
			u.text, u.ids, u.tokens = sys.Prompt, sys.PromptIDs, sys.PromptLen
			u.msgs = nil
			if sys.Prompt != "" {
				u.msgs = []Message{{Role: "system", Content: sys.Prompt}}
			}
		}
		base := r.Sample
		if s.ownClocks() {
			// A chat client sends the conversation as an agent does: its
			// system prompt, then each input and answer in turn. An input
			// is a user message: the answers carry no tool call that a
			// tool message could answer (OpenAI and vLLM refuse one
			// without). Completions and the simulator read the text.
			r.Sample.Messages = append(slices.Clip(u.msgs), Message{Role: "user", Content: base.Prompt})
		}
		r.Sample.Prompt = u.text + " " + base.Prompt
		if base.PromptIDs != nil {
			r.Sample.PromptIDs = append(append(append(make([]int, 0, len(u.ids)+len(s.p.Separator)+len(base.PromptIDs)), u.ids...), s.p.Separator...), base.PromptIDs...)
		}
		r.Sample.PromptLen = u.tokens + len(s.p.Separator) + base.PromptLen
	}
	s.inFlight[r.Index] = r
	if s.p.RequestTimeout > 0 {
		s.deadlines = append(s.deadlines, deadline{now + s.p.RequestTimeout, r.Index})
	}
	return r
}

// expire abandons the requests in flight past their timeout.
func (s *Schedule) expire(now time.Duration) {
	for len(s.deadlines) > 0 && s.deadlines[0].at <= now {
		d := s.deadlines[0]
		s.deadlines = s.deadlines[1:]
		if r, ok := s.inFlight[d.index]; ok {
			s.cancel = append(s.cancel, Cancel{r, true})
		}
	}
}

// Cancelled returns the requests in flight to abandon now, each once. The
// caller aborts them and reports each Finished.
func (s *Schedule) Cancelled() []Cancel {
	out := s.cancel
	s.cancel = nil
	return out
}

// Finished reports r done at at. A session appends a successful answer to
// its user's conversation; a failed round leaves it as it was. Poll again
// afterwards: a slot, a user or the next stage may have come free.
func (s *Schedule) Finished(r Request, at time.Duration, o Outcome) {
	s.sampleTo(at)
	if _, ok := s.inFlight[r.Index]; !ok {
		return // reported twice
	}
	delete(s.inFlight, r.Index)
	s.open--
	s.lastDone = max(s.lastDone, at)
	if s.slotWait {
		s.slotFreed = max(s.slotFreed, at)
	}
	s.feedBreakers(r, at, o)
	if s.g != nil && r.Stage+s.base == s.stage {
		s.graphFinished(r, at, o)
		return
	}
	if r.User < 0 || r.User >= len(s.users) || r.Stage+s.base != s.stage {
		return
	}
	u := &s.users[r.User]
	u.tool = 0
	if o.OK {
		u.text = r.Sample.Prompt + " " + o.Text
		if r.Sample.PromptIDs != nil {
			u.ids = append(append(append(u.ids[:0:0], r.Sample.PromptIDs...), s.p.Separator...), o.IDs...)
		}
		u.tokens = r.Sample.PromptLen + len(s.p.Separator) + o.OutputTokens
		if r.Sample.Messages != nil {
			u.msgs = append(slices.Clip(r.Sample.Messages), Message{Role: "assistant", Content: o.Text})
		}
		if a := s.p.Agent; a != nil {
			u.tool = a.latency(r.User, r.Turn) // the tool runs on the answer
			u.readyAt = at + u.tool
		}
	}
	if s.ownClocks() {
		s.nextTurn(r, at)
		return
	}
	u.busy = false
	if len(u.waiting) > 0 && !s.stopped {
		next := u.waiting[0]
		u.waiting = u.waiting[1:]
		u.busy = true
		next.Tool = u.tool
		next.Send = max(next.Due, at, u.readyAt) // it waited on its user's round and tool
		s.ready(next, u.readyAt, at)
	}
}

// Breaker is a run's circuit breaker (inference-perf's circuit_breakers):
// it is shown every request that finishes and says when the run must end.
type Breaker interface {
	// Trip shows it r, finished at at with o, and reports whether the run
	// ends (what has not gone is dropped, what is in flight cancelled).
	Trip(r Request, at time.Duration, o Outcome) bool
}

// feedBreakers shows the run's circuit breaker the request; when it trips,
// the run ends.
func (s *Schedule) feedBreakers(r Request, at time.Duration, o Outcome) {
	if s.breaker != nil && s.breaker.Trip(r, at, o) && !s.stopped {
		s.stop(true)
	}
}

// stop ends sending (Plan.Until, or a breaker with abandon): what has not
// gone is dropped, and with abandon what is in flight is cancelled.
func (s *Schedule) stop(abandon bool) {
	s.stopped = true
	s.dropPending(abandon)
}

// sampleTo records the requests in flight at every half second of a
// sweep's probe up to t (the count only changes at Poll and Finished), as
// inference-perf's probe samples them; samples after its timeout are not
// kept (inference-perf drops those of the drain after a cut-off).
func (s *Schedule) sampleTo(t time.Duration) {
	if !s.isProbe() || s.err != nil {
		return
	}
	for {
		at := time.Duration(len(s.samples)) * sampleEvery
		// inference-perf's samples start a second before the probe's
		// requests (its lead) and end a second before its timeout.
		if at > t || at+time.Second >= s.p.Sweep.Timeout {
			return
		}
		s.samples = append(s.samples, inFlightSample{at: at, n: len(s.inFlight)})
	}
}

// Done reports whether every request has been scheduled and has finished.
func (s *Schedule) Done() bool {
	return len(s.inFlight) == 0 && (s.stopped || s.stage >= len(s.stages))
}

package simulate

import (
	"container/heap"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// flight is one request from its send to its answer.
type flight struct {
	req     workload.Request
	node    *node // the replica the router sent it to
	prompt  []int
	stream  *engine.Stream
	out     bench.Output
	sent    time.Time // the client's send
	engLast time.Time // the client-visible time of the previous token, before the per-token time
	tokens  TokenTimes
	ids     []int // the answer, for a session's next round
	gone    bool  // the client timed out; the engine's abort is still due
}

// event is something due at a virtual time: a request reaching its
// replica's engine after the frontend, an answer reaching its client, a
// client's timeout, or a replica becoming ready.
type event struct {
	at   time.Time
	f    *flight
	n    *node // for the fleet's events
	kind eventKind
}

type eventKind int

const (
	arrive eventKind = iota
	answered
	timeout
	replicaReady
)

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	a, b := &e[i], &e[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	switch {
	case a.f != nil && b.f != nil:
		return a.f.req.Index < b.f.req.Index
	case a.f == nil && b.f == nil:
		return a.n.index < b.n.index
	}
	return a.f == nil // the fleet's own events first
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type driver struct {
	cfg     *Config
	start   time.Time
	fe      profiles.Frontend
	sch     *workload.Schedule
	pending events
	outputs []bench.Output
	tokens  []TokenTimes
	last    time.Time       // the last answer
	flights map[int]*flight // sent and not answered, by request index
	format  *grammar.Spec   // every request's structured output, or nil
	latest  engine.Output   // a stream's last output, its slices reused

	fleet
}

// run is the global event loop. The fleet's time is the clock of its
// earliest busy replica (or, with none busy, of the next event): at each
// such boundary the events due by then are handled, the schedule is
// polled, and that replica steps. A replica runs ahead of the others by at
// most one step, and a request routed to it meanwhile is drained at its
// next step. With one replica this is the engine's loop in virtual time:
// step, hand out what the step produced, step again; idle, jump to the
// next event.
func (d *driver) run(ctx context.Context) error {
	d.last = d.start
	now := d.start
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.err != nil {
			return d.err
		}
		d.fire(now)
		ready, next := d.sch.Poll(now.Sub(d.start))
		for _, r := range ready {
			d.send(r, now)
		}
		for _, c := range d.sch.Cancelled() {
			d.cancel(c, now)
		}
		if len(ready) > 0 {
			continue // a zero frontend delay makes them due now
		}
		nd := d.earliestBusy()
		if nd != nil && !nd.clk.now.After(now) {
			d.step(nd)
			continue
		}
		// Every busy replica, and the one that stepped last, is past now:
		// move to the earliest boundary.
		if b, ok := d.boundary(nd, now); ok {
			if a, ok := d.idleArrival(b); ok {
				b = a // an idle replica's request arrives first: it starts then
			}
			d.recordIdle(b)
			now = b
			continue
		}
		// Nothing runs: move on to the next event.
		wake, ok := time.Time{}, false
		if len(d.pending) > 0 {
			wake, ok = d.pending[0].at, true
		}
		if next >= 0 && (!ok || d.start.Add(next).Before(wake)) {
			wake, ok = d.start.Add(next), true
		}
		if !ok {
			if d.sch.Done() {
				d.finish()
				return nil
			}
			return errors.New("simulate: the schedule waits on requests that no longer run (a bug)")
		}
		if t, due := d.nextTimer(); due && t.Before(wake) {
			wake = t
		}
		d.recordIdle(wake)
		if wake.After(now) {
			now = wake
		}
	}
}

// step runs one step of a replica and hands out what it produced.
func (d *driver) step(nd *node) {
	began := nd.clk.now
	defer func() { d.lastStep = nd.clk.now }()
	d.record(nd, began)
	busy := nd.eng.Advance()
	d.collect(nd, began)
	if !busy && len(nd.gone) > 0 {
		nd.stalled = true // only aborted requests were left: the engine is idle
	}
}

// boundary is the next step boundary after now: the earliest busy
// replica's clock, or the end of the last step if that is earlier (a
// replica that went idle still ends its step there).
func (d *driver) boundary(busiest *node, now time.Time) (time.Time, bool) {
	b, ok := time.Time{}, false
	if busiest != nil {
		b, ok = busiest.clk.now, true
	}
	if d.lastStep.After(now) && (!ok || d.lastStep.Before(b)) {
		b, ok = d.lastStep, true
	}
	return b, ok
}

// send starts a request released by the schedule: the router picks its
// replica, which it reaches after the frontend's arrival time. The fleet
// polls the schedule at step boundaries, so the request goes at its own
// send time (Request.Send), which may be earlier than now: a request due
// in the middle of a step is sent then and waits in the engine for the
// step to end, as a real client's does, counted in its TTFT.
func (d *driver) send(r workload.Request, polled time.Time) {
	now := d.start.Add(max(r.Send, r.Due)) // never before it was due
	if now.After(polled) || now.Before(d.start) {
		now = polled
	}
	if r.Index >= len(d.outputs) {
		d.outputs = append(d.outputs, make([]bench.Output, r.Index+1-len(d.outputs))...)
		d.tokens = append(d.tokens, make([]TokenTimes, r.Index+1-len(d.tokens))...)
	}
	f := &flight{req: r, sent: now}
	d.flights[r.Index] = f
	f.out.Start = now
	f.out.QueueTime = now.Sub(d.start.Add(r.Due))
	f.out.Stage, f.out.Turn, f.out.Session, f.out.Tool = r.Stage, r.Turn, r.User, r.Tool
	f.out.SessionID, f.out.Round, f.out.Call = r.SessionID, r.Round, r.Call
	f.out.PromptLen = r.Sample.PromptLen
	f.out.ITL = make([]time.Duration, 0, max(r.Sample.OutputLen-1, 0)) // one gap a token after the first
	f.prompt = r.Sample.PromptIDs
	if f.prompt == nil {
		f.prompt = d.vocab.Encode(r.Sample.Prompt)
	}
	if f.node = d.route(f); f.node == nil {
		// The gateway has no ready endpoint: 503 at once.
		d.unrouted++
		f.out.Error, f.out.ErrorType = "no replica ready", "HTTP Error 503"
		heap.Push(&d.pending, event{at: now, f: f, kind: answered})
		return
	}
	heap.Push(&d.pending, event{at: now.Add(d.fe.Arrival), f: f})
	f.node.arrivals = append(f.node.arrivals, now.Add(d.fe.Arrival))
	if t := d.cfg.RequestTimeout; t > 0 {
		heap.Push(&d.pending, event{at: now.Add(t), f: f, kind: timeout})
	}
}

// fire handles every event due by now, the fleet's timers among them.
func (d *driver) fire(now time.Time) {
	for {
		t, due := d.nextTimer()
		if len(d.pending) > 0 && !d.pending[0].at.After(now) && (!due || !t.Before(d.pending[0].at)) {
			ev := heap.Pop(&d.pending).(event)
			switch ev.kind {
			case answered:
				d.answer(ev.f, ev.at)
			case arrive:
				d.submit(ev.f, ev.at)
			case timeout:
				d.giveUp(ev.f, ev.at, "request timeout", "TimeoutError")
			case replicaReady:
				d.ready(ev.n, ev.at)
			}
			continue
		}
		if due && !t.After(now) {
			d.tick(t)
			continue
		}
		return
	}
}

// cancel abandons a request the schedule gave up on (past load's
// request_timeout, or with the run), as a client closing its connection.
func (d *driver) cancel(c workload.Cancel, now time.Time) {
	f := d.flights[c.Index]
	if f == nil {
		return
	}
	if c.TimedOut {
		d.giveUp(f, now, "request timed out", "TimeoutError")
		return
	}
	d.giveUp(f, now, "cancelled with the run (a sweep's probe past its timeout, or a circuit breaker)", "CancelledError")
}

// submit hands a request to its replica's engine as the API server would.
func (d *driver) submit(f *flight, at time.Time) {
	nd := f.node
	nd.arrivals = nd.arrivals[1:]
	if f.gone {
		return // the client gave up before the frontend handed it on
	}
	if !nd.busy() {
		// An idle engine starts when the request arrives.
		d.record(nd, at)
		if at.After(nd.clk.now) {
			nd.clk.now = at
		}
	}
	s := f.req.Sample
	params := sampling.Defaults()
	params.MaxTokens, params.IgnoreEOS = max(s.OutputLen, 1), true
	req := &engine.Request{ID: strconv.Itoa(f.req.Index), Prompt: f.prompt, Arrival: f.sent, Params: params, LoRA: f.req.Model}
	format, err := d.format, error(nil)
	if tf := toolFormat(s.Tools); tf != nil {
		// A forced tool call, held to its tools' schemas as serve holds it.
		if format != nil {
			err = errors.New("tool_choice cannot be combined with `response_format`: both constrain the output")
		}
		format = tf
		if s.Tools.MaxTokens > 0 {
			req.Params.MaxTokens = s.Tools.MaxTokens
		}
	}
	if format != nil {
		c, gerr := nd.rep.Grammars.Get(*format)
		if err == nil {
			err = gerr
		}
		if err != nil {
			f.out.Error, f.out.ErrorType = err.Error(), "HTTP Error 400"
			heap.Push(&d.pending, event{at: at, f: f, kind: answered})
			return
		}
		req.Constraint, req.Params.IgnoreEOS = c.NewMatcher(), false
	}
	st, err := nd.eng.Submit(req)
	if err != nil {
		// The API answers at once: 400 for a prompt too long, 503 when full.
		f.out.Error, f.out.ErrorType = err.Error(), "HTTP Error 400"
		if errors.Is(err, engine.ErrOverloaded) {
			f.out.ErrorType = "HTTP Error 503"
		}
		heap.Push(&d.pending, event{at: at, f: f, kind: answered})
		return
	}
	f.stream = st
	f.out.PromptLen = len(f.prompt)
	nd.live[req.ID] = f
	nd.stalled = false
}

// giveUp ends a request on the client's side: its timeout, or its
// replica's shutdown. Unless its answer is already complete, the
// connection closes, which the API server turns into an abort.
func (d *driver) giveUp(f *flight, at time.Time, why, typ string) {
	if f.gone || f.out.Latency > 0 || f.out.Error != "" {
		return // answered (or refused) in time
	}
	f.gone = true
	f.out.Error, f.out.ErrorType = why, typ
	f.out.Latency = at.Sub(f.sent)
	d.answer(f, at)
	if f.stream != nil {
		nd := f.node
		nd.eng.Abort(strconv.Itoa(f.req.Index))
		nd.gone = append(nd.gone, f)
		nd.stalled = false
	}
}

// reap reads the streams of given-up requests until the engine has ended
// them; their outputs go nowhere.
func (d *driver) reap(nd *node) {
	keep := nd.gone[:0]
	for _, f := range nd.gone {
		finished := false
		for f.stream.TryNextInto(&d.latest) {
			finished = finished || d.latest.Finished
		}
		if finished {
			delete(nd.live, strconv.Itoa(f.req.Index))
		} else {
			keep = append(keep, f)
		}
	}
	nd.gone = keep
}

// collect reads the streams of the requests the step from began ran.
// Tokens reach the API server after the frontend's lag; it handles them
// one after another in the step's order, Stream each, after whatever it
// still had (it is one process for every stream of the replica), and then
// the client; BLIS's per-token time, if any, is added to the first token
// and to every gap. None of it holds the GPU's clock up.
func (d *driver) collect(nd *node, began time.Time) {
	end := nd.clk.now
	dur := end.Sub(began)
	ready := end.Add(time.Duration(d.fe.LagSteps * float64(dur)))
	api := nd // the server's API server: its first data-parallel rank's
	if nd.rank > 0 {
		api = d.all[nd.index-nd.rank]
	}
	for _, id := range nd.steps.ids {
		f := nd.live[id]
		if f == nil || f.gone {
			continue
		}
		o := &d.latest
		if !f.stream.TryNextInto(o) {
			continue
		}
		for range o.Tokens {
			// The tokens the server handled back to back up to this one
			// (a step's all come at once), the queue's share of its time.
			now := ready
			if !api.api.Before(ready) {
				now, api.apiRun = api.api, api.apiRun+1
			} else {
				api.apiRun = 1
			}
			now = now.Add(d.fe.Stream)
			api.api = now
			f.tokens.Last, f.tokens.LastStep, f.tokens.LastQueued = end, dur, api.apiRun
			if f.out.OutputTokens == 0 {
				f.tokens.First, f.tokens.FirstStep, f.tokens.FirstQueued = end, dur, api.apiRun
				f.out.TTFT = now.Sub(f.sent) + d.fe.PerToken
			} else {
				f.out.ITL = append(f.out.ITL, now.Sub(f.engLast)+d.fe.PerToken)
			}
			f.engLast = now
			f.out.OutputTokens++
		}
		if d.cfg.Plan.Sessions {
			f.ids = append(f.ids, o.Tokens...)
		}
		if o.Finished {
			delete(nd.live, id)
			f.out.PromptLen = o.PromptTokens
			cached := o.CachedTokens // what the server's usage reports
			f.out.CachedTokens = &cached
			switch {
			case o.Err != nil:
				f.out.Error = o.Err.Error()
			case o.FinishReason == engine.FinishAbort:
				f.out.Error = "aborted"
			default:
				f.out.Success = f.out.OutputTokens > 0
			}
			lat := f.out.TTFT + d.fe.Finish
			for _, g := range f.out.ITL {
				lat += g
			}
			f.out.Latency = lat
			if d.cfg.Plan.Unary {
				// The client reads the whole answer at its end.
				f.out.Unary, f.out.TTFT, f.out.ITL = true, lat, nil
			}
			heap.Push(&d.pending, event{at: f.sent.Add(lat), f: f, kind: answered})
		}
	}
	nd.steps.ids = nd.steps.ids[:0]
	if len(nd.gone) > 0 {
		d.reap(nd)
	}
}

// answer is a response reaching its client: the schedule may send what
// waited on it.
func (d *driver) answer(f *flight, at time.Time) {
	if at.After(d.last) {
		d.last = at
	}
	delete(d.flights, f.req.Index)
	if !f.out.Success {
		f.out.OutputTokens = 0
		if f.out.ErrorType == "" {
			f.out.ErrorType = "HTTP Error 500"
		}
	}
	if f.node != nil {
		f.node.inFlight--
	}
	f.out.Model, f.out.Due, f.out.End = f.req.Model, f.req.Due, at
	d.outputs[f.req.Index] = f.out
	d.tokens[f.req.Index] = f.tokens
	d.sch.Finished(f.req, at.Sub(d.start), workload.Outcome{OK: f.out.Success, IDs: f.ids, OutputTokens: f.out.OutputTokens,
		PromptTokens: f.out.PromptLen, ErrorType: f.out.ErrorType, Error: f.out.Error})
}

// record takes a replica's readings due by t (its state is constant
// between steps, so a reading at the first step boundary after its time is
// the reading at its time).
func (d *driver) record(nd *node, t time.Time) {
	if nd.rank > 0 {
		return // rank 0's readings are the server's
	}
	if s := d.cfg.Series; s != nil && s.Interval > 0 {
		for !nd.nextSer.After(t) {
			s.take(nd.gather, nd.dcgm, nd.nextSer, nd.name)
			nd.nextSer = nd.nextSer.Add(s.Interval)
		}
	}
	if d.cfg.Observe != nil && d.cfg.ObserveInterval > 0 {
		for !nd.nextObs.After(t) {
			d.cfg.Observe(nd.nextObs, nd.instance())
			nd.nextObs = nd.nextObs.Add(d.cfg.ObserveInterval)
		}
	}
}

// recordIdle takes the readings due by t of every replica not stepping,
// whose clocks then move on to t: an idle replica keeps the fleet's time.
func (d *driver) recordIdle(t time.Time) {
	for _, nd := range d.running {
		if !nd.busy() && nd.state != starting {
			d.record(nd, t)
			if t.After(nd.clk.now) {
				nd.clk.now = t
			}
		}
	}
}

// idleArrival is the earliest arrival before t at a replica that is idle.
func (d *driver) idleArrival(t time.Time) (time.Time, bool) {
	best, ok := t, false
	for _, nd := range d.running {
		if len(nd.arrivals) > 0 && !nd.busy() && nd.arrivals[0].Before(best) {
			best, ok = nd.arrivals[0], true
		}
	}
	return best, ok
}

// finishReadings takes a replica's readings to t and one at t, so that the
// last requests count.
func (d *driver) finishReadings(nd *node, t time.Time) {
	if nd.rank > 0 {
		return
	}
	d.record(nd, t)
	if s := d.cfg.Series; s != nil && s.Interval > 0 && !s.taken(t, nd.name) {
		s.take(nd.gather, nd.dcgm, t, nd.name)
	}
	if d.cfg.Observe != nil && d.cfg.ObserveInterval > 0 {
		d.cfg.Observe(t, nd.instance())
	}
}

// finish ends the run at the last answer.
func (d *driver) finish() {
	for _, nd := range d.running {
		d.finishReadings(nd, d.last)
	}
}

// Package simulate runs glassbox's own engine, scheduler, KV cache and
// metrics over the simulated GPU in virtual time: glassbox simulate. A
// workload's requests are sent on a virtual clock, every engine step moves
// the clock on by the step's simulated cost, and each request is measured
// as a client of vLLM's API server would measure it, the server's frontend
// (HTTP, tokenisation, streaming) modelled by the hardware profile's
// Frontend. A twenty-minute run takes seconds.
//
// It assembles its replica through internal/replica, as serve does, and
// drives the engine with Advance instead of Run; it serves nothing and reads
// no flags or environment.
package simulate

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Epoch is where the virtual clock starts unless told otherwise.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is one simulated run.
type Config struct {
	// Replica is the server as serve would build it from the same flags;
	// it must be the simulator (no Model). Clock, the time scale and the
	// registry are simulate's.
	Replica replica.Config
	Plan    *workload.Plan
	Start   time.Time // the virtual clock's start; zero is Epoch

	// Series, when set, records the replica's /metrics at its interval of
	// virtual time (see Series).
	Series *Series
	// Observe, when set, sees the replica's registry at every interval of
	// virtual time, and its dcgm-exporter when Replica.DCGM is set (nil
	// otherwise): the doctor builds its windows this way.
	Observe         func(at time.Time, g prometheus.Gatherer, dcgm http.Handler)
	ObserveInterval time.Duration

	// RequestTimeout, when positive, is each client's limit, as bench's
	// --request-timeout: a request not answered by then is given up, the
	// client disconnects and the engine aborts it.
	RequestTimeout time.Duration
}

// Result is a run: every request as its client saw it, in schedule order.
type Result struct {
	Outputs []bench.Output
	// Tokens is, per output, when the engine sampled its first and last
	// tokens and how long those steps took (what a calibration needs to
	// tell engine time from the frontend's).
	Tokens   []TokenTimes
	Start    time.Time     // virtual
	Duration time.Duration // virtual: from the start to the last answer
	Wall     time.Duration // what it took here
	Steps    uint64
	Gatherer prometheus.Gatherer // the replica's metrics at the end
	Frontend sim.Frontend
	Engine   engine.Config
	// Stages are the stages the plan ran (a sweep's, once its probe found
	// them); Saturation the rate its probe found.
	Stages     []workload.Stage
	Saturation float64
}

// Speedup is virtual time over wall time.
func (r *Result) Speedup() float64 { return r.Duration.Seconds() / max(r.Wall.Seconds(), 1e-9) }

// Run simulates cfg.Plan against the replica cfg describes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	wallStart := time.Now()
	if cfg.Replica.Model != "" {
		return nil, errors.New("simulate: it runs the simulated GPU; a GGUF --model is for serve")
	}
	if cfg.Plan == nil || len(cfg.Plan.Prompts) == 0 {
		return nil, errors.New("simulate: no workload")
	}
	if cfg.Plan.ResponseFormat != nil {
		// The engine does not constrain decoding yet; a run that ignored
		// the format would time outputs it could not produce.
		return nil, errors.New("simulate: api.response_format (structured output) is not honoured by the simulated engine yet: remove it from the configuration to simulate the load without it")
	}
	if err := checkAdapters(cfg); err != nil {
		return nil, err
	}
	start := cfg.Start
	if start.IsZero() {
		start = Epoch
	}
	clk := &Clock{now: start}
	rc := cfg.Replica
	rc.Clock = clk
	rc.Sim.TimeScale = 1
	rc.Sim.PlainTokens = true
	if cfg.Series != nil {
		rc.DCGM = true // --metrics-out carries the GPU's series, as a fleet's Prometheus does
	}
	if rc.Registerer == nil && rc.Gatherer == nil {
		reg := prometheus.NewRegistry() // no Go or process collectors: they would read this machine, not the simulated one
		rc.Registerer, rc.Gatherer = reg, reg
	}
	steps := &stepSeqs{}
	rc.Observers = append(append([]engine.Observer(nil), rc.Observers...), steps)
	calib, err := calibration(rc.Sim)
	if err != nil {
		return nil, err
	}
	rep, err := replica.New(rc)
	if err != nil {
		return nil, err
	}
	defer rep.Close()
	d := &driver{
		cfg: &cfg, clk: clk, start: start, eng: rep.Engine, fe: calib.Frontend, steps: steps,
		sch: cfg.Plan.Start(), live: make(map[string]*flight), flights: make(map[int]*flight), gather: rep.Gatherer(), dcgm: rep.DCGMHandler(), vocab: rep.Tokenizer,
	}
	if err := d.run(ctx); err != nil {
		rep.Engine.Stop()
		return nil, err
	}
	rep.Engine.Stop()
	if err := d.sch.Err(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	return &Result{Outputs: d.outputs, Tokens: d.tokens, Start: start, Duration: d.last.Sub(start), Wall: time.Since(wallStart),
		Steps: rep.Engine.Stats().Steps, Gatherer: rc.Gatherer, Frontend: calib.Frontend, Engine: rep.EngineConfig,
		Stages: d.sch.Stages(), Saturation: d.sch.Saturation()}, nil
}

// checkAdapters refuses a LoRA traffic split naming an adapter the
// simulated server does not serve, as inference-perf's client does.
func checkAdapters(cfg Config) error {
	var served []string
	if cfg.Replica.LoRA != nil {
		for _, m := range cfg.Replica.LoRA.Modules {
			served = append(served, m.Name)
		}
	}
	for _, l := range cfg.Plan.LoRA {
		if !slices.Contains(served, l.Name) {
			return fmt.Errorf("simulate: load.lora_traffic_split sends to the LoRA adapter %q, which the simulated server does not serve: give --enable-lora --lora-modules %s=PATH", l.Name, l.Name)
		}
	}
	return nil
}

// TokenTimes are one request's first and last tokens on the engine's clock.
type TokenTimes struct {
	First, Last         time.Time
	FirstStep, LastStep time.Duration
}

// calibration is the coefficients the executor will use.
func calibration(c sim.Config) (sim.Calibration, error) {
	if c.Calib != nil {
		return *c.Calib, nil
	}
	hw, err := sim.LookupHardware(c.Hardware)
	if err != nil {
		return sim.Calibration{}, fmt.Errorf("simulate: %w", err)
	}
	return hw.Calib, nil
}

// Clock is virtual time: Sleep moves it on at once.
type Clock struct{ now time.Time }

func (c *Clock) Now() time.Time        { return c.now }
func (c *Clock) Sleep(d time.Duration) { c.now = c.now.Add(d) }

// stepSeqs records which requests each step ran, so that the driver reads
// only their streams.
type stepSeqs struct{ ids []string }

func (s *stepSeqs) ObserveStep(ev *engine.StepEvent) {
	for _, q := range ev.Seqs {
		s.ids = append(s.ids, q.ID)
	}
}
func (s *stepSeqs) ObserveFinished(*engine.FinishedEvent) {}

// flight is one request from its send to its answer.
type flight struct {
	req     workload.Request
	stream  *engine.Stream
	out     bench.Output
	sent    time.Time // the client's send
	engLast time.Time // the client-visible time of the previous token, before the per-token time
	tokens  TokenTimes
	ids     []int // the answer, for a session's next round
	gone    bool  // the client timed out; the engine's abort is still due
}

// event is something due at a virtual time: a request reaching the engine
// after the frontend, an answer reaching its client, or a client's
// timeout.
type event struct {
	at   time.Time
	f    *flight
	kind eventKind
}

type eventKind int

const (
	arrive eventKind = iota
	answered
	timeout
)

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].at.Before(e[j].at) || e[i].at.Equal(e[j].at) && e[i].f.req.Index < e[j].f.req.Index
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
	clk     *Clock
	start   time.Time
	eng     *engine.Engine
	fe      sim.Frontend
	steps   *stepSeqs
	sch     *workload.Schedule
	gather  prometheus.Gatherer
	dcgm    http.Handler
	vocab   interface{ Encode(string) []int }
	pending events
	live    map[string]*flight // submitted to the engine and not finished
	gone    []*flight          // timed out, aborted, and not yet finished in the engine
	flights map[int]*flight    // sent and not answered, by request index
	outputs []bench.Output
	tokens  []TokenTimes
	last    time.Time // the last answer
	nextObs time.Time
	nextSer time.Time
}

func (d *driver) run(ctx context.Context) error {
	d.last = d.start
	d.nextObs, d.nextSer = d.start, d.start
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		now := d.clk.Now()
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
		if len(d.live) > 0 {
			d.record(now)
			busy := d.eng.Advance()
			d.collect(now)
			if busy || len(d.gone) == 0 {
				continue
			}
			// Only aborted requests were left: the engine is idle now.
		}
		// The engine is idle: move on to the next event.
		wake, ok := time.Time{}, false
		if len(d.pending) > 0 {
			wake, ok = d.pending[0].at, true
		}
		if next >= 0 && (!ok || d.start.Add(next).Before(wake)) {
			wake, ok = d.start.Add(next), true
		}
		if !ok {
			if d.sch.Done() {
				d.record(d.last)
				d.finishSeries()
				return nil
			}
			return errors.New("simulate: the schedule waits on requests that no longer run (a bug)")
		}
		d.record(wake)
		if wake.After(now) {
			d.clk.Sleep(wake.Sub(now))
		}
	}
}

// send starts a request released by the schedule: it reaches the engine
// after the frontend's arrival time.
func (d *driver) send(r workload.Request, now time.Time) {
	if r.Index >= len(d.outputs) {
		d.outputs = append(d.outputs, make([]bench.Output, r.Index+1-len(d.outputs))...)
		d.tokens = append(d.tokens, make([]TokenTimes, r.Index+1-len(d.tokens))...)
	}
	f := &flight{req: r, sent: now}
	d.flights[r.Index] = f
	f.out.Start = now
	f.out.QueueTime = now.Sub(d.start.Add(r.Due))
	f.out.Stage = r.Stage
	f.out.PromptLen = r.Sample.PromptLen
	heap.Push(&d.pending, event{at: now.Add(d.fe.Arrival), f: f})
	if t := d.cfg.RequestTimeout; t > 0 {
		heap.Push(&d.pending, event{at: now.Add(t), f: f, kind: timeout})
	}
}

// fire handles every event due by now.
func (d *driver) fire(now time.Time) {
	for len(d.pending) > 0 && !d.pending[0].at.After(now) {
		ev := heap.Pop(&d.pending).(event)
		switch ev.kind {
		case answered:
			d.answer(ev.f, ev.at)
		case arrive:
			d.submit(ev.f, ev.at)
		case timeout:
			d.giveUp(ev.f, ev.at)
		}
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
		d.abandon(f, now, "request timed out", "TimeoutError")
		return
	}
	d.abandon(f, now, "cancelled with the run (a sweep's probe past its timeout, or a circuit breaker)", "CancelledError")
}

// submit hands a request to the engine as the API server would.
func (d *driver) submit(f *flight, at time.Time) {
	if f.gone {
		return // the client gave up before the frontend handed it on
	}
	s := f.req.Sample
	prompt := s.PromptIDs
	if prompt == nil {
		prompt = d.vocab.Encode(s.Prompt)
	}
	params := sampling.Defaults()
	params.MaxTokens, params.IgnoreEOS = max(s.OutputLen, 1), true
	req := &engine.Request{ID: strconv.Itoa(f.req.Index), Prompt: prompt, Arrival: f.sent, Params: params, LoRA: f.req.Model}
	st, err := d.eng.Submit(req)
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
	f.out.PromptLen = len(prompt)
	d.live[req.ID] = f
}

// giveUp is a client's timeout: unless its answer is already complete, it
// disconnects, which the API server turns into an abort.
func (d *driver) giveUp(f *flight, at time.Time) {
	d.abandon(f, at, "request timeout", "TimeoutError")
}

// abandon is the client giving up on f at at: it has its answer (an error)
// then, and the engine aborts the request, whose stream is reaped later.
func (d *driver) abandon(f *flight, at time.Time, msg, typ string) {
	if f.gone || f.out.Latency > 0 || f.out.Error != "" {
		return // answered (or refused) in time
	}
	f.gone = true
	f.out.Error, f.out.ErrorType = msg, typ
	f.out.Latency = at.Sub(f.sent)
	d.answer(f, at)
	if f.stream != nil {
		d.eng.Abort(strconv.Itoa(f.req.Index))
		d.gone = append(d.gone, f)
	}
}

// reap reads the streams of given-up requests until the engine has ended
// them; their outputs go nowhere.
func (d *driver) reap() {
	keep := d.gone[:0]
	for _, f := range d.gone {
		finished := false
		for {
			o, ok := f.stream.TryNext()
			if !ok {
				break
			}
			finished = finished || o.Finished
		}
		if finished {
			delete(d.live, strconv.Itoa(f.req.Index))
		} else {
			keep = append(keep, f)
		}
	}
	d.gone = keep
}

// collect reads the streams of the requests the step from began ran.
// Tokens reach the client after the frontend's lag and its per-token time,
// which BLIS adds to the first token and to every gap; neither holds the
// GPU's clock up.
func (d *driver) collect(began time.Time) {
	end := d.clk.Now()
	dur := end.Sub(began)
	now := end.Add(time.Duration(d.fe.LagSteps * float64(dur)))
	for _, id := range d.steps.ids {
		f := d.live[id]
		if f == nil || f.gone {
			continue
		}
		o, ok := f.stream.TryNext()
		if !ok {
			continue
		}
		if len(o.Tokens) > 0 {
			if f.out.OutputTokens == 0 {
				f.tokens.First, f.tokens.FirstStep = end, dur
			}
			f.tokens.Last, f.tokens.LastStep = end, dur
		}
		for range o.Tokens {
			if f.out.OutputTokens == 0 {
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
			delete(d.live, id)
			f.out.PromptLen = o.PromptTokens
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
	d.steps.ids = d.steps.ids[:0]
	if len(d.gone) > 0 {
		d.reap()
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
	f.out.Model, f.out.Due, f.out.End = f.req.Model, f.req.Due, at
	d.outputs[f.req.Index] = f.out
	d.tokens[f.req.Index] = f.tokens
	d.sch.Finished(f.req, at.Sub(d.start), workload.Outcome{OK: f.out.Success, IDs: f.ids, OutputTokens: f.out.OutputTokens,
		PromptTokens: f.out.PromptLen, ErrorType: f.out.ErrorType, Error: f.out.Error})
}

// record takes the readings due by t (the state is constant between
// steps, so a reading at the first step boundary after its time is the
// reading at its time).
func (d *driver) record(t time.Time) {
	if s := d.cfg.Series; s != nil && s.Interval > 0 {
		for !d.nextSer.After(t) {
			s.take(d.gather, d.dcgm, d.nextSer)
			d.nextSer = d.nextSer.Add(s.Interval)
		}
	}
	if d.cfg.Observe != nil && d.cfg.ObserveInterval > 0 {
		for !d.nextObs.After(t) {
			d.cfg.Observe(d.nextObs, d.gather, d.dcgm)
			d.nextObs = d.nextObs.Add(d.cfg.ObserveInterval)
		}
	}
}

func (d *driver) finishSeries() {
	if s := d.cfg.Series; s != nil && s.Interval > 0 && !s.taken(d.last) {
		s.take(d.gather, d.dcgm, d.last) // the final state, so the last requests count
	}
	if d.cfg.Observe != nil && d.cfg.ObserveInterval > 0 {
		d.cfg.Observe(d.last, d.gather, d.dcgm)
	}
}

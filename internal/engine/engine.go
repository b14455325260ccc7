package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassbox-llm/glassbox/internal/kvcache"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/sched"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Engine is the serving loop. Create it with New and start Run in its own
// goroutine; Submit, Abort and Stats are safe from any goroutine.
type Engine struct {
	cfg   Config
	clock Clock
	exec  Executor
	caps  Capabilities // what exec declares
	obs   Observer
	log   *slog.Logger

	// Shared with submitters, guarded by mu.
	mu     sync.Mutex
	inbox  []*reqState
	aborts []string
	snaps  []chan *Snapshot    // callers of Snapshot waiting for the next gap between steps
	idles  []chan struct{}     // callers of AwaitIdle, closed when nothing is queued or running
	room   chan struct{}       // closed when the queue shrinks, for AwaitRoom; nil without waiters
	ids    map[string]struct{} // live request ids
	closed bool
	dead   *DeadError    // why the executor killed the engine; nil while it lives
	wake   chan struct{} // holds a token when inbox or aborts are non-empty

	queued atomic.Int64 // submitted and not yet admitted: the overload measure
	driven atomic.Bool  // handed to a driver's goroutine (Drive): its streams take no locks
	shrunk bool         // queued fell since the last deliver (Run goroutine only)

	statsMu sync.Mutex
	stats   Stats

	// Owned by the Run goroutine.
	sched   *sched.Scheduler
	kv      *kvcache.Manager
	byID    map[string]*reqState
	slots   []*reqState // indexed by sched.Seq.ID
	free    []int
	plan    sched.Plan
	batch   Batch
	result  StepResult
	ev      StepEvent
	fin     FinishedEvent
	out     Output
	toks    []int // the tokens of the output being built
	perPos  []int // the step's accepted drafts by position
	ngram   speculative.Ngram
	finals  []final // finished requests' last outputs, delivered after the step
	steps   uint64
	preempt uint64
	seed    uint64
	stepAt  time.Time   // start of the current step, for Phase records
	timer   KernelTimer // the executor, when it times kernels and Config.Profiling is set
	timing  bool        // timer is on

	// The executor goroutine, under Config.StepTimeout only (dead.go).
	calls    chan struct{}
	results  chan execResult
	watchdog *time.Timer

	loraSeen []bool // scratch of adapters, by id

	xfer      *transfers // the offload tier's copies; nil without one
	residency *residency // --kv-cache-metrics; nil without
	carried   carried    // look-ups of plans that ran no step
}

// reqState is the engine's record of one request.
type reqState struct {
	req    *Request
	seq    sched.Seq
	stream *Stream
	rng    *rand.Rand
	eos    []int // tokens that end the sequence unless ignore_eos (stop tokens always do)
	stops  []int // eos and the stop token ids: banned while min_tokens is unmet
	maxLen int   // prompt plus output never exceeds this

	numOutput int
	// Speculative decoding: drafting's back-off, how many positions hold
	// a draft model's K/V, and the step's tokens with the drafts.
	backoff speculative.Backoff
	draftKV int
	verify  []int

	queued time.Time
	// loading: its prefix is being loaded from the offload tier;
	// loaded: the load ended and it has not run since.
	loading, loaded bool

	firstSch time.Time
	firstTok time.Time
	lastTok  time.Time
	phases   []Phase // only with Config.RecordPhases
}

// New checks cfg and builds an engine around exec. obs may be nil.
func New(cfg Config, exec Executor, obs Observer) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = WallClock()
	}
	if obs == nil {
		obs = nopObserver{}
	}
	kv, err := kvcache.New(kvcache.Config{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, EnablePrefixCaching: cfg.EnablePrefixCaching,
		HostBlocks: cfg.Offload.Blocks})
	if err != nil {
		return nil, err
	}
	caps := CapabilitiesOf(exec)
	if err := cfg.CheckCapabilities(caps); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	sp := &cfg.Speculative
	s, err := sched.New(sched.Config{MaxNumSeqs: cfg.MaxNumSeqs, MaxNumBatchedTokens: cfg.MaxNumBatchedTokens,
		MaxLoRAs: cfg.MaxLoRAs, Lookahead: sp.Lookahead(), MaxModelLen: cfg.MaxModelLen}, kv)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg: cfg, clock: cfg.Clock, exec: exec, caps: caps, obs: obs, log: cfg.Logger,
		ids:   make(map[string]struct{}),
		wake:  make(chan struct{}, 1),
		sched: s, kv: kv,
		byID:  make(map[string]*reqState),
		seed:  uint64(cfg.Clock.Now().UnixNano()),
		ngram: speculative.Ngram{Min: sp.PromptLookupMin, Max: sp.PromptLookupMax},
	}
	if sp.Enabled() {
		e.perPos = make([]int, sp.NumSpeculativeTokens)
	}
	if cfg.Offload.Enabled() {
		e.xfer = &transfers{cfg: cfg.Offload}
	}
	if cfg.KVCacheMetrics {
		rate := cfg.KVCacheMetricsSample
		if rate == 0 {
			rate = DefaultKVCacheMetricsSample
		}
		e.residency = newResidency(rate, func() time.Time { return e.stepAt })
		kv.SetTracker(e.residency)
	}
	if kt, ok := exec.(KernelTimer); ok && cfg.Profiling != nil {
		e.timer = kt
	}
	e.publish()
	return e, nil
}

// Config returns the configuration the engine runs with.
func (e *Engine) Config() Config { return e.cfg }

// Stats returns the latest snapshot.
func (e *Engine) Stats() Stats {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return e.stats
}

// Submit queues a request and returns its stream. It never blocks: a full
// queue is ErrOverloaded.
func (e *Engine) Submit(r *Request) (*Stream, error) {
	rs, err := e.prepare(r)
	if err != nil {
		return nil, err
	}
	if err := e.enqueue([]*reqState{rs}); err != nil {
		return nil, err
	}
	return rs.stream, nil
}

// prepare checks r and builds its state.
func (e *Engine) prepare(r *Request) (*reqState, error) {
	if err := e.check(r); err != nil {
		return nil, err
	}
	return e.newState(r), nil
}

// enqueue queues every request of rs, or none: the queue must have room
// for all of them and their ids must be free.
func (e *Engine) enqueue(rs []*reqState) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return e.closedErr()
	case e.queued.Load()+int64(len(rs)) > int64(e.cfg.MaxWaiting):
		return ErrOverloaded
	}
	for i, r := range rs {
		_, dup := e.ids[r.req.ID]
		for _, earlier := range rs[:i] {
			dup = dup || earlier.req.ID == r.req.ID
		}
		if dup {
			return fmt.Errorf("submit %q: %w", r.req.ID, ErrDuplicateID)
		}
	}
	for _, r := range rs {
		e.ids[r.req.ID] = struct{}{}
		e.inbox = append(e.inbox, r)
	}
	e.queued.Add(int64(len(rs)))
	e.signal()
	return nil
}

// AwaitRoom returns once the queue has room for n more requests, at that
// moment: the caller's next Submit or Group.Add may still find it full
// when others got there first, and waits again. It fails with ErrClosed
// after shutdown (the *DeadError once the engine died), with ctx's cause,
// and at once with ErrOverloaded when n exceeds the whole queue.
func (e *Engine) AwaitRoom(ctx context.Context, n int) error {
	if n > e.cfg.MaxWaiting {
		return fmt.Errorf("await room for %d requests in a queue of %d: %w", n, e.cfg.MaxWaiting, ErrOverloaded)
	}
	for {
		e.mu.Lock()
		if e.closed {
			err := e.closedErr()
			e.mu.Unlock()
			return err
		}
		if e.queued.Load()+int64(n) <= int64(e.cfg.MaxWaiting) {
			e.mu.Unlock()
			return nil
		}
		if e.room == nil {
			e.room = make(chan struct{})
		}
		room := e.room
		e.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// signalRoom wakes the AwaitRoom callers after the queue shrank (or the
// engine shut down). Engine goroutine only.
func (e *Engine) signalRoom() {
	e.mu.Lock()
	if e.room != nil {
		close(e.room)
		e.room = nil
	}
	e.mu.Unlock()
}

// Abort ends a request early with FinishAbort. Unknown or finished ids are
// ignored.
func (e *Engine) Abort(id string) { e.abort(id) }

func (e *Engine) abort(ids ...string) {
	e.mu.Lock()
	for _, id := range ids {
		if _, ok := e.ids[id]; ok {
			e.aborts = append(e.aborts, id)
			e.signal()
		}
	}
	e.mu.Unlock()
}

// check is the engine's own contract: a non-empty prompt that fits in the
// context with room for at least one token. Sampling parameters are the
// caller's to validate (openai resolves a request once, with
// sampling.Params.Validate).
func (e *Engine) check(r *Request) error {
	if len(r.Prompt) == 0 {
		return &sampling.ParamError{Param: "prompt", Msg: "the prompt is empty"}
	}
	if r.Params.MaxTokens < 1 {
		return &sampling.ParamError{Param: "max_tokens", Msg: fmt.Sprintf("max_tokens must be at least 1, got %d", r.Params.MaxTokens)}
	}
	if r.Embed {
		if err := e.checkEmbed(); err != nil {
			return err
		}
	}
	if r.LoRA != "" && !slices.Contains(e.cfg.LoRAs, r.LoRA) {
		return &sampling.ParamError{Param: "model", Msg: fmt.Sprintf("no LoRA adapter %q is served", r.LoRA)}
	}
	if r.Params.MaxTokens > e.cfg.MaxModelLen-len(r.Prompt) { // len+MaxTokens would wrap for a huge MaxTokens
		return fmt.Errorf("submit %q: %d prompt tokens plus %d output tokens exceed %d: %w",
			r.ID, len(r.Prompt), r.Params.MaxTokens, e.cfg.MaxModelLen, ErrPromptTooLong)
	}
	return nil
}

func (e *Engine) newState(r *Request) *reqState {
	rs := &reqState{req: r, stream: newStream(r.ID)}
	rs.stream.unlocked = e.driven.Load()
	// Room for typical outputs up front; very long ones grow by append.
	rs.seq.Tokens = make([]int, len(r.Prompt), len(r.Prompt)+min(r.Params.MaxTokens, 1024))
	copy(rs.seq.Tokens, r.Prompt)
	rs.seq.NumPrompt = len(r.Prompt)
	rs.seq.Priority = r.Priority
	rs.seq.NoPrefixCache = r.Embed
	if r.LoRA != "" {
		rs.seq.LoRA = int(e.Namespace(r.LoRA))
	}
	rs.maxLen = min(len(r.Prompt)+r.Params.MaxTokens, e.cfg.MaxModelLen)
	if !r.Params.IgnoreEOS {
		rs.eos = e.cfg.EOS
	}
	if r.Params.MinTokens > 0 {
		rs.stops = append(slices.Clone(rs.eos), r.Params.StopTokenIDs...)
	}
	if r.Arrival.IsZero() {
		r.Arrival = e.clock.Now()
	}
	return rs
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run is the engine goroutine. It blocks while idle and returns when ctx is
// done, after ending every request it still holds as aborted; Submit fails
// with ErrClosed from then on. It also returns when the executor dies
// (dead.go): every request has then ended with the *DeadError, and Submit
// fails with it.
func (e *Engine) Run(ctx context.Context) {
	if e.driven.Load() {
		panic("BUG: engine: Run on an engine handed to a driver (Drive)")
	}
	if e.cfg.StepTimeout > 0 && e.calls == nil {
		e.startExecutor()
	}
	for e.dead == nil {
		if ctx.Err() != nil {
			e.shutdown()
			return
		}
		e.drain()
		if e.sched.NumRunning() == 0 && e.sched.NumWaiting() == 0 {
			e.settleTransfers(ctx)
			e.publish()
			e.answerIdle()
			select {
			case <-e.wake:
			case <-ctx.Done():
			}
			continue
		}
		if !e.step() {
			e.waitLoad(ctx)
		}
	}
}

// Advance is the engine loop turned inside out, for a driver that owns the
// goroutine and the clock (glassbox simulate runs the engine in virtual
// time this way): it admits what was submitted and, if anything is queued
// or running, runs one step. It reports whether work remains. Use either
// Run or Advance on an engine, never both; Stop ends an Advance-driven one.
func (e *Engine) Advance() (busy bool) {
	e.drain()
	if e.sched.NumRunning() == 0 && e.sched.NumWaiting() == 0 {
		e.publish()
		e.answerIdle()
		return false
	}
	if !e.step() {
		e.awaitLoad() // the driver's clock moves on to the load's end
	}
	return e.dead == nil && e.sched.NumRunning()+e.sched.NumWaiting() > 0
}

// Drive hands the engine to a driver that runs it with Advance and owns
// its goroutine, as glassbox simulate does: from then on Submit, Abort
// and the streams' TryNext and TryNextInto are called on that goroutine
// only, never Run nor a stream's Next, which would wait for ever. The
// streams of the requests submitted after it take no locks, which a
// fleet's every token paid twice: a lock pair to push it, one to read it.
// Stats may still be read from anywhere.
func (e *Engine) Drive() { e.driven.Store(true) }

// Stop shuts an Advance-driven engine down as Run does when its context
// ends: everything still held is aborted.
func (e *Engine) Stop() { e.shutdown() }

// drain admits submitted requests to the scheduler and applies aborts.
func (e *Engine) drain() {
	e.mu.Lock()
	inbox, aborts, snaps := e.inbox, e.aborts, e.snaps
	e.inbox, e.aborts, e.snaps = nil, nil, nil
	e.mu.Unlock()
	now := e.clock.Now()
	for _, rs := range inbox {
		rs.queued = now
		rs.rng = sampling.NewRNG(e.seedFor(rs.req))
		rs.seq.ID = e.slot(rs)
		e.byID[rs.req.ID] = rs
		e.sched.Add(&rs.seq)
	}
	for _, id := range aborts {
		if rs, ok := e.byID[id]; ok {
			e.finish(rs, FinishAbort, -1, now, nil, nil)
		}
	}
	if len(e.finals) > 0 {
		e.deliver()
	}
	e.answerSnapshots(snaps)
}

func (e *Engine) seedFor(r *Request) int64 {
	if r.Params.HasSeed {
		return r.Params.Seed
	}
	e.seed = e.seed*6364136223846793005 + 1442695040888963407
	return int64(e.seed)
}

func (e *Engine) slot(rs *reqState) int {
	if n := len(e.free); n > 0 {
		id := e.free[n-1]
		e.free = e.free[:n-1]
		e.slots[id] = rs
		return id
	}
	e.slots = append(e.slots, rs)
	return len(e.slots) - 1
}

// shutdown ends everything still queued or running as aborted.
func (e *Engine) shutdown() { e.stop(FinishAbort, nil) }

// stop closes the engine and ends everything still queued or running with
// reason: aborted at shutdown, failed with dead's error when the executor
// died (dead is then what every later caller gets). Their KV blocks go back
// to the pool; the executor goroutine, if any, ends (after its call
// returns, when it is hung).
func (e *Engine) stop(reason FinishReason, dead *DeadError) {
	e.mu.Lock()
	e.closed = true
	if dead != nil && e.dead == nil {
		e.dead = dead
	}
	idles := e.idles
	e.idles = nil
	e.mu.Unlock()
	if e.calls != nil {
		close(e.calls)
		e.calls = nil
	}
	e.signalRoom() // waiters see the engine closed
	defer func() {
		for _, c := range idles {
			close(c) // everything ends below: the engine is idle for good
		}
	}()
	e.drain()
	now := e.clock.Now()
	var err error
	if dead != nil {
		err = dead
	}
	for _, rs := range e.byID {
		e.finish(rs, reason, -1, now, err, nil)
	}
	e.deliver()
}

// AwaitIdle returns once the engine holds no request: every submitted one
// has finished and been reported to the observer (at once when it is idle
// already). It fails with ErrClosed after shutdown (the *DeadError once the
// engine died) and with ctx's error.
func (e *Engine) AwaitIdle(ctx context.Context) error {
	done := make(chan struct{})
	e.mu.Lock()
	if e.closed {
		err := e.closedErr()
		e.mu.Unlock()
		return err
	}
	e.idles = append(e.idles, done)
	e.signal()
	e.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answerIdle wakes the AwaitIdle callers whose requests were all drained
// before this idle moment. Engine goroutine only.
func (e *Engine) answerIdle() {
	e.mu.Lock()
	if len(e.inbox) > 0 || len(e.aborts) > 0 {
		e.mu.Unlock() // more arrived since the drain: not idle after all
		return
	}
	idles := e.idles
	e.idles = nil
	e.mu.Unlock()
	for _, c := range idles {
		close(c)
	}
}

// publish refreshes the Stats snapshot.
func (e *Engine) publish() {
	st := Stats{
		Running:     e.sched.NumRunning(),
		Waiting:     e.sched.NumWaiting(),
		Steps:       e.steps,
		KVBlocks:    e.kv.NumBlocks(),
		KVFree:      e.kv.NumFree(),
		KVCached:    e.kv.NumFreeCached(),
		KVUsage:     e.kv.Usage(),
		Preemptions: e.preempt,
		// Deferred are passed over for their adapter (the last step) or
		// held back by a KV load, as vLLM's skipped waiting requests.
		Deferred: e.plan.Deferred + e.sched.NumLoading(),
	}
	if e.xfer != nil {
		st.Offload = e.offloadStats(e.clock.Now())
	}
	if e.dead != nil {
		st.Dead = e.dead.Reason
	}
	if len(e.cfg.LoRAs) > 0 {
		st.RunningLoRA, st.WaitingLoRA = e.adapters(e.sched.Running()), e.adapters(e.sched.Waiting())
		st.LoRAAt = e.stepAt
		if st.LoRAAt.IsZero() {
			st.LoRAAt = e.clock.Now() // before the first step: since the start
		}
	}
	e.statsMu.Lock()
	e.stats = st
	e.statsMu.Unlock()
}

// adapters joins the LoRA adapters of qs, each once, in order.
func (e *Engine) adapters(qs []*sched.Seq) string {
	if len(e.loraSeen) != len(e.cfg.LoRAs)+1 {
		e.loraSeen = make([]bool, len(e.cfg.LoRAs)+1)
	}
	clear(e.loraSeen)
	var b strings.Builder
	for _, q := range qs {
		if q.LoRA == 0 || e.loraSeen[q.LoRA] {
			continue
		}
		e.loraSeen[q.LoRA] = true
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.cfg.LoRAs[q.LoRA-1])
	}
	return b.String()
}

type nopObserver struct{}

func (nopObserver) ObserveStep(*StepEvent)         {}
func (nopObserver) ObserveFinished(*FinishedEvent) {}

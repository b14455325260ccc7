package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/sched"
)

// step runs one iteration: plan, execute, deliver, observe. When the
// executor dies in it, the engine stops (dead.go) and the step is not
// observed. It reports false when nothing could run because every
// sequence that could waits on a load from the offload tier: the caller
// lets time pass.
func (e *Engine) step() bool {
	start := e.clock.Now()
	e.stepAt = start
	e.completeTransfers(start)
	e.sched.Schedule(&e.plan)
	p := &e.plan
	if e.xfer != nil {
		e.startLoads(p, start)
	}
	if len(p.Seqs) == 0 {
		// Nothing runs while every sequence that could waits on a load
		// from the offload tier: let time pass to the first one's end.
		// Otherwise nothing fits: only possible if a single request needs
		// more blocks than exist, which Config.Validate and Submit rule out.
		if e.sched.NumLoading() == 0 {
			panic("BUG: engine: sequences are queued but none could be scheduled")
		}
		e.carry(p, start)
		e.publish()
		return false
	}
	for _, q := range p.Admitted {
		rs := e.slots[q.ID]
		rs.loaded = false
		if rs.firstSch.IsZero() {
			rs.firstSch = start
			e.queued.Add(-1)
			e.shrunk = true
		}
		if e.drafting() {
			// A prefix hit shares blocks whose draft K/V may have been
			// computed (a draft model catches up when it next drafts).
			rs.draftKV = e.sched.DraftedPrefix(q)
		}
	}
	e.buildBatch()
	scheduled := e.clock.Now()

	e.result.FLOPs, e.result.ReadBytes, e.result.WriteBytes, e.result.Activity = 0, 0, 0, GPUActivity{}
	e.result.HostTime, e.result.Kernels = 0, nil
	e.timeKernels()
	res := e.execute()
	if d := e.deathOf(&res, len(p.Seqs)); d != nil {
		e.die(d, res.stack) // the step's requests fail with the rest
		return true
	}
	err := res.err
	executed := e.clock.Now()
	if e.result.HostTime > 0 {
		e.clock.Sleep(e.result.HostTime) // the host's share of the step: the GPU idles
	}
	done := e.clock.Now()
	busy := executed.Sub(scheduled)
	if d := e.result.DeviceTime; d > 0 && d < busy {
		busy = d // the rest of Execute was the host's
	}
	e.result.DeviceTime = 0
	e.steps++
	e.preempt += uint64(len(p.Preempted))

	ev := &e.ev
	*ev = StepEvent{
		Start: start, ScheduleTime: scheduled.Sub(start), ExecuteTime: busy, HostTime: done.Sub(executed),
		NumSeqs: len(p.Seqs), NumTokens: p.NumTokens,
		Preemptions: len(p.Preempted), PrefixQueries: p.PrefixQueries, PrefixHits: p.PrefixHits,
		ExternalQueries: p.ExternalQueries, ExternalHits: p.ExternalHits, ExternalLookups: p.ExternalLookups,
		TTFTs: ev.TTFTs[:0], ITLs: ev.ITLs[:0], Seqs: ev.Seqs[:0], Preempted: ev.Preempted[:0],
		FLOPs: e.result.FLOPs, ReadBytes: e.result.ReadBytes, WriteBytes: e.result.WriteBytes, Activity: e.result.Activity,
		SpecAcceptedPerPos: e.perPos, Kernels: e.result.Kernels,
		Offload: ev.Offload, BlockEvictions: ev.BlockEvictions[:0],
	}
	clear(e.perPos)
	e.takeCarried(ev)
	if e.xfer != nil {
		e.startStores(done)
		e.xfer.takeEvent(&ev.Offload)
	}
	if r := e.residency; r != nil {
		ev.BlockEvictions = append(ev.BlockEvictions, r.out...)
		r.out = r.out[:0]
	}
	for _, q := range p.Preempted {
		rs := e.slots[q.ID]
		rs.loaded = false // freed to unblock others, it holds its load no more
		ev.Preempted = append(ev.Preempted, rs.req.ID)
		if e.cfg.RecordPhases {
			rs.phases = append(rs.phases, Phase{Kind: PhasePreempted, Start: start, End: start})
		}
	}
	if err != nil {
		e.log.Error("execute step", "err", err, "seqs", len(p.Seqs))
		for _, sc := range p.Seqs {
			e.finish(e.slots[sc.Seq.ID], FinishError, -1, done, err, nil)
		}
	} else {
		for i, sc := range p.Seqs {
			if e.slots[sc.Seq.ID].req.Embed {
				e.pooled(sc, e.result.Embeddings[i], done)
				continue
			}
			e.advance(i, sc, done)
		}
		e.propose()
	}
	ev.End = e.clock.Now()
	ev.Running, ev.Waiting, ev.KVUsage = e.sched.NumRunning(), e.sched.NumWaiting(), e.kv.Usage()
	e.obs.ObserveStep(ev)
	e.deliver()
	return true
}

// timeKernels turns the executor's kernel timing on when a profile starts
// recording and off when it ends: one call to Config.Profiling a step.
func (e *Engine) timeKernels() {
	if e.timer == nil {
		return
	}
	if on := e.cfg.Profiling(); on != e.timing {
		e.timing = on
		e.timer.TimeKernels(on)
	}
}

// final is a finished request's last output, held until the step's
// events are observed and the stats published.
type final struct {
	stream *Stream
	out    Output
}

// deliver publishes the stats, then hands the finished requests their
// final outputs: by the time a client sees its request end, /metrics
// already counts it.
func (e *Engine) deliver() {
	e.publish()
	if e.shrunk {
		e.shrunk = false
		e.signalRoom()
	}
	for i := range e.finals {
		f := &e.finals[i]
		f.stream.push(&f.out)
		*f = final{}
	}
	e.finals = e.finals[:0]
}

// buildBatch flattens the plan for the executor, reusing its slices.
func (e *Engine) buildBatch() {
	b := &e.batch
	b.Seqs = b.Seqs[:0]
	b.NumTokens = e.plan.NumTokens
	for _, sc := range e.plan.Seqs {
		q := sc.Seq
		rs := e.slots[q.ID]
		tokens := q.Tokens[q.NumComputed : q.NumComputed+sc.NumNew-sc.NumSpec]
		var draft []int
		if sc.NumSpec > 0 {
			draft = q.Spec[:sc.NumSpec]
			rs.verify = append(append(rs.verify[:0], tokens...), draft...)
			tokens = rs.verify
		}
		b.Seqs = append(b.Seqs, SeqBatch{
			Seq:        q.ID,
			Tokens:     tokens,
			Pos:        q.NumComputed,
			BlockTable: q.BlockTable(),
			Sample:     sc.Sample,
			Embed:      rs.req.Embed,
			Banned:     rs.banned(),
			Constraint: rs.req.Constraint,
			History:    q.Tokens,
			NumPrompt:  q.NumPrompt,
			Params:     &rs.req.Params,
			RNG:        rs.rng,
			LoRA:       q.LoRA,
			Draft:      draft,
			Propose:    e.proposeCount(rs, sc),
			DraftKV:    rs.draftKV,
		})
	}
	r := &e.result
	if cap(r.Samples) < len(b.Seqs) {
		n := 2 * len(b.Seqs)
		r.Samples = make([]sampling.Result, len(b.Seqs), n)
		r.Embeddings = make([][]float32, len(b.Seqs), n)
		r.Accepted = make([][]sampling.Result, len(b.Seqs), n)
		r.Drafts = make([][]int, len(b.Seqs), n)
		r.DraftKV = make([]int, len(b.Seqs), n)
	}
	r.Samples = r.Samples[:len(b.Seqs)]
	r.Embeddings = r.Embeddings[:len(b.Seqs)]
	r.Accepted = r.Accepted[:len(b.Seqs)]
	r.Drafts = r.Drafts[:len(b.Seqs)]
	r.DraftKV = r.DraftKV[:len(b.Seqs)]
	clear(r.Embeddings)
	clear(r.Accepted)
	clear(r.Drafts)
	for i := range b.Seqs {
		r.DraftKV[i] = b.Seqs[i].DraftKV // unchanged unless a draft model computes more
	}
}

// advance applies the i'th sequence's share of a finished step: its
// computed tokens, the drafts verification accepted (the rest rolled
// back) and its new tokens, each checked for the end of the sequence in
// turn, as vLLM's scheduler appends a verify step's tokens.
func (e *Engine) advance(i int, sc sched.Scheduled, now time.Time) {
	q := sc.Seq
	rs := e.slots[q.ID]
	ev := &e.ev
	decode := sc.NumNew == 1+sc.NumSpec && rs.numOutput > 0 && q.NumComputed == len(q.Tokens)-1
	if decode {
		ev.NumDecodeSeqs++
	} else {
		ev.NumPrefillTokens += sc.NumNew
	}
	ev.Seqs = append(ev.Seqs, StepSeq{ID: rs.req.ID, Tokens: sc.NumNew, Decode: decode})
	if e.cfg.RecordPhases {
		rs.recordStep(decode, sc.NumNew, e.stepAt, now)
	}
	e.sched.Computed(sc)
	var accepted []sampling.Result
	if sc.NumSpec > 0 {
		accepted = e.result.Accepted[i]
		if err := e.verified(rs, sc, accepted); err != nil {
			e.log.Error("speculative decoding", "id", rs.req.ID, "err", err)
			e.finish(rs, FinishError, -1, now, err, nil)
			return
		}
	}
	if !sc.Sample {
		return
	}

	out := &e.out
	e.toks = e.toks[:0]
	*out = Output{Logprobs: out.Logprobs[:0], StopToken: -1, PromptTokens: q.NumPrompt, CachedTokens: cachedTokens(q)}
	first := rs.firstTok.IsZero()
	for j := range len(accepted) + 1 {
		s := &e.result.Samples[i]
		if j < len(accepted) {
			s = &accepted[j]
		}
		reason, stopTok := e.append(rs, s, now)
		if reason == FinishError {
			return // append finished it
		}
		if reason != "" {
			out.Tokens = e.toks
			if rs.req.Sink != nil && (reason == FinishLength || stopTok >= 0) {
				out.Text += rs.req.Sink.Flush()
			}
			if !first {
				ev.ITLs = append(ev.ITLs, now.Sub(rs.lastTok).Seconds())
			}
			rs.lastTok = now
			e.finish(rs, reason, stopTok, now, nil, out)
			return
		}
	}
	out.Tokens = e.toks
	if !first {
		ev.ITLs = append(ev.ITLs, now.Sub(rs.lastTok).Seconds())
	}
	rs.lastTok = now
	rs.stream.push(out)
}

// append adds one generated token to rs and to the output being built,
// and says whether it ends the sequence (FinishError has finished it
// already).
func (e *Engine) append(rs *reqState, s *sampling.Result, now time.Time) (FinishReason, int) {
	q := &rs.seq
	ev := &e.ev
	out := &e.out
	tok := s.Token
	q.Tokens = append(q.Tokens, tok)
	rs.numOutput++
	ev.GenerationTokens++
	ev.IterationTokens++
	if rs.firstTok.IsZero() {
		rs.firstTok = now
		ev.TTFTs = append(ev.TTFTs, now.Sub(rs.req.Arrival).Seconds())
		ev.PromptTokens += q.NumPrompt
		ev.CachedTokens += cachedTokens(q)
		ev.ExternalTokens += q.NumExternal
		ev.IterationTokens += q.NumPrompt - cachedTokens(q)
	}
	e.toks = append(e.toks, tok)
	p := &rs.req.Params
	if p.Logprobs >= 0 {
		// The executor reuses its Top buffer: keep a copy.
		out.Logprobs = append(out.Logprobs, sampling.Result{Token: tok, Logprob: s.Logprob, Top: slices.Clone(s.Top)})
	}
	reason, stopTok := e.stopReason(rs, tok)
	if reason == "" && rs.req.Constraint != nil && !rs.req.Constraint.Accept(tok) {
		// The executor sampled outside the mask: a bug, reported as the
		// sequence's failure rather than output that breaks its contract.
		err := fmt.Errorf("sampled token %d is outside the structured-output constraint", tok)
		e.log.Error("constraint", "id", rs.req.ID, "err", err)
		e.finish(rs, FinishError, -1, now, err, nil)
		return FinishError, -1
	}
	if reason == "" && rs.req.Sink != nil {
		text, stop := rs.req.Sink.Append(tok)
		out.Text += text
		if stop {
			reason = FinishStop
		}
	}
	if reason == "" && (rs.numOutput >= p.MaxTokens || len(q.Tokens) >= rs.maxLen) {
		reason = FinishLength
	}
	return reason, stopTok
}

// pooled applies an embedding request's share of a step: a prompt chunk,
// and on the last one the vector it ends with.
func (e *Engine) pooled(sc sched.Scheduled, vec []float32, now time.Time) {
	q := sc.Seq
	rs := e.slots[q.ID]
	ev := &e.ev
	ev.NumPrefillTokens += sc.NumNew
	ev.Seqs = append(ev.Seqs, StepSeq{ID: rs.req.ID, Tokens: sc.NumNew})
	if e.cfg.RecordPhases {
		rs.recordStep(false, sc.NumNew, e.stepAt, now)
	}
	e.sched.Computed(sc)
	if !sc.Sample {
		return
	}
	// The vector is the request's one output: its first and last "token"
	// for the timeline, though no token was generated.
	rs.firstTok, rs.lastTok = now, now
	ev.PromptTokens += q.NumPrompt
	ev.CachedTokens += cachedTokens(q)
	ev.ExternalTokens += q.NumExternal
	ev.IterationTokens += q.NumPrompt - cachedTokens(q)
	if vec == nil {
		err := fmt.Errorf("the executor returned no embedding for %q", rs.req.ID)
		e.finish(rs, FinishError, -1, now, err, nil)
		return
	}
	out := Output{StopToken: -1, PromptTokens: q.NumPrompt, CachedTokens: cachedTokens(q), Embedding: slices.Clone(vec)}
	e.finish(rs, FinishStop, -1, now, nil, &out)
}

// banned is what the executor must not sample for rs now.
func (rs *reqState) banned() []int {
	if rs.numOutput < rs.req.Params.MinTokens {
		return rs.stops
	}
	return nil
}

// stopReason checks EOS (unless ignore_eos) and stop token ids, both only
// once min_tokens outputs exist, as vLLM's stop checker does.
func (e *Engine) stopReason(rs *reqState, tok int) (FinishReason, int) {
	p := &rs.req.Params
	if rs.numOutput < p.MinTokens {
		return "", -1
	}
	if slices.Contains(rs.eos, tok) || slices.Contains(p.StopTokenIDs, tok) {
		return FinishStop, tok
	}
	return "", -1
}

// finish ends a request: frees its blocks, releases its id, reports it and
// queues its final output for deliver: last, the tokens and text of the
// step that ended it, or nil when it ends between outputs (an abort, an
// executor error).
func (e *Engine) finish(rs *reqState, reason FinishReason, stopTok int, now time.Time, err error, last *Output) {
	out := Output{StopToken: -1}
	if last != nil {
		out = *last
		out.Tokens, out.Logprobs = slices.Clone(last.Tokens), slices.Clone(last.Logprobs) // last reuses engine buffers
	}
	out.Finished, out.FinishReason, out.StopToken, out.Err = true, reason, stopTok, err
	out.PromptTokens, out.CachedTokens, out.Timing = rs.seq.NumPrompt, cachedTokens(&rs.seq), rs.timing(now)
	e.finals = append(e.finals, final{stream: rs.stream, out: out})
	if rs.firstSch.IsZero() {
		e.queued.Add(-1) // left before admission
		e.shrunk = true
	}
	if rs.loading {
		e.dropLoad(rs)
	}
	e.sched.Finish(&rs.seq)
	delete(e.byID, rs.req.ID)
	e.slots[rs.seq.ID] = nil
	e.free = append(e.free, rs.seq.ID)
	e.mu.Lock()
	delete(e.ids, rs.req.ID)
	e.mu.Unlock()

	maxTokens := rs.req.Params.MaxTokens
	if rs.req.Embed {
		maxTokens = 0 // an embedding has no max_tokens of its own
	}
	f := &e.fin
	*f = FinishedEvent{
		ID: rs.req.ID, Group: rs.req.Group, GroupSize: rs.req.GroupSize, Reason: reason,
		PromptTokens: rs.seq.NumPrompt, CachedTokens: cachedTokens(&rs.seq), GenerationTokens: rs.numOutput,
		MaxTokens: maxTokens, Timing: rs.timing(now),
		Request: rs.req, Phases: rs.phases,
	}
	e.obs.ObserveFinished(f)
}

// cachedTokens are q's prompt tokens not computed at its last admission:
// found in the prefix cache or loaded from the offload tier (vLLM's
// num_cached_tokens counts both).
func cachedTokens(q *sched.Seq) int { return q.NumCached + q.NumExternal }

package doctor

import "math"

// The states the rules and the three answers are built on, each defined
// once over signals. They take a getter so that a signal's definition (the
// plateau inference of max_num_seqs) can use them over its view too.

type getter func(name SignalName) float64

// kvFull: the KV cache sat at the watermark, or ran out often enough to
// preempt (usage then drops below the line as blocks are freed, so the
// mean understates it).
func kvFull(g getter, th Thresholds) bool {
	return g(SigKVHighShare) >= th.KVHighShare || g(SigPreemptRate) > 0 && g(SigKVPeak) >= th.KVWatermark ||
		g(SigPreemptRate) >= th.PreemptionRate // vLLM preempts only when no block is free: a storm is a full cache, whatever the sampled gauge caught
}

// kvAdmission: requests waited while the free blocks could not hold the
// next one's prompt, below the watermark too (long prompts that each take
// a large share of the cache).
func kvAdmission(g getter, th Thresholds) bool { return g(SigAdmissionShare) >= th.AdmissionShare }

func kvLimited(g getter, th Thresholds) bool { return kvFull(g, th) || kvAdmission(g, th) }

// kvKind is how the KV cache limits, when it does: capacity (it sits at
// the watermark, or preempts there) or admission (below the watermark, the
// next prompt does not fit the free blocks; the odd preemption of a prompt
// admitted in part with a step's leftover budget does not change that).
func (s *Signals) kvKind() string {
	switch {
	case s.v(SigKVHighShare) >= s.th.KVHighShare:
		return "capacity"
	case s.kvAdmission():
		return "admission"
	case s.kvFull():
		return "capacity"
	}
	return ""
}

func (s *Signals) queued() bool { return s.v(SigWaitingShare) >= s.th.WaitingPersistent }

func (s *Signals) kvFull() bool      { return kvFull(s.v, s.th) }
func (s *Signals) kvAdmission() bool { return kvAdmission(s.v, s.th) }
func (s *Signals) kvLimited() bool   { return kvLimited(s.v, s.th) }

// computeSaturated: the engine works flat out (flatOut) on steps that use
// the GPU's arithmetic: full of a token budget at which that arithmetic,
// not the weights' read, sets a step's length (else the budget is the
// limit: budgetLimited), or compute-bound at the GPU's peaks. A busy GPU
// on small decode steps is not saturated (like DCGM's engine activity,
// the busy ratio is near 1 whenever anything runs; a decode step is bound
// by reading weights and KV, not by its token count).
//
// A wide step (hundreds of tokens) is compute-bound on any GPU when it is
// prefill (its tokens share one read of the weights, past every GPU's
// ridge point), and on decode when its arithmetic rivals its memory
// traffic at the GPU's peaks (each decode token also reads its context's
// KV): then larger steps take proportionally longer, and the budget's
// headroom is no headroom.
func (s *Signals) computeSaturated() bool {
	return s.flatOut() && !s.budgetLimited() && !s.stepsHaveRoom() && (s.fullSteps() || s.wideComputeSteps())
}

// stepsHaveRoom: the steps of a prompt-heavy load are short of their token
// budget, and even filled to it they would be too small for the GPU
// (budgetBinds, at the traffic and arithmetic of a full step): more tokens
// fit in each step for little more time, so a GPU busy on them is not
// saturated (a small budget's half-full steps cost nearly what full ones
// do).
func (s *Signals) stepsHaveRoom() bool {
	f := s.v(SigFill)
	return f < s.th.BudgetRaiseFill && s.v(SigPromptPerGen) >= s.th.PromptHeavy && s.budgetBinds(readShareAt(s.v(SigMBU), 1/f), s.v(SigRoofline)/f)
}

// flatOut: the GPU is busy all the time; or the engine is, stepping back to
// back while the queue grows, and the GPU's own reading is low for the
// gaps between its kernels and steps (a tensor-parallel step's
// synchronisation, host work of a few milliseconds a step, FP8's shorter
// kernels), not because the host is the limit (host-bound).
func (s *Signals) flatOut() bool { return s.v(SigBusy) >= s.th.BusyHigh || s.engineFlatOut() }

// engineFlatOut is flatOut read from the engine's activity and the queue
// rather than the GPU's counter.
func (s *Signals) engineFlatOut() bool {
	return s.v(SigEngineBusy) >= s.th.BusyHigh && s.queueGrows() && !s.hostBound()
}

// queueGrows: the waiting queue grew through the window, by min_requests
// at least and by queue_growth of the arrivals: more arrived than the
// engine served.
func (s *Signals) queueGrows() bool {
	g := s.v(SigQueueGrowth)
	return g*s.seconds >= s.th.MinRequests && g >= s.th.QueueGrowth*s.v(SigArrivalRate)
}

// budgetLimited: the engine works flat out on steps at their token budget,
// mostly prefill, whose size the GPU could use more of (budgetBinds). (A
// decode-heavy step's traffic is its sequences' KV, which grows with the
// step: its MBU says nothing of the budget.)
func (s *Signals) budgetLimited() bool {
	return s.v(SigFill) >= s.th.BudgetRaiseFill && s.v(SigPromptPerGen) >= s.th.PromptHeavy && s.budgetBinds(s.v(SigMBU), s.v(SigRoofline)) && s.flatOut()
}

// budgetBinds: steps whose memory traffic takes share m of the time at the
// GPU's peak bandwidth and whose arithmetic takes r times that traffic at
// the peaks are too small for the GPU. Their traffic is mostly the weights'
// read, which a step pays whatever its size: at budget_read_share or more
// of the time it is a large part of each step (where the GPU runs the read
// and the arithmetic one after the other, as a GEMM's additive time in the
// simulator's H100, A100 and L40S profiles); and below budget_roofline the
// arithmetic does not hide it either (where the GPU overlaps them, as the
// measured H200 does). A larger budget then carries more tokens for little
// more time.
func (s *Signals) budgetBinds(m, r float64) bool {
	return m >= s.th.BudgetReadShare && r < s.th.BudgetRoofline
}

// A GPU's utilisation estimated from vLLM's series counts host time, so
// only steps at their budget tell saturation from a host that stretches
// the steps.
func (s *Signals) wideComputeSteps() bool {
	if !(s.v(SigStepTokens) >= s.th.WideStep) || s.src(SigBusy) == srcEstimate {
		return false
	}
	if roof := s.v(SigRoofline); !math.IsNaN(roof) {
		return roof >= s.th.RooflineCompute
	}
	return s.v(SigPromptPerGen) >= s.th.PromptHeavy
}

// fullSteps: the steps carry most of the token budget. An inferred budget
// is the smallest round number the mean step fits, so only steps nearly at
// it count.
func (s *Signals) fullSteps() bool {
	if s.src(SigBudget) == srcInferred {
		return s.v(SigFill) >= s.th.FillInferred
	}
	return s.v(SigFill) >= s.th.FillHigh
}

// computeUnknown: the GPU seems busy on wide steps short of their budget,
// and the doctor cannot weigh them: on decode without the GPU's peaks, or
// at all when utilisation is vLLM's estimate (which counts host time).
func (s *Signals) computeUnknown() bool {
	if !s.flatOut() || s.fullSteps() || !(s.v(SigStepTokens) >= s.th.WideStep) {
		return false
	}
	if s.src(SigBusy) == srcEstimate {
		return true
	}
	return math.IsNaN(s.v(SigRoofline)) && !(s.v(SigPromptPerGen) >= s.th.PromptHeavy)
}

// pinned: running sat at max_num_seqs for most of the window. A reading
// within 10 % (or one) of the cap counts: a scrape can land between a
// request finishing and the next one being scheduled.
func (s *Signals) pinned() bool { return s.v(SigPinnedShare) >= s.th.PinnedShare }

// hostBound: the engine steps back to back and the GPU waits for the host
// through much of each step.
func (s *Signals) hostBound() bool {
	return s.v(SigEngineBusy) >= s.th.EngineBusy && s.v(SigHostShare) >= s.th.HostShare
}

// noWork: nothing waits and the GPU is not saturated: everything offered
// is served at once, so the load (or the client) sets the pace. The GPU
// may still be busy much of the time: a decode step of a few sequences
// occupies it, but more would cost little.
func (s *Signals) noWork() bool {
	return s.v(SigWaitingShare) < s.th.NoWaiting && !s.computeSaturated()
}

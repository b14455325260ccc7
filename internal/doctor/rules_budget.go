package doctor

import (
	"fmt"
	"math"
)

// Saturation read from every signal the target has: the GPU's own
// utilisation, or the engine stepping back to back while its queue grows
// (a tensor-parallel or FP8 deployment's counter reads low for the gaps
// between its steps); and, of an engine flat out on full steps, whether
// the GPU's arithmetic or the token budget is what binds (MFU over MBU).

// budgetToTry is the --max-num-batched-tokens past which a full step
// would no longer be too small for the GPU by either line: today's budget
// doubled until its memory traffic would take under budget_read_share of
// a step (the traffic, mostly the weights' read, the same at any size; the
// rest of the step growing with its tokens) and its arithmetic
// budget_roofline times that traffic or more.
func (s *Signals) budgetToTry() int {
	b, m, r := s.v(SigBudget), s.v(SigMBU), s.v(SigRoofline)
	k := 2.0
	for (readShareAt(m, k) >= s.th.BudgetReadShare || r*k < s.th.BudgetRoofline) && k < 1<<10 {
		k *= 2
	}
	return int(b * k)
}

// readShareAt is the MBU a full step would read at budget×k.
func readShareAt(m, k float64) float64 { return m / (m + (1-m)*k) }

func tokenBudget(s *Signals, _ *diagnosis) *Finding {
	b, m, r := s.v(SigBudget), s.v(SigMBU), s.v(SigRoofline)
	try := s.budgetToTry()
	k := float64(try) / b
	given := ""
	if s.src(SigBudget) == srcInferred {
		given = " (inferred from the steps; say it with --max-num-batched-tokens)"
	}
	changes := []Change{{Flag: "--max-num-batched-tokens", Value: fmt.Sprint(try),
		Why: fmt.Sprintf("from %.0f%s: each step would read the weights once for %.0f× the tokens, its memory traffic about %s of it instead of %s (the rest of a step grows with its tokens) and its arithmetic %.1f× that traffic instead of %.1f×: "+
			"more prompt tokens a second, so shorter queues and time to first token; a request decoding beside a prefill chunk waits for the longer step, so inter-token latency rises", b, given, k, pct(readShareAt(m, k)), pct(m), r*k, r)},
		{Why: fmt.Sprintf("if steps of %d tokens are still full and requests still wait, the GPU's arithmetic binds next: scale out (%d replicas at today's completion rate)", try, s.replicasFor())},
	}
	evs := s.evs(SigFill, SigBudget, SigStepTokens, SigMBU, SigMFU, SigRoofline, SigPromptPerGen, SigBusy, SigEngineBusy, SigQueueGrowth, SigWaitingShare, SigWaiting, SigArrivalRate, SigFinishRate)
	evs = append(evs, s.dcgmEvidence()...)
	return &Finding{Title: "token budget: every step is full of a --max-num-batched-tokens too small for this GPU",
		Evidence: evs,
		Inference: fmt.Sprintf("%s: each carried the %.0f-token budget (%s full) while requests waited, and even at the GPU's peak bandwidth their memory traffic took %s of the time (MBU), while their arithmetic took only %.1f× that at the GPU's peaks (MFU %s), too little to hide it. "+
			"That traffic is mostly the model's weights, which a step reads whatever its size: a budget this small spreads the read over few tokens, so the engine is flat out on steps the GPU could make larger for little more time. The budget, not the GPU, is the limit.",
			s.saturationClause("full steps", "full steps"), b, pct(s.v(SigFill)), pct(m), r, pct(s.v(SigMFU))) + s.conflict(),
		Changes: changes, apply: func(rc *ReplicaConfig) { rc.MaxNumBatchedTokens = max(rc.MaxNumBatchedTokens, try) }}
}

// saturationClause opens an inference on a flat-out engine: the GPU busy
// all the time on the steps gpuOn says, or the engine stepping back to
// back on those engineOn says while the queue grew and the GPU's own
// reading stayed low.
func (s *Signals) saturationClause(gpuOn, engineOn string) string {
	if busy := s.v(SigBusy); busy >= s.th.BusyHigh {
		return fmt.Sprintf("The GPU was busy %s of the time (%s) on %s", pct(busy), s.src(SigBusy), gpuOn)
	}
	return fmt.Sprintf("The engine stepped %s of the time (%s) on %s while the queue grew by %.2f requests a second; the GPU's own reading (busy %s, %s) is low for the gaps between its steps%s",
		pct(s.v(SigEngineBusy)), s.src(SigEngineBusy), engineOn, s.v(SigQueueGrowth), pct(s.v(SigBusy)), s.src(SigBusy), s.hostGap())
}

// hostGap says how much of each step the GPU waited for the host, when a
// source says.
func (s *Signals) hostGap() string {
	if h := s.v(SigHostShare); !math.IsNaN(h) {
		return fmt.Sprintf(" (it waited for the host %s of each step, %s)", pct(h), s.src(SigHostShare))
	}
	return ""
}

// hostGapChange is --async-scheduling for a flat-out engine whose GPU
// waits for the host host_gap of each step or more: the host's work then
// runs behind the GPU's.
func (s *Signals) hostGapChange() (Change, func(*ReplicaConfig), bool) {
	h := s.v(SigHostShare)
	if s.cfg.asyncScheduling || !(h >= s.th.HostGap) {
		return Change{}, nil, false
	}
	return Change{Flag: "--async-scheduling", Why: fmt.Sprintf("the GPU waited for the host %s of each step (%s): vLLM then schedules the next step while the GPU runs this one", pct(h), s.src(SigHostShare))},
		func(rc *ReplicaConfig) { rc.AsyncScheduling = true }, true
}

// budgetUnknown says, of a saturated engine on steps at a budget below
// vLLM's smallest default (2048) on a prompt-heavy load, that whether the
// budget is the limit needs the GPU's peak bandwidth (vLLM's series do not
// carry it). From 2048 tokens a step's weight read is under
// budget_read_share of it on every GPU the simulator knows, for models of
// 7B and more.
func (s *Signals) budgetUnknown() (Change, bool) {
	if !math.IsNaN(s.v(SigMBU)) || !(s.v(SigBudget) < 2048) || !(s.v(SigFill) >= s.th.BudgetRaiseFill) || !(s.v(SigPromptPerGen) >= s.th.PromptHeavy) {
		return Change{}, false
	}
	return Change{Why: fmt.Sprintf("whether the %.0f-token budget (%s), not the GPU's arithmetic, is the limit needs the GPU's peak bandwidth (--gpu, or DCGM's modelName): steps this full of prompt tokens may spend much of their time reading the weights, which a larger --max-num-batched-tokens spreads over more tokens",
		s.v(SigBudget), s.src(SigBudget))}, true
}

package doctor

import (
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Questions are the seeds' three, answered at the top of every report,
// also when nothing is wrong: is compute saturated, is the KV cache the
// limit, is the scheduler idling (is the GPU left waiting)?
type Questions struct {
	Compute   Answer `json:"compute_saturated"`
	KV        Answer `json:"kv_limit"`
	Scheduler Answer `json:"scheduler_idle"`
}

// The answers a question can have.
const (
	Yes      = "yes"
	No       = "no"
	CantTell = "can't tell"
)

// Answer is one question's answer, the one or two numbers behind it and
// where they came from.
type Answer struct {
	Answer string `json:"answer"` // yes, no or can't tell
	// Kind says which way: for the KV cache capacity (at the watermark,
	// preempting) or admission (the next prompt does not fit the free
	// blocks); for the scheduler host (the GPU waits for the host each
	// step), cap (max_num_seqs holds requests back) or no-work.
	Kind       string     `json:"kind,omitempty"`
	Summary    string     `json:"summary"`
	Evidence   []Evidence `json:"evidence"`
	Sources    []string   `json:"sources"`
	Confidence string     `json:"confidence"`
}

// List is the three in order, for writing.
func (q *Questions) List() []struct {
	Q string
	A Answer
} {
	return []struct {
		Q string
		A Answer
	}{{"compute saturated?", q.Compute}, {"KV cache the limit?", q.KV}, {"scheduler idle?", q.Scheduler}}
}

func (s *Signals) answer(ans, kind, summary string, uses []SignalName, evs ...SignalName) Answer {
	a := Answer{Answer: ans, Kind: kind, Summary: summary, Evidence: s.evs(evs...)}
	a.Sources, a.Confidence = s.provenance(uses)
	if ans == CantTell {
		a.Confidence = ""
	}
	return a
}

// pct writes a share as a percentage, and an unknown one as such.
func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "an unknown share"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// answers are the three over a window.
func (s *Signals) answers() *Questions {
	return &Questions{Compute: s.computeAnswer(), KV: s.kvAnswer(), Scheduler: s.schedulerAnswer()}
}

func (s *Signals) computeAnswer() Answer {
	busy, fill, roof := s.v(SigBusy), s.v(SigFill), s.v(SigRoofline)
	uses := []SignalName{SigBusy, SigBudget}
	evs := []SignalName{SigBusy, SigFill}
	if !math.IsNaN(roof) {
		uses, evs = append(uses, SigPeakFLOPs), append(evs, SigRoofline)
	}
	if math.IsNaN(busy) {
		return s.answer(CantTell, "", "no reading of the GPU's utilisation: neither glassbox's busy counter, DCGM's engine activity nor vLLM's step series", uses, evs...)
	}
	by := fmt.Sprintf("the GPU was busy %s of the time (%s)", pct(busy), s.src(SigBusy))
	if busy < s.th.BusyHigh && s.engineFlatOut() && (s.computeSaturated() || s.budgetLimited()) {
		uses, evs = append(uses, SigEngineBusy), append(evs, SigEngineBusy, SigQueueGrowth, SigHostShare)
		by = fmt.Sprintf("the engine stepped %s of the time (%s) while the queue grew by %.2f requests a second, the GPU's own reading (busy %s, %s) low for the gaps between its steps%s,",
			pct(s.v(SigEngineBusy)), s.src(SigEngineBusy), s.v(SigQueueGrowth), pct(busy), s.src(SigBusy), s.hostGap())
	}
	switch {
	case s.computeUnknown() && s.src(SigBusy) == srcEstimate:
		return s.answer(CantTell, "", by+fmt.Sprintf(" on steps of %.0f tokens short of their budget: vLLM's series time the engine loop, host included, so whether the GPU or the host fills those steps cannot be told (DCGM's engine activity, --dcgm-url, would)", s.v(SigStepTokens)), uses, append(evs, SigStepTokens)...)
	case s.computeUnknown():
		return s.answer(CantTell, "", by+fmt.Sprintf(" on decode steps of %.0f tokens: a batch that wide can be compute-bound, and without the GPU's peaks (--gpu, or DCGM's modelName) the doctor cannot weigh its arithmetic against its memory traffic", s.v(SigStepTokens)), uses, append(evs, SigStepTokens)...)
	case s.budgetLimited():
		return s.answer(No, "", by+fmt.Sprintf(" on steps %s full of the %.0f-token budget, but even at the GPU's peak bandwidth their memory traffic took %s of the time (MBU), mostly the weights' read that a step pays whatever its size, and their arithmetic, %.1f× it at the peaks, does not hide it: the budget, not the arithmetic, limits the work (--max-num-batched-tokens %d)",
			pct(fill), s.v(SigBudget), pct(s.v(SigMBU)), roof, s.budgetToTry()), uses, append(evs, SigMBU)...)
	case s.computeSaturated():
		what := fmt.Sprintf("on steps %s full of the %.0f-token budget", pct(fill), s.v(SigBudget))
		switch {
		case s.fullSteps():
		case !math.IsNaN(roof):
			what = fmt.Sprintf("on steps of %.0f tokens whose arithmetic takes %.1f× the time of their memory traffic at the GPU's peaks: the batch's own work sets the step", s.v(SigStepTokens), roof)
		default:
			what = fmt.Sprintf("on prefill steps of %.0f tokens, compute-bound on any GPU (past its ridge point): larger steps would take proportionally longer", s.v(SigStepTokens))
		}
		return s.answer(Yes, "", by+" "+what+": more work per second cannot fit", uses, evs...)
	case busy >= s.th.BusyHigh:
		return s.answer(No, "", by+fmt.Sprintf(", but its steps carry %s of the token budget and are bound by memory traffic, not arithmetic: more sequences fit in each step", pct(fill)), uses, evs...)
	}
	return s.answer(No, "", by+": it has time to spare", uses, evs...)
}

func (s *Signals) kvAnswer() Answer {
	if math.IsNaN(s.v(SigKV)) {
		return s.answer(CantTell, "", "no KV-cache usage series", nil, SigKV)
	}
	uses := []SignalName{SigBlocks}
	switch kind := s.kvKind(); {
	case kind == "capacity":
		return s.answer(Yes, "capacity", fmt.Sprintf("the KV cache sat at the %g watermark %s of the window (peak %.2f) with %.2f preemptions/s and %s of the window with a request waiting",
			s.th.KVWatermark, pct(s.v(SigKVHighShare)), s.v(SigKVPeak), zeroNaN(s.v(SigPreemptRate)), pct(zeroNaN(s.v(SigWaitingShare)))), uses,
			SigKVHighShare, SigKVPeak, SigPreemptRate)
	case kind == "admission":
		free := (1 - s.v(SigKV)) * s.v(SigBlocks) * s.v(SigBlockSize)
		return s.answer(Yes, "admission", fmt.Sprintf("in %s of the window a request waited while the free KV blocks (about %.0f tokens at the mean usage of %.2f) could not hold the next prompt (about %.0f tokens): each request takes a large share of the cache",
			pct(s.v(SigAdmissionShare)), free, s.v(SigKV), s.v(SigAdmissionNeed)), uses, SigAdmissionShare, SigKV, SigPromptMean)
	case math.IsNaN(s.v(SigAdmissionShare)) && s.queued() && s.v(SigKVPeak) >= s.th.KVSpare/2:
		return s.answer(CantTell, "", fmt.Sprintf("requests waited at KV usage up to %.2f, and without the cache's size (num_gpu_blocks in vllm:cache_config_info) the doctor cannot tell whether the next prompt fit", s.v(SigKVPeak)),
			uses, SigKVPeak, SigWaitingShare)
	}
	why := "nothing waited"
	if s.queued() {
		why = "requests waited, but their prompts fit in the free blocks"
	}
	return s.answer(No, "", fmt.Sprintf("peak KV usage %.2f, %.2f preemptions/s: %s", s.v(SigKVPeak), zeroNaN(s.v(SigPreemptRate)), why), uses, SigKVPeak, SigPreemptRate, SigAdmissionShare)
}

func (s *Signals) schedulerAnswer() Answer {
	host, eng := s.v(SigHostShare), s.v(SigEngineBusy)
	switch {
	case s.hostBound():
		return s.answer(Yes, "host", fmt.Sprintf("the GPU waited for the host %s of each step (%s) while the engine stepped %s of the time", pct(host), s.src(SigHostShare), pct(eng)),
			[]SignalName{SigHostShare, SigEngineBusy}, SigHostShare, SigEngineBusy)
	case s.capSuggestion() > 0:
		return s.answer(Yes, "cap", fmt.Sprintf("running sat at max_num_seqs %.0f in %s of the window while requests waited, with the KV cache and the steps to spare", s.v(SigMaxSeqs), pct(s.v(SigPinnedShare))),
			[]SignalName{SigMaxSeqs, SigBusy, SigBudget}, SigPinnedShare, SigMaxSeqs, SigWaitingShare)
	case s.budgetLimited() && s.queued():
		return s.answer(Yes, "budget", fmt.Sprintf("requests waited while every step carried the %.0f-token budget (%s full), too few tokens to spread the weights' read over (memory traffic %s of the time at the GPU's peak bandwidth): --max-num-batched-tokens holds the batch back, not the GPU",
			s.v(SigBudget), pct(s.v(SigFill)), pct(s.v(SigMBU))), []SignalName{SigBudget, SigBusy, SigPeakFLOPs}, SigFill, SigBudget, SigMBU, SigWaitingShare)
	case s.noWork():
		stepped := ""
		if !math.IsNaN(eng) {
			stepped = fmt.Sprintf(" and the engine stepped %s of the time", pct(eng))
		}
		return s.answer(Yes, "no-work", fmt.Sprintf("nothing waited (a request in %s of the window)%s: it serves what arrives at once, so the load sets the pace", pct(s.v(SigWaitingShare)), stepped),
			[]SignalName{SigBusy}, SigWaitingShare, SigEngineBusy)
	case math.IsNaN(host):
		return s.answer(CantTell, "", "whether the GPU waits for the host between steps needs glassbox's series or DCGM's engine activity beside vLLM's (--dcgm-url)", []SignalName{SigHostShare}, SigEngineBusy)
	}
	return s.answer(No, "", fmt.Sprintf("the engine stepped %s of the time and the GPU waited for the host only %s of each step (%s)", pct(zeroNaN(eng)), pct(host), s.src(SigHostShare)),
		[]SignalName{SigHostShare, SigEngineBusy}, SigHostShare, SigEngineBusy)
}

// snapshotAnswers are what one reading can say: the gauges' state at
// that instant; rates need two readings.
func (s *Signals) snapshotAnswers() *Questions {
	snap := s.w.Snapshots[0].Values
	kv, okKV := snap[metricspec.KVCacheUsagePerc]
	wait, run := snap[metricspec.NumRequestsWaiting], snap[metricspec.NumRequestsRunning]
	q := &Questions{Compute: Answer{Answer: CantTell, Summary: "one reading has no rates: utilisation and step fill need two", Evidence: []Evidence{}}}
	// Lifetime means: the counters since the server started.
	prompt := ratio(snap[metricspec.PromptTokens], snap[metricspec.TimeToFirstToken+"_count"])
	capacity := s.v(SigBlocks) * s.v(SigBlockSize)
	need := math.Min(prompt, s.v(SigBudget))
	kvEv := []Evidence{ev("KV-cache usage at the reading", kv, "ratio", s.p.s(metricspec.KVCacheUsagePerc)), ev("requests waiting at the reading", wait, "", s.p.s(metricspec.NumRequestsWaiting))}
	switch {
	case !okKV:
		q.KV = Answer{Answer: CantTell, Summary: "no KV-cache usage series", Evidence: []Evidence{}}
	case wait >= 1 && kv >= s.th.KVWatermark:
		q.KV = Answer{Answer: Yes, Kind: "capacity", Summary: fmt.Sprintf("at this reading: KV usage %.2f at the watermark with %.0f requests waiting", kv, wait), Evidence: kvEv}
	case wait >= 1 && capacity > 0 && need > 0 && (1-kv)*capacity < need:
		q.KV = Answer{Answer: Yes, Kind: "admission", Summary: fmt.Sprintf("at this reading: %.0f requests waiting while the free blocks (about %.0f tokens) cannot hold a typical prompt (about %.0f tokens since the server started)", wait, (1-kv)*capacity, prompt), Evidence: kvEv}
	case wait < 1 && kv < s.th.KVSpare:
		q.KV = Answer{Answer: No, Summary: fmt.Sprintf("at this reading: KV usage %.2f and nothing waiting", kv), Evidence: kvEv}
	default:
		q.KV = Answer{Answer: CantTell, Summary: fmt.Sprintf("at this reading: KV usage %.2f with %.0f requests waiting; one reading cannot show whether they wait for blocks", kv, wait), Evidence: kvEv}
	}
	if run == 0 && wait == 0 {
		q.Scheduler = Answer{Answer: Yes, Kind: "no-work", Summary: "at this reading: nothing running or waiting", Evidence: kvEv[1:]}
	} else {
		q.Scheduler = Answer{Answer: CantTell, Summary: "one reading cannot show how the GPU spends its steps", Evidence: []Evidence{}}
	}
	for _, a := range []*Answer{&q.Compute, &q.KV, &q.Scheduler} {
		a.Sources = []string{string(srcVLLM)}
		if a.Answer != CantTell {
			a.Confidence = "low"
		}
	}
	return q
}

// writeText writes the three as the report's header.
func (q *Questions) writeText(b *strings.Builder) {
	for _, x := range q.List() {
		ans := x.A.Answer
		if x.A.Kind != "" {
			ans += " (" + x.A.Kind + ")"
		}
		fmt.Fprintf(b, "  %-20s %-16s %s\n", x.Q, ans, x.A.Summary)
	}
}

package engine

import "time"

// Timing is one request's timeline from the engine's clock. FirstScheduled,
// FirstToken and LastToken are zero when the request never got that far.
// Its intervals use vLLM's definitions (the vllm:request_*_time_seconds
// histograms and the gen_ai.latency.* span attributes).
type Timing struct {
	Arrival, Queued, FirstScheduled, FirstToken, LastToken, Finished time.Time
	Preemptions                                                      int
}

// interval is end−start in seconds, 0 when either end is missing and never
// negative (the wall clock may step between two engine timestamps).
func interval(start, end time.Time) float64 {
	if start.IsZero() || end.IsZero() {
		return 0
	}
	return max(end.Sub(start).Seconds(), 0)
}

// QueueTime is from admission to the engine until first scheduled.
func (t *Timing) QueueTime() float64 { return interval(t.Queued, t.FirstScheduled) }

// PrefillTime is from first scheduled until the first token.
func (t *Timing) PrefillTime() float64 { return interval(t.FirstScheduled, t.FirstToken) }

// DecodeTime is from the first token to the last.
func (t *Timing) DecodeTime() float64 { return interval(t.FirstToken, t.LastToken) }

// InferenceTime is prefill plus decode: first scheduled to last token.
func (t *Timing) InferenceTime() float64 { return interval(t.FirstScheduled, t.LastToken) }

// TTFT is from arrival at the server to the first token.
func (t *Timing) TTFT() float64 { return interval(t.Arrival, t.FirstToken) }

// TPOT is the mean time per output token after the first, for a request
// that generated n tokens: the decode time over n−1 (0 for one token).
func (t *Timing) TPOT(n int) float64 {
	if n < 2 {
		return 0
	}
	return t.DecodeTime() / float64(n-1)
}

// E2E is from arrival at the server to the end.
func (t *Timing) E2E() float64 { return interval(t.Arrival, t.Finished) }

// PhaseKind names what a sequence did in a Phase.
type PhaseKind uint8

const (
	PhasePrefill   PhaseKind = iota + 1 // one prefill (or recompute) chunk
	PhaseDecode                         // consecutive decode steps
	PhasePreempted                      // its blocks were freed; it waits again
)

func (k PhaseKind) String() string {
	switch k {
	case PhasePrefill:
		return "prefill"
	case PhaseDecode:
		return "decode"
	case PhasePreempted:
		return "preempted"
	}
	return "unknown"
}

// Phase is one entry of a sequence's history: a prefill chunk (one step),
// a run of consecutive decode steps merged into one, or a preemption (an
// instant: Start equals End). Start and End are the bounds of the steps.
type Phase struct {
	Kind       PhaseKind
	Start, End time.Time
	Tokens     int // tokens computed (prefill) or generated (decode)
	Steps      int
}

// recordStep adds one step of rs to its history: decode steps extend the
// last decode run, so a long generation costs one entry, not one per token.
func (rs *reqState) recordStep(decode bool, tokens int, start, end time.Time) {
	if n := len(rs.phases); decode && n > 0 && rs.phases[n-1].Kind == PhaseDecode {
		p := &rs.phases[n-1]
		p.End = end
		p.Tokens += tokens
		p.Steps++
		return
	}
	kind := PhasePrefill
	if decode {
		kind = PhaseDecode
	}
	rs.phases = append(rs.phases, Phase{Kind: kind, Start: start, End: end, Tokens: tokens, Steps: 1})
}

// timing is rs's timeline, ending at now.
func (rs *reqState) timing(now time.Time) Timing {
	return Timing{
		Arrival: rs.req.Arrival, Queued: rs.queued, FirstScheduled: rs.firstSch,
		FirstToken: rs.firstTok, LastToken: rs.lastTok, Finished: now,
		Preemptions: rs.seq.NumPreemptions,
	}
}

package doctor

// The states the rules and the three answers are built on, each defined
// once over signals. They take a getter so that a signal's definition (the
// plateau inference of max_num_seqs) can use them over its view too.

type getter func(name string) float64

// kvFull: the KV cache sat at the watermark, or ran out often enough to
// preempt (usage then drops below the line as blocks are freed, so the
// mean understates it).
func kvFull(g getter, th Thresholds) bool {
	return g(sigKVHighShare) >= th.KVHighShare || g(sigPreemptRate) > 0 && g(sigKVPeak) >= th.KVWatermark
}

// kvAdmission: requests waited while the free blocks could not hold the
// next one's prompt, below the watermark too (long prompts that each take
// a large share of the cache).
func kvAdmission(g getter, th Thresholds) bool { return g(sigAdmissionShare) >= th.AdmissionShare }

func kvLimited(g getter, th Thresholds) bool { return kvFull(g, th) || kvAdmission(g, th) }

func (s *Signals) queued() bool { return s.v(sigWaitingShare) >= s.th.WaitingPersistent }

func (s *Signals) kvFull() bool      { return kvFull(s.v, s.th) }
func (s *Signals) kvAdmission() bool { return kvAdmission(s.v, s.th) }
func (s *Signals) kvLimited() bool   { return kvLimited(s.v, s.th) }

// computeSaturated: the GPU is busy all the time on steps that use its
// arithmetic: full of the token budget, or compute-bound at its peaks. A
// busy GPU on small decode steps is not saturated (like DCGM's engine
// activity, the busy ratio is near 1 whenever anything runs; a decode step
// is bound by reading weights and KV, not by its token count).
func (s *Signals) computeSaturated() bool {
	return s.v(sigBusy) >= s.th.BusyHigh && (s.v(sigFill) >= s.th.FillHigh || s.v(sigRoofline) >= s.th.RooflineCompute)
}

// pinned: running sat at max_num_seqs for most of the window. A reading
// within 10 % (or one) of the cap counts: a scrape can land between a
// request finishing and the next one being scheduled.
func (s *Signals) pinned() bool { return s.v(sigPinnedShare) >= s.th.PinnedShare }

// hostBound: the engine steps back to back and the GPU waits for the host
// through much of each step.
func (s *Signals) hostBound() bool {
	return s.v(sigEngineBusy) >= s.th.EngineBusy && s.v(sigHostShare) >= s.th.HostShare
}

// noWork: nothing waits and the GPU idles.
func (s *Signals) noWork() bool {
	return s.v(sigWaitingShare) < s.th.NoWaiting && s.v(sigBusy) < s.th.BusyLow
}

package doctor

import "fmt"

// Speculative decoding pays when a verify pass, which scores the last
// token and its k drafts at once, keeps enough of them to cost less than
// the plain steps it replaces. It stops paying in two ways: the drafts are
// rejected (the pass's extra positions, their K/V and bandwidth buy
// little), or the batch is so wide that the pass is compute-bound (each
// scored position then costs as much as a token of plain decoding, and the
// rejected ones are lost throughput).

// specCost is why speculation costs more than it saves, or "" when it
// does not (or the target does not speculate): "acceptance" or "compute".
func (s *Signals) specCost() string {
	th := s.th
	if !(s.v(SigSpecDrafts) >= th.SpecMinDrafts) {
		return ""
	}
	switch {
	case s.v(SigSpecAcceptance) < th.SpecAcceptanceLow:
		return "acceptance"
	case s.v(SigBusy) >= th.BusyHigh && s.v(SigSpecVerifyPerStep) >= th.WideStep && s.v(SigSpecScoredPerToken) >= th.SpecScoredPerToken:
		return "compute"
	}
	return ""
}

// specKeep is how many leading draft positions are accepted at least
// SpecPositionKeep of the time: the num_speculative_tokens worth keeping.
func (s *Signals) specKeep() int {
	n := 0
	for n < int(zeroNaN(s.v(SigSpecK))) && n < maxSpecPositions && s.v(SigSpecPos(n)) >= s.th.SpecPositionKeep {
		n++
	}
	return n
}

// specPositions are the per-position acceptances as evidence.
func (s *Signals) specPositions() []Evidence {
	var out []Evidence
	for i := range min(int(zeroNaN(s.v(SigSpecK))), maxSpecPositions) {
		out = append(out, s.ev(SigSpecPos(i)))
	}
	return out
}

func speculationCostly(s *Signals, _ *diagnosis) *Finding {
	k, keep := int(zeroNaN(s.v(SigSpecK))), s.specKeep()
	evs := s.evs(SigSpecAcceptance, SigSpecTokensPerPass, SigSpecDraftLen, SigSpecScoredPerToken, SigSpecK, SigSpecDrafts)
	evs = append(evs, s.specPositions()...)
	off := Change{Flag: "--speculative-config", Why: "remove it (speculation off): plain decoding scores one position per token it keeps"}
	smaller := func(why string) Change {
		return Change{Flag: "--speculative-config", Value: fmt.Sprintf(`{…,"num_speculative_tokens":%d}`, keep),
			Why: fmt.Sprintf("from %d (the other keys as they are): %s", k, why)}
	}
	var title, inf string
	var changes []Change
	if s.specCost() == "acceptance" {
		title = "speculation buys little: most drafts are rejected"
		inf = fmt.Sprintf("Only %s of the draft tokens were accepted: a verify pass scored %.2f drafts and kept %.2f tokens, %.2f positions scored per token kept. "+
			"Each rejected draft took a position of its step's compute, a K/V slot that is rolled back and its share of the proposer's work, for nothing; "+
			"on a small batch that costs little, but the passes barely shorten a request, and as batches grow the rejected positions cost throughput.",
			pct(s.v(SigSpecAcceptance)), s.v(SigSpecDraftLen), s.v(SigSpecTokensPerPass), s.v(SigSpecScoredPerToken))
		changes = []Change{off}
		if keep > 0 && keep < k {
			off.Why = "or " + off.Why
			changes = []Change{smaller(fmt.Sprintf("draft positions past %d are accepted in under %s of the passes", keep, pct(s.th.SpecPositionKeep))), off}
		}
	} else {
		title = "speculation costs more than it saves: the verify passes are compute-bound at this batch width"
		evs = append(evs, s.evs(SigBusy, SigSpecVerifyPerStep, SigRunning)...)
		inf = fmt.Sprintf("The GPU was busy %s of the time (%s) on steps whose verify passes scored %.0f positions: at that width a step's arithmetic, not its weight reads, sets its length, "+
			"so each scored position costs about what a plain decode token does. The passes scored %.2f positions per token kept (acceptance %s), more than the %g at which speculation still pays: "+
			"speculation lowers this replica's throughput at this load. It pays at small batches, where a verify pass costs little more than one decode step.",
			pct(s.v(SigBusy)), s.src(SigBusy), s.v(SigSpecVerifyPerStep), s.v(SigSpecScoredPerToken), pct(s.v(SigSpecAcceptance)), s.th.SpecScoredPerToken)
		changes = append(changes, off)
		if keep > 0 && keep < k {
			changes = append(changes, smaller("or draft fewer positions: fewer are scored and rejected per pass"))
		}
		changes = append(changes, Change{Why: "keep speculation where batches stay small (a latency-sensitive pool of replicas), and serve wide batches without it"})
	}
	return &Finding{Title: title, Evidence: evs, Inference: inf, Changes: changes,
		untested: "--speculative-config is not replayed: the replay does not carry the target's speculation"}
}

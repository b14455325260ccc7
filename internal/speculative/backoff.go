package speculative

// Backoff decides, for one sequence, how many tokens to draft in its next
// step from how its earlier drafts fared. Verifying a draft costs a
// position in the verify pass whether or not it is accepted; a sequence
// whose drafts keep being rejected (output that repeats nothing, a draft
// model that disagrees with the target) would otherwise pay that every
// step. So the draft shrinks towards what was being accepted, and after
// drafts that win nothing drafting pauses for a number of steps that
// doubles each time a probe fails (up to MaxPause), then probes again.
// This is glassbox's own: vLLM's n-gram proposer only stops when nothing
// matches.
//
// The zero value is ready: it starts optimistic, drafting k.
type Backoff struct {
	mean  float64 // running mean of drafts accepted per draft, plus one
	pause int     // steps left without drafting
	wait  int     // the pause that the next failure starts
	seen  bool
}

// Tuning of Backoff.
const (
	// backoffWeight is the weight of the latest draft in the running mean.
	backoffWeight = 0.3
	// backoffFloor is the mean accepted length (1 + accepted) below which
	// drafting pauses: under one accepted draft in eight.
	backoffFloor = 1.125
	// MaxPause is the longest pause, in steps.
	MaxPause = 64
)

// Next is how many drafts to ask for this step, at most k (0: none).
func (b *Backoff) Next(k int) int {
	if k <= 0 {
		return 0
	}
	if b.pause > 0 {
		b.pause--
		return 0
	}
	if !b.seen {
		return k
	}
	// One more than the accepted length seen: room to grow back.
	return min(k, max(1, int(b.mean)+1))
}

// Observe records a verified draft of drafted tokens of which accepted
// were accepted.
func (b *Backoff) Observe(drafted, accepted int) {
	if drafted <= 0 {
		return
	}
	length := 1 + float64(accepted)
	if !b.seen {
		b.mean, b.seen = length, true
	} else {
		b.mean += backoffWeight * (length - b.mean)
	}
	switch {
	case accepted > 0 && b.mean >= backoffFloor:
		b.wait = 0
	case b.mean < backoffFloor:
		b.wait = min(max(1, 2*b.wait), MaxPause)
		b.pause = b.wait
		// Probe afresh after the pause: one success should be enough
		// to resume drafting.
		b.mean = backoffFloor
	}
}

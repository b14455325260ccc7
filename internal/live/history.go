package live

import (
	"cmp"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// instance is one sampled target's history and what the doctor made of
// its recent part. The Page's mutex guards it.
type instance struct {
	target Target
	window *doctor.Window // every reading kept
	// recent is the window's last FindingsWindow, and recentSig its
	// signals (those the doctor diagnosed it from): what a refresh charts.
	recent    *doctor.Window
	recentSig *doctor.Signals
	// full is the whole window's signals, evaluated when a page first asks
	// for more than the recent part, once per reading.
	full    *doctor.Signals
	fullAt  int
	problem string // the last reading's error, if it failed
	reads   int
}

// thin keeps the history bounded: every reading of the last detailed,
// then one a minute (coarse), none older than history. The latest is
// always kept. Counters and histograms stay exact over a thinned
// interval (it is the sum of those it replaces); a gauge is read less
// often.
func thin(s []doctor.Snapshot, now time.Time, detailed, history time.Duration) []doctor.Snapshot {
	drop := func(i int, last time.Time) bool {
		if i == len(s)-1 {
			return false
		}
		t := s[i].T
		return t.Before(now.Add(-history)) || t.Before(now.Add(-detailed)) && !last.IsZero() && t.Sub(last) < coarse
	}
	var last time.Time
	for i := range s {
		if drop(i, last) {
			// Something goes: copy what stays (a window handed out
			// earlier keeps its readings).
			out := slices.Clone(s[:i])
			for j := i; j < len(s); j++ {
				if !drop(j, last) {
					out = append(out, s[j])
					last = s[j].T
				}
			}
			return out
		}
		last = s[i].T
	}
	return s
}

// between is the part of w with readings in [from, to] (to zero: no end),
// sharing nothing with w's slice.
func between(w *doctor.Window, from, to time.Time) *doctor.Window {
	sub := *w
	sub.Snapshots = nil
	for _, s := range w.Snapshots {
		if !s.T.Before(from) && (to.IsZero() || !s.T.After(to)) {
			sub.Snapshots = append(sub.Snapshots, s)
		}
	}
	return &sub
}

// diagnose runs the doctor over every instance's last FindingsWindow:
// the answers and findings a live page shows, and the fleet's ranking.
func (p *Page) diagnose(now time.Time) {
	var ms []doctor.Member
	for _, in := range p.inst {
		in.recent = between(in.window, now.Add(-p.cfg.FindingsWindow), time.Time{})
		in.recentSig = nil
		if len(in.recent.Snapshots) > 0 {
			ms = append(ms, doctor.Member{Instance: in.target.Name, Window: in.recent})
		}
	}
	p.fleet = p.doc.Fleet("live", "", ms)
	for _, in := range p.inst {
		if d := p.fleet.Fleet.Find(in.target.Name); d != nil {
			in.recentSig = d.Report.Signals()
		}
	}
}

// sampledView is the sampled targets over the window q asks for: live
// (the last q.rng up to now, or since the first reading when that is
// later), or a fixed one, which the doctor reads on demand. The caller
// holds p.mu until it has drawn the view (its windows are the history's).
func (p *Page) sampledView(q query) *view {
	now := p.cfg.Now()
	v := &view{interval: p.cfg.Interval}
	for _, in := range p.inst {
		if len(in.window.Snapshots) > 0 && (v.kept.IsZero() || in.window.Snapshots[0].T.Before(v.kept)) {
			v.kept = in.window.Snapshots[0].T
		}
	}
	rep := p.fleet
	if rep == nil { // no reading yet
		rep = p.doc.Fleet("live", "", nil)
	}
	subs := map[int]*doctor.Window{}
	if q.fixed() {
		v.span = span{from: q.from, to: q.to}
		var ms []doctor.Member
		for id, in := range p.inst {
			if sub := between(in.window, q.from, q.to); len(sub.Snapshots) > 0 {
				subs[id] = sub
				ms = append(ms, doctor.Member{Instance: in.target.Name, Window: sub})
			}
		}
		rep = p.doc.Fleet("live", "", ms)
	} else {
		start := now.Add(-time.Minute) // at least a minute, so that one reading has an axis
		if !v.kept.IsZero() && v.kept.Before(start) {
			start = v.kept
		}
		rng := cmp.Or(q.rng, 15*time.Minute)
		v.span = span{from: maxTime(now.Add(-rng), start), to: now, live: true, rng: rng}
	}
	v.fleet = rep.Findings
	// The doctor's order; an instance without a reading in the window last.
	rank := map[string]int{}
	for i, m := range rep.Fleet.Instances {
		rank[m.Instance] = i
	}
	order := make([]int, len(p.inst))
	for id := range order {
		order[id] = id
	}
	at := func(id int) int {
		if r, ok := rank[p.inst[id].target.Name]; ok {
			return r
		}
		return len(rank)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(at(a), at(b)) })
	for _, id := range order {
		in := p.inst[id]
		r := row{id: id, name: in.target.Name, problem: in.problem, hasState: in.target.Engine != nil, doc: rep.Fleet.Find(in.target.Name)}
		for _, s := range in.window.Snapshots {
			if !s.T.Before(v.span.from) && !s.T.After(v.span.to) {
				r.readings++
			}
		}
		switch {
		case q.fixed():
			if r.window = subs[id]; r.doc != nil {
				r.signals = r.doc.Report.Signals() // the diagnosis's own
			}
		case in.recentSig != nil && !q.since.IsZero() && !q.since.Before(in.recent.Snapshots[0].T):
			r.window, r.signals = in.recent, in.recentSig // a refresh: only what is new
		default:
			if in.full == nil || in.fullAt != in.reads {
				in.full, in.fullAt = p.doc.Evaluate(in.window), in.reads
			}
			r.window, r.signals = in.window, in.full
		}
		if r.window == nil {
			r.window = between(in.window, v.span.from, v.span.to)
		}
		if r.signals == nil {
			r.signals = p.doc.Evaluate(r.window)
		}
		v.rows = append(v.rows, r)
	}
	return v
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

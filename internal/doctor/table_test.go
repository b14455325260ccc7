package doctor

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestRegistry: every signal is defined once, with a way to compute it
// and a description, and a window evaluates them all in order (a
// definition reading one defined below it panics).
func TestRegistry(t *testing.T) {
	if err := checkRegistry(); err != nil {
		t.Fatal(err)
	}
	s := evaluate(healthy().window(), DefaultThresholds(), Hints{})
	for _, n := range SignalNames() {
		if sig := s.Signal(n); sig.Name != n {
			t.Errorf("signal %s resolved as %q", n, sig.Name)
		}
	}
}

// TestExclusionOrder: an excluder comes before what it excludes in the
// rule table, so exclusion applied in table order is the relation the
// table states, and nothing excludes itself or an unknown rule.
func TestExclusionOrder(t *testing.T) {
	pos := map[string]int{}
	for i, r := range rules() {
		pos[r.name] = i
	}
	for _, r := range rules() {
		for _, x := range r.excludes {
			j, ok := pos[x]
			switch {
			case !ok:
				t.Errorf("%s excludes %s, which is no rule", r.name, x)
			case j <= pos[r.name]:
				t.Errorf("%s excludes %s, which comes before it in the table", r.name, x)
			}
		}
	}
}

// TestIntervalsReadTheWindowsSources: the live page's per-interval series
// are the window's signals over each interval, from the source the window
// chose: the chart cannot show one utilisation and diagnose with another.
func TestIntervalsReadTheWindowsSources(t *testing.T) {
	l := healthy()
	l.dcgm = 0.55 // glassbox's busy counter (0.3) is preferred over DCGM
	w := l.window()
	s := evaluate(w, DefaultThresholds(), Hints{})
	iv := s.Intervals(time.Time{}, SigBusy, SigGenRate, SigKV, SigPreemptions)
	if len(iv.T) != len(w.Snapshots)-1 {
		t.Fatalf("%d intervals from %d readings", len(iv.T), len(w.Snapshots))
	}
	for i, b := range iv.V[SigBusy] {
		if math.Abs(b-0.3) > 1e-9 {
			t.Errorf("interval %d: busy %v, want glassbox's 0.3 (the window's source %s)", i, b, s.src(SigBusy))
		}
	}
	if g := iv.V[SigGenRate]; math.Abs(g[0]-200) > 1e-9 || iv.V[SigKV][0] != 0.1 {
		t.Errorf("first interval: generation %v tokens/s, KV %v; want 200 and 0.1", g[0], iv.V[SigKV][0])
	}
	since := w.Snapshots[len(w.Snapshots)-3].T
	if n := len(s.Intervals(since, SigBusy).T); n != 2 {
		t.Errorf("%d intervals after the third reading from the end, want 2", n)
	}
	if !slices.Contains(SignalNames(), SigHostShare) {
		t.Error("the registry has no host share")
	}
}

// TestSnapshotAnswers: one reading answers from its gauges what it can: a
// cache at the watermark with requests waiting, or free blocks too few for
// a typical prompt since the server started; compute never.
func TestSnapshotAnswers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		modify       func(l *load)
		kv, kind, sc string
	}{
		{"full cache, a queue", func(l *load) { l.kv, l.waiting = constant(0.95), constant(4) }, Yes, "capacity", CantTell},
		{"long prompts at 60%", func(l *load) { l.kv, l.waiting, l.prompt = constant(0.6), constant(4), 20000 }, Yes, "admission", CantTell},
		{"room, nothing waits", func(l *load) {}, No, "", CantTell},
		{"a queue with room", func(l *load) { l.kv, l.waiting = constant(0.85), constant(4) }, CantTell, "", CantTell},
		{"idle", func(l *load) { l.running = constant(0) }, No, "", Yes},
	} {
		l := healthy()
		tc.modify(&l)
		w := l.window()
		w.Snapshots = w.Snapshots[len(w.Snapshots)-1:]
		q := diagnose(w, nil).Questions
		if q.Compute.Answer != CantTell || q.KV.Answer != tc.kv || q.KV.Kind != tc.kind || q.Scheduler.Answer != tc.sc {
			t.Errorf("%s: compute %q, KV %q (%s), scheduler %q; want can't tell, %q (%s), %q", tc.name, q.Compute.Answer, q.KV.Answer, q.KV.Kind, q.Scheduler.Answer, tc.kv, tc.kind, tc.sc)
		}
	}
}

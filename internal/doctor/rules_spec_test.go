package doctor

import (
	"slices"
	"strings"
	"testing"
)

// TestSpeculationAroundItsThresholds: speculation-costly fires on either
// side of each of its thresholds as the table says: drafts accepted just
// under and just over SpecAcceptanceLow, passes just under and over
// SpecMinDrafts, positions scored per token kept just over and under
// SpecScoredPerToken on a busy GPU with wide verify steps, and not on a
// GPU a little under BusyHigh or on verify steps under WideStep.
func TestSpeculationAroundItsThresholds(t *testing.T) {
	th := DefaultThresholds()
	if th.SpecAcceptanceLow != 0.3 || th.SpecMinDrafts != 100 || th.SpecScoredPerToken != 1.6 || th.BusyHigh != 0.9 || th.WideStep != 512 {
		t.Fatalf("the cases below are placed around other thresholds: %+v", th)
	}
	// A wide load: 20 steps a second; passes/s × (1 + 4) / 20 positions
	// scored per step. With 4 drafts accepted at a, a pass scores 5 and
	// keeps 1 + 4a: 5 / (1 + 4a) = 1.6 at a = 0.53.
	wide := func(busy, passes, acc float64) func(l *load) {
		return func(l *load) {
			l.busy, l.steps, l.running = busy, 20, constant(512)
			l.speculating(passes, 4, acc)
		}
	}
	for _, tc := range []struct {
		name   string
		modify func(l *load)
		kind   string // "" for no finding
	}{
		{"acceptance 0.29 at a small batch", func(l *load) { l.speculating(50, 4, 0.29) }, "acceptance"},
		{"acceptance 0.31 at a small batch", func(l *load) { l.speculating(50, 4, 0.31) }, ""},
		{"acceptance 0.6 at a small batch", func(l *load) { l.speculating(50, 4, 0.6) }, ""},
		{"acceptance 0.1 over 95 passes", func(l *load) { l.speculating(5, 4, 0.1) }, ""},
		{"acceptance 0.1 over 114 passes", func(l *load) { l.speculating(6, 4, 0.1) }, "acceptance"},
		{"acceptance 0.1 on a busy wide GPU", wide(0.99, 5120, 0.1), "acceptance"},
		{"wide and busy, 1.62 positions per token", wide(0.99, 5120, 0.52), "compute"},
		{"wide and busy, 1.58 positions per token", wide(0.99, 5120, 0.54), ""},
		{"wide, 1.62 positions per token, busy 0.88", wide(0.88, 5120, 0.52), ""},
		{"busy, 1.62 positions per token, 500 positions per step", wide(0.99, 2000, 0.52), ""},
		{"busy, 1.62 positions per token, 525 positions per step", wide(0.99, 2100, 0.52), "compute"},
		{"off, busy and wide", func(l *load) { l.busy, l.steps, l.running = 0.99, 20, constant(512) }, ""},
	} {
		l := healthy()
		tc.modify(&l)
		rep := diagnose(l.window(), nil)
		fired := slices.Contains(rep.Names(), "speculation-costly")
		if fired != (tc.kind != "") {
			t.Errorf("%s: speculation-costly fired %v; findings %v", tc.name, fired, rep.Names())
			continue
		}
		if !fired {
			continue
		}
		f := find(t, rep, "speculation-costly")
		if want := map[string]string{"acceptance": "buys little: most drafts are rejected", "compute": "compute-bound"}[tc.kind]; !strings.Contains(f.Title, want) {
			t.Errorf("%s: title %q, want it to say %q", tc.name, f.Title, want)
		}
		if f.Changes[0].Flag != "--speculative-config" {
			t.Errorf("%s: first change %+v, want --speculative-config", tc.name, f.Changes[0])
		}
	}
}

// TestSpeculationRemedy: the remedy keeps the draft positions accepted in
// at least SpecPositionKeep of the passes, or turns speculation off when
// none is; the evidence has the rates and each position's acceptance, with
// the PromQL.
func TestSpeculationRemedy(t *testing.T) {
	l := healthy()
	l.speculating(50, 4, 0.29) // positions 0.46, 0.35, 0.23, 0.12
	f := find(t, diagnose(l.window(), nil), "speculation-costly")
	if c := f.Changes[0]; c.Value != `{…,"num_speculative_tokens":2}` || !strings.Contains(c.Why, "from 4") {
		t.Errorf("first change %+v, want num_speculative_tokens 2 from 4", c)
	}
	if c := f.Changes[1]; c.Flag != "--speculative-config" || c.Value != "" || !strings.Contains(c.Why, "off") {
		t.Errorf("second change %+v, want speculation off", c)
	}
	var pos int
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.What, "acceptance at draft position") {
			pos++
			if !strings.Contains(e.PromQL, `position="`) {
				t.Errorf("%s: PromQL %q", e.What, e.PromQL)
			}
		}
		if e.What == "draft acceptance rate: accepted over draft tokens" && (e.Value == nil || *e.Value < 0.289 || *e.Value > 0.291) {
			t.Errorf("acceptance evidence %v, want 0.29", e.Value)
		}
	}
	if pos != 4 {
		t.Errorf("%d positions in the evidence, want 4: %s", pos, evidenceText(f))
	}

	l = healthy()
	l.speculating(50, 4, 0.1) // every position under 0.3
	f = find(t, diagnose(l.window(), nil), "speculation-costly")
	if len(f.Changes) != 1 || f.Changes[0].Value != "" || !strings.Contains(f.Changes[0].Why, "off") {
		t.Errorf("changes %+v, want speculation off alone", f.Changes)
	}
	if f.untested == "" {
		t.Error("the replay does not carry speculation, and the finding does not say so")
	}
}

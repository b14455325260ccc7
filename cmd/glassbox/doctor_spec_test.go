package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestDoctorSpeculationAroundThresholds: simulated runs whose speculation
// lands just either side of the doctor's thresholds, read through the
// exposition as a scrape reads it: synthetic acceptance rates that give a
// measured acceptance just under and just over SpecAcceptanceLow (0.3) on
// a light load, and, on a load of about a thousand sequences, positions
// scored per token kept just under and just over SpecScoredPerToken (1.6).
// The measured signals are checked to be where each case means them to be,
// so the case tests the threshold and not a far side of it.
func TestDoctorSpeculationAroundThresholds(t *testing.T) {
	reftest.Long(t, "speculation scenarios regenerated around the doctor's thresholds")
	if testing.Short() {
		t.Skip("simulates speculative loads in virtual time; skipped with -short")
	}
	specCfg := func(rates string) string {
		return `{"method":"ngram","num_speculative_tokens":4,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[` + rates + `]}`
	}
	for _, tc := range []struct {
		name, rates, rate string
		wide              bool
		signal            doctor.SignalName
		lo, hi            float64 // the band the signal must land in
		kind              string  // the finding's title says; "" for none
	}{
		{"light load, acceptance just under 0.3", "0.4,0.16,0.06,0.02", "2", false, doctor.SigSpecAcceptance, 0.25, 0.3, "buys little: most drafts are rejected"},
		{"light load, acceptance just over 0.3", "0.45,0.2,0.1,0.05", "2", false, doctor.SigSpecAcceptance, 0.3, 0.34, ""},
		{"wide load, 1.59 positions per token", "0.7,0.5,0.35,0.2", "60", true, doctor.SigSpecScoredPerToken, 1.5, 1.6, ""},
		{"wide load, 1.66 positions per token", "0.65,0.42,0.27,0.14", "60", true, doctor.SigSpecScoredPerToken, 1.6, 1.7, "compute-bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wide && raceEnabled {
				t.Skip("a thousand sequences in virtual time take minutes under -race; .ci/run runs this without it")
			}
			sc := corpus.Scenario{Name: "speculation/" + tc.name, Class: "speculation-costly",
				Serve: []string{"--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--speculative-config", specCfg(tc.rates)},
				Load:  []string{"--random-input-len", "128", "--random-output-len", "512", "--request-rate", tc.rate},
				Skip:  30 * time.Second, Window: 40 * time.Second, Interval: 5 * time.Second}
			g := generate(t, sc, "")
			w := corpus.In(g.full, corpus.Glassbox)
			s := defaults.Evaluate(w)
			sig := s.Signal(tc.signal)
			if !(sig.Value >= tc.lo && sig.Value < tc.hi) {
				t.Fatalf("%s = %.3f, want it in [%g, %g) for this case to sit by its threshold", tc.signal, sig.Value, tc.lo, tc.hi)
			}
			if tc.wide {
				if busy, per := s.Signal(doctor.SigBusy).Value, s.Signal(doctor.SigSpecVerifyPerStep).Value; busy < 0.9 || per < 512 {
					t.Fatalf("the wide load is not wide and busy: busy %.2f, %.0f positions per step", busy, per)
				}
			}
			for _, c := range corpus.Clothes {
				rep := defaults.Diagnose(corpus.In(g.full, c), nil)
				i := slices.Index(rep.Names(), "speculation-costly")
				switch {
				case tc.kind == "" && i >= 0:
					t.Errorf("%s, %s %.3f: speculation-costly fired: %s", c, tc.signal, sig.Value, rep.Findings[i].Title)
				case tc.kind != "" && i < 0:
					t.Errorf("%s, %s %.3f: no speculation-costly; findings %v", c, tc.signal, sig.Value, rep.Names())
				case tc.kind != "" && !strings.Contains(rep.Findings[i].Title, tc.kind):
					t.Errorf("%s: title %q, want %q", c, rep.Findings[i].Title, tc.kind)
				}
			}
			t.Logf("%s = %.3f", tc.signal, sig.Value)
		})
	}
}

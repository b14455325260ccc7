package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseStepTimeout(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration // -1: off, 0: the executor's default
		bad  bool
	}{
		{in: "", want: 0}, {in: " ", want: 0},
		{in: "0", want: -1}, {in: "0s", want: -1},
		{in: "90s", want: 90 * time.Second}, {in: "5m", want: 5 * time.Minute},
		{in: "60", want: time.Minute}, {in: "1.5", want: 1500 * time.Millisecond}, // seconds, as VLLM_ENGINE_ITERATION_TIMEOUT_S
		{in: "-5s", bad: true}, {in: "-1", bad: true}, {in: "soon", bad: true}, {in: "1e30", bad: true}, {in: "NaN", bad: true},
		// Under a nanosecond: not the 0 that turns the watchdog off.
		{in: "0.5ns", bad: true}, {in: "1e-10", bad: true}, {in: "-0.5ns", bad: true}, {in: "0.0", want: -1}, {in: "0ms", want: -1},
	} {
		got, err := parseStepTimeout(c.in)
		if (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("parseStepTimeout(%q) = %s, %v; want %s (refused: %v)", c.in, got, err, c.want, c.bad)
		}
		if c.bad && err != nil && !strings.Contains(err.Error(), "--step-timeout") {
			t.Errorf("parseStepTimeout(%q): %v does not name the flag", c.in, err)
		}
	}
	if _, err := parseServeFlags([]string{"--step-timeout", "-3s"}, io.Discard); err == nil {
		t.Error("serve accepted --step-timeout -3s")
	}
}

func FuzzParseStepTimeout(f *testing.F) {
	for _, s := range []string{"", "0", "90s", "60", "1.5", "-1", "1e30", "Inf", "1h2m3.5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseStepTimeout(s)
		switch {
		case err != nil:
		case strings.TrimSpace(s) == "":
			if d != 0 {
				t.Errorf("%q: %s, want the default (0)", s, d)
			}
		case d != -1 && d <= 0:
			t.Errorf("%q: %s: a given timeout is off (-1) or positive", s, d)
		}
	})
}

// TestServeStepTimeoutReachesTheEngine: --step-timeout is the engine's
// watchdog; without it, the simulator's default (vLLM's 60 s); 0 turns it
// off.
func TestServeStepTimeoutReachesTheEngine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"--step-timeout", "90s"}, 90 * time.Second},
		{[]string{"--step-timeout", "0"}, 0},
	} {
		base, _ := serveTest(t, append([]string{"--sim-time-scale", "0"}, c.args...)...)
		inst, _ := servers.Load(base)
		if got := inst.(*instance).engine.Config().StepTimeout; got != c.want {
			t.Errorf("serve %v: the engine's step timeout is %s, want %s", c.args, got, c.want)
		}
	}
}

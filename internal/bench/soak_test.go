package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestSoakTrend: a server whose memory grows by a megabyte a minute is
// called growing at about 60 MB per hour; one that wobbles around a level
// is flat; the warm-up's climb is left out of the fit.
func TestSoakTrend(t *testing.T) {
	mk := func(rss func(min float64) float64) []SoakSample {
		var out []SoakSample
		for i := range 61 {
			m := float64(i)
			out = append(out, SoakSample{T: m * 60, RSSMB: rss(m), Goroutines: 400})
		}
		return out
	}
	grow := analyseSoak(mk(func(m float64) float64 { return 50 + m }), time.Hour)
	if grow.Flat || math.Abs(grow.RSSSlope-60) > 1 || !strings.HasPrefix(grow.Verdict, "growing") {
		t.Errorf("1 MB a minute: slope %.1f MB/h, flat %v, %q", grow.RSSSlope, grow.Flat, grow.Verdict)
	}
	flat := analyseSoak(mk(func(m float64) float64 {
		if m < 5 {
			return 20 + 6*m // the warm-up's climb
		}
		return 53 + math.Sin(m)
	}), time.Hour)
	if !flat.Flat || math.Abs(flat.RSSSlope) > 2 || flat.GoroutineSlope != 0 {
		t.Errorf("a level with noise: slope %.1f MB/h, goroutines %.1f/h, flat %v, %q", flat.RSSSlope, flat.GoroutineSlope, flat.Flat, flat.Verdict)
	}
	none := analyseSoak([]SoakSample{{RSSMB: math.NaN()}, {RSSMB: math.NaN()}}, time.Minute)
	if none.Flat || !strings.Contains(none.Verdict, "too few") {
		t.Errorf("no memory readings: %+v", none)
	}
	if _, err := none.MarshalJSON(); err != nil {
		t.Errorf("a report with unknowns does not encode: %v", err)
	}
}

// TestParseChaos: --chaos takes its keys by name and refuses the rest.
func TestParseChaos(t *testing.T) {
	c, err := ParseChaos("cut=0.1,reset=1,malformed=0.05,burst=20,slow-for=5s")
	if err != nil || c.Cut != 0.1 || c.Reset != 1 || c.Malformed != 0.05 || c.Burst != 20 || c.SlowFor != 5*time.Second {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"cut=2", "cut=NaN", "cut", "speed=0.1", "cut=0.6,malformed=0.6", "burst=-1", "slow-for=0s"} {
		if _, err := ParseChaos(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// The faults are the same for the same seed, whatever the order asked.
	a, _ := c.faultOf(7, 123)
	b, _ := c.faultOf(7, 123)
	if a != b {
		t.Error("the fault of a request changed between two asks")
	}
	n := map[string]int{}
	for i := range 10000 {
		f, _ := c.faultOf(7, i)
		n[f]++
	}
	if math.Abs(float64(n[faultCut])/10000-0.1) > 0.02 || math.Abs(float64(n[faultMalformed])/10000-0.05) > 0.015 {
		t.Errorf("shares drawn %v, want about 10%% cut and 5%% malformed", n)
	}
}

package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// sloAlerts fire on a number the user sets as an objective (or on HTTP
// errors, which the doctor does not read): no one finding explains them,
// the doctor's capacity and latency findings do.
var sloAlerts = []string{"GlassboxHighE2ELatency", "GlassboxTTFTAboveSLO", "GlassboxHighErrorRate"}

// byName are the outage alerts the doctor names only as metrics-stale: a
// window cannot hold a scrape that failed (TargetDown), and a stalled
// engine is one cause of that finding among several.
var byName = []string{"GlassboxEngineStalled", "GlassboxTargetDown"}

// windowOf is the doctor's window of one instance's promtool input
// series: each "a+bxN" expanded, one reading per test interval.
func windowOf(t *testing.T, series []inputSeries, iv time.Duration) *doctor.Window {
	t.Helper()
	step := regexp.MustCompile(`^(-?[0-9.e+-]+?)\+(-?[0-9.e+-]+)x([0-9]+)$`)
	var readings [][]string
	for _, s := range series {
		m := step.FindStringSubmatch(s.Values)
		if m == nil {
			t.Fatalf("%s: values %q are not a+bxN", s.Series, s.Values)
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		n, _ := strconv.Atoi(m[3])
		for i := 0; i <= n; i++ {
			if i >= len(readings) {
				readings = append(readings, nil)
			}
			readings[i] = append(readings[i], fmt.Sprintf("%s %g", s.Series, a+float64(i)*b))
		}
	}
	w := doctor.NewWindow("test", "promtool input")
	for i, lines := range readings {
		sc, err := promtext.Parse(strings.NewReader(strings.Join(lines, "\n") + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		source.Append(w, time.Unix(0, 0).Add(time.Duration(i)*iv), sc)
	}
	return w
}

// TestEveryAlertHasItsFinding: each alert names the doctor's finding that
// explains it, or is an SLO's; and, read as the doctor's window, the
// series that make an alert fire for its hot instance and not its cold one
// make the finding fire for the hot one and not the cold one too, at the
// default thresholds and at moved ones: the alert and the finding are one
// definition.
func TestEveryAlertHasItsFinding(t *testing.T) {
	moved := doctor.DefaultThresholds()
	for name, v := range map[string]float64{"preemption_rate": 2, "kv_watermark": 0.8, "queue_share": 0.3, "abort_share": 0.25,
		"spec_acceptance_low": 0.5, "imbalance_ratio": 1.8, "imbalance_min_waiting": 3} {
		if err := moved.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, th := range []doctor.Thresholds{doctor.DefaultThresholds(), moved} {
		c := Default()
		c.Thresholds = th
		d := doctor.NewDiagnoser(th, doctor.Hints{})
		iv := c.testInterval()
		for _, a := range alerts(&c) {
			switch {
			case a.finding == "":
				if !slices.Contains(sloAlerts, a.name) {
					t.Errorf("%s names no finding, and is no SLO's alert", a.name)
				}
				continue
			case !slices.Contains(doctor.RuleNames(), a.finding):
				t.Errorf("%s names %q, which is no finding of the doctor's", a.name, a.finding)
				continue
			case slices.Contains(byName, a.name):
				continue
			}
			win := func(hot bool) *doctor.Window {
				inst := coldInstance
				if hot {
					inst = hotInstance
				}
				return windowOf(t, a.series(&testEnv{c: &c, instance: inst, interval: iv, steps: 20}, hot), iv)
			}
			hot, cold := win(true), win(false)
			var fired func(w *doctor.Window) bool
			if a.finding == "load-imbalance" { // a fleet's: the two replicas together
				rep := d.Fleet("test", "", []doctor.Member{{Instance: hotInstance, ModelName: testModel, Window: hot}, {Instance: coldInstance, ModelName: testModel, Window: cold}})
				if !slices.Contains(rep.Names(), a.finding) || !strings.Contains(rep.Findings[0].Title, hotInstance) {
					t.Errorf("%s at %g×, > %g: the fleet's findings %v do not name %s", a.name, th.ImbalanceRatio, th.ImbalanceMinWaiting, rep.Names(), hotInstance)
				}
				continue
			}
			fired = func(w *doctor.Window) bool { return slices.Contains(d.Diagnose(w, nil).Names(), a.finding) }
			if !fired(hot) {
				t.Errorf("%s fires on its hot series, and %s does not (findings %v)", a.name, a.finding, d.Diagnose(hot, nil).Names())
			}
			if fired(cold) {
				t.Errorf("%s is quiet on its cold series, and %s fires", a.name, a.finding)
			}
		}
	}
}

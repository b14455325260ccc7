package dashboards

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// tool finds an external binary: a test without it skips, except in CI
// (CI=true), where a missing tool is a failure.
func tool(t *testing.T, name string) string {
	t.Helper()
	return reftest.Tool(t, name)
}

func runTool(t *testing.T, dir, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// testSized is a configuration whose windows are seconds, as the
// integration test uses: the generated unit tests must hold for it too.
func testSized() Config {
	c := Default()
	c.ScrapeInterval = time.Second
	c.RateWindow, c.StallWindow = 20*time.Second, 10*time.Second
	c.For, c.ShortFor = 4*time.Second, 2*time.Second
	c.GroupWait, c.GroupInterval, c.RepeatInterval = time.Second, time.Second, time.Minute
	return c
}

// TestGeneratedFilesPassPromtoolAndAmtool runs the tools' own checks and
// the generated promtool unit tests, for the shipped configuration and a
// test-sized one.
func TestGeneratedFilesPassPromtoolAndAmtool(t *testing.T) {
	promtool, amtool := tool(t, "promtool"), tool(t, "amtool")
	fleet := testSized()
	fleet.Fleet = []FleetTarget{{"127.0.0.1:8001", "127.0.0.1:9400"}, {"127.0.0.1:8011", "127.0.0.1:9410"}, {"127.0.0.1:8021", ""}}
	for name, c := range map[string]Config{"default": Default(), "test-sized": testSized(), "fleet": fleet} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Export(dir, c); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{promtool, "check", "rules", RulesPath},
				{promtool, "check", "config", PrometheusPath},
				{promtool, "test", "rules", RuleTestsPath},
				{amtool, "check-config", AlertmanagerPath},
			} {
				if out, err := runTool(t, dir, args[0], args[1:]...); err != nil {
					t.Errorf("%s: %v\n%s", strings.Join(args[1:], " "), err, out)
				}
			}
		})
	}
}

// TestRuleTestsCatchBrokenRules runs the default unit tests against rules
// whose thresholds or durations no longer match them: every alert's test
// must fail, or the tests do not pin the rules down.
func TestRuleTestsCatchBrokenRules(t *testing.T) {
	promtool := tool(t, "promtool")
	dir := t.TempDir()
	if _, err := Export(dir, Default()); err != nil {
		t.Fatal(err)
	}
	broken := Default()
	broken.Thresholds.PreemptionRate *= 2
	broken.Thresholds.KVWatermark = 0.99
	broken.E2EP95Seconds *= 3
	broken.TTFTSLOSeconds *= 3
	broken.Thresholds.QueueShare = 0.9
	broken.Thresholds.AbortShare = 0.6
	broken.ErrorRatio = 0.6
	broken.Thresholds.SpecAcceptanceLow = 0.05
	broken.Thresholds.ImbalanceRatio = 3
	broken.ShortFor = time.Hour // engine stalled, target down
	rules, err := RulesYAML(broken)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RulesPath), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runTool(t, dir, promtool, "test", "rules", RuleTestsPath)
	if err == nil {
		t.Fatalf("promtool test rules passed against broken rules:\n%s", out)
	}
	for _, a := range AlertNames(Default()) {
		if !strings.Contains(out, "alertname: "+a) {
			t.Errorf("no failure reported for %s:\n%s", a, out)
		}
	}
}

// TestEngineDeadOutlivesTheRestart: an engine dead for two scrapes, then
// restarted by its liveness probe (the gauge back at 0), still raises
// GlassboxEngineDead after its for:, and the alert clears once the death
// has left the rate window.
func TestEngineDeadOutlivesTheRestart(t *testing.T) {
	promtool := tool(t, "promtool")
	c := testSized()
	dir := t.TempDir()
	if _, err := Export(dir, c); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(alerts(&c), func(a alertSpec) bool { return a.name == "GlassboxEngineDead" })
	if i < 0 {
		t.Fatal("no GlassboxEngineDead alert")
	}
	a := alerts(&c)[i]
	iv := c.testInterval()
	e := &testEnv{c: &c, instance: hotInstance, interval: iv}
	f := ruleTestFile{RuleFiles: []string{RulesPath}, EvaluationInterval: promDuration(iv), Tests: []ruleTestGroup{{
		Name: "dead, then restarted", Interval: promDuration(iv),
		InputSeries: []inputSeries{{e.engineSeries(metricspec.EngineDead, "reason", "executor_error"),
			fmt.Sprintf("1 1 0x%d", int((c.RateWindow+c.ShortFor)/iv)*2)}},
		AlertRuleTests: []alertTestCase{
			{EvalTime: promDuration(roundUp(a.forDur, iv) + 2*iv), Alertname: a.name, ExpAlerts: []expAlert{a.firingOnHot(&c)}},
			{EvalTime: promDuration(c.RateWindow + roundUp(a.forDur, iv) + 2*iv), Alertname: a.name},
		},
	}}}
	b, err := marshalYAML("", f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dead_test.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runTool(t, dir, promtool, "test", "rules", "dead_test.yml"); err != nil {
		t.Errorf("promtool test rules: %v\n%s\n%s", err, out, b)
	}
}

package dashboards

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// The promtool unit tests are generated from the same specs as the rules,
// for whatever thresholds and windows the Config holds: each alert gets one
// instance whose series sit well above its threshold ("hot") and one well
// below ("cold"). The test then requires that nothing fires before the
// alert's for: duration, and that afterwards exactly the hot instance fires,
// with the labels and annotations the rule promises.

const (
	testModel    = "test-model"
	hotInstance  = "hot:8000"
	coldInstance = "cold:8000"
)

// Unit-test YAML, as promtool test rules reads it.
type ruleTestFile struct {
	RuleFiles          []string        `yaml:"rule_files"`
	EvaluationInterval string          `yaml:"evaluation_interval"`
	Tests              []ruleTestGroup `yaml:"tests"`
}

type ruleTestGroup struct {
	Name           string          `yaml:"name"`
	Interval       string          `yaml:"interval"`
	InputSeries    []inputSeries   `yaml:"input_series"`
	AlertRuleTests []alertTestCase `yaml:"alert_rule_test,omitempty"`
	PromQLTests    []exprTestCase  `yaml:"promql_expr_test,omitempty"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTestCase struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type exprTestCase struct {
	Expr       string      `yaml:"expr"`
	EvalTime   string      `yaml:"eval_time"`
	ExpSamples []expSample `yaml:"exp_samples"`
}

type expSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// testEnv writes the input series of one instance.
type testEnv struct {
	c        *Config
	instance string
	interval time.Duration
	steps    int // samples after the first
}

func (e *testEnv) pick(hot bool, ifHot, ifCold float64) float64 {
	if hot {
		return ifHot
	}
	return ifCold
}

// series writes name{labels} with the labels sorted, as promtool prints them.
func (e *testEnv) series(name string, kv ...string) string {
	l := map[string]string{"job": e.c.Job, "instance": e.instance}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func (e *testEnv) engineSeries(name string, kv ...string) string {
	return e.series(name, append([]string{"model_name", testModel, "engine", "0"}, kv...)...)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ramp is a counter growing perSecond from 0.
func (e *testEnv) ramp(perSecond float64) string {
	return fmt.Sprintf("0+%sx%d", num(perSecond*e.interval.Seconds()), e.steps)
}

func (e *testEnv) counter(name string, perSecond float64, kv ...string) []inputSeries {
	return []inputSeries{{e.engineSeries(name, kv...), e.ramp(perSecond)}}
}

func (e *testEnv) gauge(name string, v float64) []inputSeries {
	return []inputSeries{{e.engineSeries(name), fmt.Sprintf("%s+0x%d", num(v), e.steps)}}
}

func (e *testEnv) httpCounter(status string, perSecond float64) []inputSeries {
	s := e.series(metricspec.HTTPRequests, "handler", "/v1/completions", "method", "POST", "status", status)
	return []inputSeries{{s, e.ramp(perSecond)}}
}

func (e *testEnv) up(v float64) []inputSeries {
	return []inputSeries{{e.series("up"), fmt.Sprintf("%s+0x%d", num(v), e.steps)}}
}

// histogram observes one request per second, every one in (t, 2t] when hot
// and in (t/2, t] when cold: quantile q is then t(1+q) or t(1+q)/2.
func (e *testEnv) histogram(name string, t float64, hot bool) []inputSeries {
	var out []inputSeries
	for _, le := range []float64{t / 2, t, 2 * t, math.Inf(1)} {
		rate := 1.0
		if le < t || le == t && hot {
			rate = 0
		}
		out = append(out, inputSeries{e.engineSeries(name+"_bucket", "le", metricspec.BucketLabel(le)), e.ramp(rate)})
	}
	return out
}

// testInterval is the input-series step: fine enough that every window and
// for: duration spans several samples.
func (c *Config) testInterval() time.Duration {
	return min(c.RateWindow, c.For, c.ShortFor, c.StallWindow) / 2
}

// roundUp rounds d up to a multiple of step.
func roundUp(d, step time.Duration) time.Duration { return (d + step - 1) / step * step }

// RuleTestsYAML renders the promtool unit tests of the rules file at
// rulesPath (relative to the test file).
func RuleTestsYAML(c Config, rulesPath string) ([]byte, error) {
	iv := c.testInterval()
	f := ruleTestFile{RuleFiles: []string{rulesPath}, EvaluationInterval: promDuration(iv)}
	settle := roundUp(max(c.RateWindow, c.StallWindow), iv)
	for _, a := range alerts(&c) {
		fireAt := settle + roundUp(a.forDur, iv) + 2*iv
		steps := int(fireAt/iv) + 1
		g := ruleTestGroup{Name: a.name, Interval: promDuration(iv)}
		for _, inst := range []string{hotInstance, coldInstance} {
			e := &testEnv{c: &c, instance: inst, interval: iv, steps: steps}
			g.InputSeries = append(g.InputSeries, a.series(e, inst == hotInstance)...)
		}
		g.AlertRuleTests = []alertTestCase{
			{EvalTime: promDuration(roundUp(a.forDur, iv) - iv), Alertname: a.name},
			{EvalTime: promDuration(fireAt), Alertname: a.name, ExpAlerts: []expAlert{a.firingOnHot(&c)}},
		}
		f.Tests = append(f.Tests, g)
	}
	rec, err := recordingTests(&c, iv)
	if err != nil {
		return nil, err
	}
	f.Tests = append(f.Tests, rec)
	return marshalYAML("# Generated by 'glassbox monitoring export'; do not edit.\n# Run: promtool test rules "+strings.Join(testFileNames(), " ")+"\n", f)
}

// firingOnHot is the alert as it fires on the hot instance: its labels
// and its annotations rendered for them.
func (a *alertSpec) firingOnHot(c *Config) expAlert {
	labels := map[string]string{"severity": a.severity}
	hot := map[string]string{"job": c.Job, "instance": hotInstance, "model_name": testModel}
	for _, l := range a.labels {
		labels[l] = hot[l]
	}
	render := strings.NewReplacer("{{ $labels.instance }}", hotInstance, "{{ $labels.model_name }}", testModel)
	ann := a.annotations(c)
	for k, v := range ann {
		ann[k] = render.Replace(v)
	}
	return expAlert{labels, ann}
}

// recordingTests checks every recording rule's value on one instance.
func recordingTests(c *Config, iv time.Duration) (ruleTestGroup, error) {
	evalAt := roundUp(c.RateWindow, iv) + iv
	e := &testEnv{c: c, instance: hotInstance, interval: iv, steps: int(evalAt/iv) + 1}
	g := ruleTestGroup{Name: "recording rules", Interval: promDuration(iv)}
	seen := map[string]string{}
	for _, r := range recordingRules(c) {
		for _, s := range r.series(e) {
			if v, ok := seen[s.Series]; ok {
				if v != s.Values {
					return g, fmt.Errorf("recording rule tests: series %s has two different inputs", s.Series)
				}
				continue
			}
			seen[s.Series] = s.Values
			g.InputSeries = append(g.InputSeries, s)
		}
		g.PromQLTests = append(g.PromQLTests, exprTestCase{
			Expr: r.record, EvalTime: promDuration(evalAt),
			ExpSamples: []expSample{{
				Labels: fmt.Sprintf("%s{instance=%q, job=%q, model_name=%q}", r.record, hotInstance, c.Job, testModel),
				Value:  r.want,
			}},
		})
	}
	return g, nil
}

// testFileNames are the unit-test files under tests/.
func testFileNames() []string { return []string{"tests/rules_test.yml"} }

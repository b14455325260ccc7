package doctor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Evidence is one number behind a finding and the PromQL that reproduces
// it in Grafana or the Prometheus UI, evaluated at the window's end.
type Evidence struct {
	What   string   `json:"what"`
	Value  *float64 `json:"value"` // null when the window could not say
	Unit   string   `json:"unit,omitempty"`
	PromQL string   `json:"promql,omitempty"`
}

func ev(what string, v float64, unit, promql string) Evidence {
	e := Evidence{What: what, Unit: unit, PromQL: promql}
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		e.Value = &v
	}
	return e
}

// Text formats the value for people.
func (e Evidence) Text() string {
	if e.Value == nil {
		return "n/a"
	}
	v := *e.Value
	switch e.Unit {
	case "ratio":
		return fmt.Sprintf("%.2f", v)
	case "s":
		return (time.Duration(v * float64(time.Second))).Round(time.Microsecond * 100).String()
	case "":
		return strconv.FormatFloat(round3(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(round3(v), 'f', -1, 64) + " " + e.Unit
}

func round3(v float64) float64 {
	if math.Abs(v) >= 100 {
		return math.Round(v)
	}
	return math.Round(v*1000)/1000 + 0 // + 0: no "-0"
}

// promql builds the evidence queries of one window: over its length,
// with its selector, at its step.
type promql struct {
	matchers string
	window   string // e.g. 60s
	step     string
}

func newPromQL(w *Window, step time.Duration) promql {
	m, _ := ParseSelector(w.Selector)
	return promql{matchers: m, window: promDur(w.Duration()), step: promDur(step)}
}

func promDur(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Round(d.Seconds()))), 10) + "s"
}

func (p promql) s(name string, extra ...string) string {
	if p.matchers == "" && len(extra) == 0 {
		return name
	}
	return SeriesSelector(name, p.matchers, extra...)
}

func (p promql) rate(name string, extra ...string) string {
	return fmt.Sprintf("sum(rate(%s[%s]))", p.s(name, extra...), p.window)
}

// perEngine is a rate per data-parallel rank (the sum's share).
func (p promql) perEngine(name string, s *Signals) string {
	if n := s.cfg.engines; n > 1 {
		return fmt.Sprintf("%s / %d", p.rate(name), n)
	}
	return p.rate(name)
}

func (p promql) inc(name string, extra ...string) string {
	return fmt.Sprintf("sum(increase(%s[%s]))", p.s(name, extra...), p.window)
}

func (p promql) avg(name, agg string) string {
	return fmt.Sprintf("avg_over_time(%s(%s)[%s:%s])", agg, p.s(name), p.window, p.step)
}

func (p promql) maxOver(name, agg string) string {
	return fmt.Sprintf("max_over_time(%s(%s)[%s:%s])", agg, p.s(name), p.window, p.step)
}

func (p promql) share(name, agg, cmp string) string {
	return fmt.Sprintf("avg_over_time((%s(%s) %s)[%s:%s])", agg, p.s(name), cmp, p.window, p.step)
}

func (p promql) quantile(q float64, family string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (le) (increase(%s[%s])))", q, p.s(family+"_bucket"), p.window)
}

func (p promql) ratio(a, b string) string { return a + " / " + b }

func (p promql) info(family string) string { return p.s(family) }

// avgNoJob is a DCGM gauge's mean over the window and the target's GPUs,
// joined by instance rather than job.
func (p promql) avgNoJob(name string) string {
	return fmt.Sprintf("avg_over_time(avg(%s)[%s:%s])", SeriesSelector(name, WithoutJob(p.matchers)), p.window, p.step)
}

// ParseSelector reads a series selector's label matchers, without the
// braces (which are optional); it refuses anything but matchers (a range,
// a function).
func ParseSelector(s string) (string, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "{")
	s = strings.TrimSuffix(s, "}")
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "{}[]()") {
		return "", fmt.Errorf("parse selector %q: want label matchers such as {instance=\"host:8000\"}", s)
	}
	return s, nil
}

// SeriesSelector writes name{matchers, extra…}: the evidence's queries and
// a Prometheus source's select series alike.
func SeriesSelector(name, matchers string, extra ...string) string {
	var parts []string
	if matchers != "" {
		parts = append(parts, matchers)
	}
	parts = append(parts, extra...)
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// WithoutJob drops a job matcher: dcgm-exporter is scraped by a job of
// its own, and joins the target by the instance (or pod) its relabelling
// gives it.
func WithoutJob(matchers string) string {
	var keep []string
	for _, m := range strings.Split(matchers, ",") {
		name := strings.TrimSpace(m)
		if i := strings.IndexAny(name, "=!~"); i >= 0 {
			name = strings.TrimSpace(name[:i])
		}
		if name != "job" && strings.TrimSpace(m) != "" {
			keep = append(keep, strings.TrimSpace(m))
		}
	}
	return strings.Join(keep, ", ")
}

// join lists names for a sentence.
func join(xs []string) string { return strings.Join(xs, ", ") }

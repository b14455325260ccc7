package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// promSource reads the same series from Prometheus with range queries over
// [End-Since, End] at Step, so a past incident can be diagnosed.
type promSource struct {
	base     string // e.g. http://127.0.0.1:9090
	selector string // inner matchers, e.g. instance="10.0.0.5:8000"
	since    time.Duration
	step     time.Duration
	end      time.Time
	client   *http.Client
}

// newPromSource reads c's window (c with its defaults) of the series
// matchers select.
func newPromSource(c Config, matchers string) *promSource {
	return &promSource{base: strings.TrimRight(c.PrometheusURL, "/"), selector: matchers, since: c.Since, step: c.Interval,
		end: c.End.Truncate(time.Millisecond), client: c.HTTPClient}
}

// parseSelector turns '{instance="x"}' (braces optional) into its inner
// matchers, checking that it is a plausible label selector.
// ParseSelector reads a series selector's label matchers, without the
// braces; it refuses anything but matchers (a range, a function).
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

// sel writes name{matchers, extra}.
func sel(name, matchers string, extra ...string) string {
	var parts []string
	if matchers != "" {
		parts = append(parts, matchers)
	}
	parts = append(parts, extra...)
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// seriesQuery is the PromQL that reads one seriesSpec as one series.
func seriesQuery(spec seriesSpec, matchers string) string {
	var extra []string
	if spec.label != "" {
		extra = append(extra, fmt.Sprintf("%s=%q", spec.label, spec.value))
	}
	q := fmt.Sprintf("%s(%s)", spec.agg, sel(spec.family, matchers, extra...))
	if a := aliasOf(spec.family); a != "" {
		q += fmt.Sprintf(" or %s(%s)", spec.agg, sel(a, matchers, extra...)) // an older vLLM's name
	}
	return q
}

// bucketQuery reads a histogram's cumulative buckets as one series per le.
func bucketQuery(family, matchers string) string {
	q := fmt.Sprintf("sum by (le) (%s)", sel(family+"_bucket", matchers))
	if a := aliasOf(family); a != "" {
		q += fmt.Sprintf(" or sum by (le) (%s)", sel(a+"_bucket", matchers)) // an older vLLM's name
	}
	return q
}

func (p *promSource) collect(ctx context.Context) (*Window, error) {
	w := &Window{Source: "prometheus", Target: p.base, Selector: "{" + p.selector + "}",
		Info: map[string]map[string]string{}, Present: map[string]bool{}}
	start := p.end.Add(-p.since)
	snaps := map[int64]*Snapshot{}
	at := func(ms int64) *Snapshot {
		s := snaps[ms]
		if s == nil {
			s = &Snapshot{T: time.UnixMilli(ms), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
			snaps[ms] = s
		}
		return s
	}
	for _, spec := range scalarSeries() {
		matchers := p.selector
		if spec.dcgm {
			matchers = withoutJob(p.selector)
		}
		m, err := p.queryRange(ctx, seriesQuery(spec, matchers), start)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			w.Present[familyOf(spec.family)] = true
			for _, pt := range s.Values {
				at(pt.ms).Values[spec.key] = pt.v
			}
		}
	}
	for _, h := range quantileFamilies() {
		m, err := p.queryRange(ctx, bucketQuery(h, p.selector), start)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			le, err := strconv.ParseFloat(s.Metric["le"], 64)
			if err != nil {
				continue
			}
			for _, pt := range s.Values {
				snap := at(pt.ms)
				if snap.Buckets[h] == nil {
					snap.Buckets[h] = map[float64]float64{}
				}
				snap.Buckets[h][le] = pt.v
			}
		}
	}
	if err := p.readInfo(ctx, w, start); err != nil {
		return nil, err
	}
	down, err := p.downSteps(ctx, start)
	if err != nil {
		return nil, err
	}
	p.assemble(w, snaps, down, start)
	return w, nil
}

// withoutJob drops a job matcher: dcgm-exporter is scraped by a job of
// its own, and joins the target by the instance (or pod) its relabelling
// gives it.
func withoutJob(matchers string) string {
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

// familyOf strips a histogram part suffix.
func familyOf(name string) string {
	for _, suffix := range []string{"_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}

// readInfo takes the labels of the last sample of each info family.
func (p *promSource) readInfo(ctx context.Context, w *Window, start time.Time) error {
	for _, f := range infoFamilies() {
		m, err := p.queryRange(ctx, sel(f, p.selector), start)
		if err != nil {
			return err
		}
		if len(m) == 0 {
			continue
		}
		w.Present[f] = true
		labels := map[string]string{}
		for k, v := range m[len(m)-1].Metric {
			if k != "__name__" {
				labels[k] = v
			}
		}
		w.Info[f] = labels
	}
	m, err := p.queryRange(ctx, "count by (modelName) ("+sel(metricspec.DCGMGREngineActive, withoutJob(p.selector))+")", start)
	if err != nil {
		return err
	}
	if len(m) > 0 {
		w.Info[infoDCGM] = map[string]string{"modelName": m[len(m)-1].Metric["modelName"]}
	}
	return nil
}

// downSteps are the steps at which Prometheus recorded up == 0 for a
// target the selector matches.
func (p *promSource) downSteps(ctx context.Context, start time.Time) (map[int64]bool, error) {
	m, err := p.queryRange(ctx, "min("+sel(mUp, p.selector)+")", start)
	if err != nil {
		return nil, err
	}
	down := map[int64]bool{}
	for _, s := range m {
		for _, pt := range s.Values {
			if pt.v == 0 {
				down[pt.ms] = true
			}
		}
	}
	return down, nil
}

// assemble orders the readings, and counts a step as missed when the
// target was down or no series answered.
func (p *promSource) assemble(w *Window, snaps map[int64]*Snapshot, down map[int64]bool, start time.Time) {
	for t := start; !t.After(p.end); t = t.Add(p.step) {
		ms := t.UnixMilli()
		s, ok := snaps[ms]
		switch {
		case down[ms]:
			w.miss("Prometheus recorded the target down (up == 0)")
		case !ok || len(s.Values) == 0:
			w.miss("no series matched " + w.Selector + " at some steps (target absent or stale)")
		default:
			w.Snapshots = append(w.Snapshots, *s)
		}
	}
	sort.Slice(w.Snapshots, func(i, j int) bool { return w.Snapshots[i].T.Before(w.Snapshots[j].T) })
}

// promPoint is one sample of a range-query series.
type promPoint struct {
	ms int64
	v  float64
}

// promSeries is one series of a matrix answer.
type promSeries struct {
	Metric map[string]string
	Values []promPoint
}

func (p *promSource) queryRange(ctx context.Context, q string, start time.Time) ([]promSeries, error) {
	// A Prometheus restarting (or briefly overloaded) refuses connections
	// or answers 503 for a few seconds: wait it out a little, then give up.
	var err error
	for wait := 500 * time.Millisecond; ; wait *= 2 {
		var out []promSeries
		var retry bool
		out, retry, err = p.queryOnce(ctx, q, start)
		if err == nil || !retry || wait > 4*time.Second {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// queryOnce sends one range query; retry says whether the failure may pass.
func (p *promSource) queryOnce(ctx context.Context, q string, start time.Time) (out []promSeries, retry bool, err error) {
	v := url.Values{"query": {q}, "start": {formatTime(start)}, "end": {formatTime(p.end)},
		"step": {strconv.FormatFloat(p.step.Seconds(), 'f', -1, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/api/v1/query_range", strings.NewReader(v.Encode()))
	if err != nil {
		return nil, false, fmt.Errorf("query prometheus: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("query prometheus: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
		return nil, true, fmt.Errorf("query prometheus %q: HTTP %d", q, resp.StatusCode)
	}
	out, err = parseRangeResponse(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, false, fmt.Errorf("query prometheus %q (HTTP %d): %w", q, resp.StatusCode, err)
	}
	return out, false, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// parseRangeResponse decodes the /api/v1/query_range answer: a matrix of
// [unix seconds, "value"] pairs per series.
func parseRangeResponse(r io.Reader) ([]promSeries, error) {
	var body struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	if body.Status != "success" {
		if body.Error == "" {
			body.Error = "status " + strconv.Quote(body.Status)
		}
		return nil, errors.New(body.ErrorType + ": " + body.Error)
	}
	if body.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("decode answer: result type %q, want matrix", body.Data.ResultType)
	}
	out := make([]promSeries, 0, len(body.Data.Result))
	for _, s := range body.Data.Result {
		ps := promSeries{Metric: s.Metric}
		for _, pair := range s.Values {
			ts, ok := pair[0].(float64)
			str, ok2 := pair[1].(string)
			if !ok || !ok2 || math.IsNaN(ts) || math.IsInf(ts, 0) {
				return nil, fmt.Errorf("decode answer: malformed sample %v", pair)
			}
			v, err := strconv.ParseFloat(str, 64)
			if err != nil {
				return nil, fmt.Errorf("decode answer: value %q: %w", str, err)
			}
			ps.Values = append(ps.Values, promPoint{ms: int64(math.Round(ts * 1000)), v: v})
		}
		out = append(out, ps)
	}
	return out, nil
}

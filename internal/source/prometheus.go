package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Prometheus reads the target's series from Prometheus with range queries
// over [End-Since, End] at Step, so a past incident can be diagnosed. A
// selector that matches several instances reads each instance's series
// alone, over the same window: a fleet.
type Prometheus struct {
	URL      string        // e.g. http://127.0.0.1:9090
	Selector string        // label matchers of the target, e.g. {instance="10.0.0.5:8000"}
	Since    time.Duration // the window's length; default 30m
	End      time.Time     // the window's end; default a step before now (the last scrape of every target is then in)
	Step     time.Duration // between readings; default 5s
	Client   *http.Client  // default: 30 s timeout, no proxy
	Now      func() time.Time
}

// promQuery is one Prometheus window, fixed once: a Prometheus that takes
// a while to answer (restarting) must not move it on for later queries.
type promQuery struct {
	base     string
	matchers string // the selector's, without braces
	start    time.Time
	end      time.Time
	step     time.Duration
	client   *http.Client
}

// FleetSelector is the selector in its braces, as Collect reads it
// (the selector as given when it does not parse: Collect refuses it).
func (p Prometheus) FleetSelector() string {
	m, err := doctor.ParseSelector(p.Selector)
	if err != nil {
		return p.Selector
	}
	return "{" + m + "}"
}

func (p Prometheus) query() (*promQuery, error) {
	if err := checkURL(p.URL); err != nil {
		return nil, err
	}
	matchers, err := doctor.ParseSelector(p.Selector)
	if err != nil {
		return nil, err
	}
	if p.Since == 0 {
		p.Since = 30 * time.Minute
	}
	if p.Step == 0 {
		p.Step = 5 * time.Second
	}
	if p.Since < 0 || p.Step <= 0 {
		return nil, errors.New("check config: durations must be positive")
	}
	if p.Since/p.Step > 10000 {
		return nil, fmt.Errorf("check config: %v at %v steps is over Prometheus' 11000-point limit: raise --interval", p.Since, p.Step)
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.End.IsZero() {
		p.End = p.Now().Add(-p.Step)
	}
	if p.Client == nil {
		p.Client = defaultClient()
	}
	end := p.End.Truncate(time.Millisecond)
	return &promQuery{base: strings.TrimRight(p.URL, "/"), matchers: matchers, start: end.Add(-p.Since), end: end, step: p.Step, client: p.Client}, nil
}

// Collect reads the window of every instance the selector matches (from
// the running gauge): the selector's own window when it matches one
// instance or none (a target without that gauge is then diagnosed as
// such), else one window per instance, its series alone.
func (p Prometheus) Collect(ctx context.Context) ([]doctor.Member, error) {
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	insts, err := q.instances(ctx)
	if err != nil {
		return nil, err
	}
	if len(insts) <= 1 {
		m := doctor.Member{Instance: "{" + q.matchers + "}"}
		if len(insts) == 1 {
			m.Instance, m.ModelName = insts[0][0], insts[0][1]
		}
		if m.Window, err = q.window(ctx, q.matchers); err != nil {
			return nil, err
		}
		return []doctor.Member{m}, enough(m.Window)
	}
	var ms []doctor.Member
	for _, in := range insts {
		w, err := q.window(ctx, strings.Join(nonEmpty(q.matchers, fmt.Sprintf("instance=%q", in[0])), ", "))
		if err == nil {
			err = enough(w)
		}
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", in[0], err)
		}
		ms = append(ms, doctor.Member{Instance: in[0], ModelName: in[1], Window: w})
	}
	return ms, nil
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}

// instances lists the instances the selector matches, from the running
// gauge over the window, each with the model names it served (one, unless
// it was restarted with another model within the window).
func (q *promQuery) instances(ctx context.Context) ([][2]string, error) {
	m, err := q.rangeQuery(ctx, "count by (instance, model_name) ("+doctor.SeriesSelector(metricspec.NumRequestsRunning, q.matchers)+")")
	if err != nil {
		return nil, err
	}
	models := map[string][]string{}
	for _, s := range m {
		if in := s.Metric["instance"]; in != "" && !slices.Contains(models[in], s.Metric["model_name"]) {
			models[in] = append(models[in], s.Metric["model_name"])
		}
	}
	var out [][2]string
	for _, in := range slices.Sorted(maps.Keys(models)) {
		slices.Sort(models[in])
		out = append(out, [2]string{in, strings.Join(models[in], ",")})
	}
	return out, nil
}

// seriesQuery is the PromQL that reads one series of the schema as one
// series.
func seriesQuery(s doctor.Series, matchers string) string {
	var extra []string
	if s.Label != "" {
		extra = append(extra, fmt.Sprintf("%s=%q", s.Label, s.Value))
	}
	q := fmt.Sprintf("%s(%s)", s.Agg, doctor.SeriesSelector(s.Family, matchers, extra...))
	if a := doctor.AliasOf(s.Family); a != "" {
		q += fmt.Sprintf(" or %s(%s)", s.Agg, doctor.SeriesSelector(a, matchers, extra...)) // an older vLLM's name
	}
	return q
}

// engineQuery reads the running gauge once per engine rank.
func engineQuery(matchers string) string {
	return "count by (engine) (" + doctor.SeriesSelector(metricspec.NumRequestsRunning, matchers) + ")"
}

// bucketQuery reads a histogram's cumulative buckets as one series per le.
func bucketQuery(family, matchers string) string {
	q := fmt.Sprintf("sum by (le) (%s)", doctor.SeriesSelector(family+"_bucket", matchers))
	if a := doctor.AliasOf(family); a != "" {
		q += fmt.Sprintf(" or sum by (le) (%s)", doctor.SeriesSelector(a+"_bucket", matchers)) // an older vLLM's name
	}
	return q
}

// window reads the series matchers select over q's window.
func (q *promQuery) window(ctx context.Context, matchers string) (*doctor.Window, error) {
	w := doctor.NewWindow("prometheus", q.base)
	w.Selector = "{" + matchers + "}"
	snaps := map[int64]*doctor.Snapshot{}
	at := func(ms int64) *doctor.Snapshot {
		s := snaps[ms]
		if s == nil {
			s = &doctor.Snapshot{T: time.UnixMilli(ms), Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
			snaps[ms] = s
		}
		return s
	}
	for _, s := range doctor.ScalarSeries() {
		sm := matchers
		if s.DCGM {
			sm = doctor.WithoutJob(matchers)
		}
		m, err := q.rangeQuery(ctx, seriesQuery(s, sm))
		if err != nil {
			return nil, err
		}
		for _, ps := range m {
			w.Present[familyOf(s.Family)] = true
			for _, pt := range ps.Values {
				at(pt.ms).Values[s.Key] = pt.v
			}
		}
	}
	for _, h := range doctor.BucketFamilies() {
		m, err := q.rangeQuery(ctx, bucketQuery(h, matchers))
		if err != nil {
			return nil, err
		}
		for _, ps := range m {
			le, err := strconv.ParseFloat(ps.Metric["le"], 64)
			if err != nil {
				continue
			}
			for _, pt := range ps.Values {
				snap := at(pt.ms)
				if snap.Buckets[h] == nil {
					snap.Buckets[h] = map[float64]float64{}
				}
				snap.Buckets[h][le] = pt.v
			}
		}
	}
	if err := q.readInfo(ctx, w, matchers); err != nil {
		return nil, err
	}
	down, err := q.downSteps(ctx, matchers)
	if err != nil {
		return nil, err
	}
	q.assemble(w, snaps, down)
	return w, nil
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
func (q *promQuery) readInfo(ctx context.Context, w *doctor.Window, matchers string) error {
	for _, f := range doctor.InfoFamilies() {
		m, err := q.rangeQuery(ctx, doctor.SeriesSelector(f, matchers))
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
	m, err := q.rangeQuery(ctx, "count by (modelName) ("+doctor.SeriesSelector(metricspec.DCGMGREngineActive, doctor.WithoutJob(matchers))+")")
	if err != nil {
		return err
	}
	if len(m) > 0 {
		w.Info[doctor.InfoDCGM] = map[string]string{"modelName": m[len(m)-1].Metric["modelName"]}
	}
	// The engine ranks: one series per value of vLLM's engine label.
	if m, err = q.rangeQuery(ctx, engineQuery(matchers)); err != nil {
		return err
	}
	if len(m) > 0 {
		w.Info[doctor.InfoEngines] = map[string]string{"count": strconv.Itoa(len(m))}
	}
	return nil
}

// downSteps are the steps at which Prometheus recorded up == 0 for a
// target the matchers select.
func (q *promQuery) downSteps(ctx context.Context, matchers string) (map[int64]bool, error) {
	m, err := q.rangeQuery(ctx, "min("+doctor.SeriesSelector(doctor.FamilyUp, matchers)+")")
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
func (q *promQuery) assemble(w *doctor.Window, snaps map[int64]*doctor.Snapshot, down map[int64]bool) {
	for t := q.start; !t.After(q.end); t = t.Add(q.step) {
		ms := t.UnixMilli()
		s, ok := snaps[ms]
		switch {
		case down[ms]:
			w.Fail("Prometheus recorded the target down (up == 0)")
		case !ok || len(s.Values) == 0:
			w.Fail("no series matched " + w.Selector + " at some steps (target absent or stale)")
		default:
			w.Snapshots = append(w.Snapshots, *s)
		}
	}
	sort.Slice(w.Snapshots, func(i, j int) bool { return w.Snapshots[i].T.Before(w.Snapshots[j].T) })
}

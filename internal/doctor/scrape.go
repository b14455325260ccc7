package doctor

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeSource samples a /metrics endpoint directly every Interval for
// Duration.
type scrapeSource struct {
	url      string
	duration time.Duration
	interval time.Duration
	client   *http.Client
	now      func() time.Time
}

// collect takes the readings; a failed scrape is counted as missed, not
// fatal, since a target that drops out mid-window is itself a finding.
func (s *scrapeSource) collect(ctx context.Context) (*Window, error) {
	w := &Window{Source: "metrics", Target: s.url, Info: map[string]map[string]string{}, Present: map[string]bool{}}
	n := max(1, int(s.duration/s.interval)) + 1
	start := s.now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range n {
		if i > 0 {
			timer.Reset(time.Until(start.Add(time.Duration(i) * s.interval)))
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, fmt.Errorf("sample %s: %w", s.url, ctx.Err())
			}
		} else {
			<-timer.C
		}
		snap, err := s.scrape(ctx, w)
		if err != nil {
			w.miss(err.Error())
			continue
		}
		w.Snapshots = append(w.Snapshots, *snap)
	}
	return w, nil
}

func (s *scrapeSource) scrape(ctx context.Context, w *Window) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", s.url, resp.Status)
	}
	return parseExposition(resp.Body, s.now(), w)
}

// miss records a failed reading.
func (w *Window) miss(why string) {
	w.Missed++
	if !slices.Contains(w.Problems, why) {
		w.Problems = append(w.Problems, why)
	}
}

// parseExposition reduces Prometheus text exposition to a Snapshot,
// recording info labels and present families in w.
func parseExposition(r io.Reader, now time.Time, w *Window) (*Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	snap := &Snapshot{T: now, Values: map[string]float64{}, Buckets: map[string]map[float64]float64{}}
	for name := range fams {
		w.Present[name] = true
	}
	for _, spec := range scalarSeries() {
		fam, part := lookupFamily(fams, spec.family)
		if fam == nil {
			continue
		}
		for _, m := range fam.GetMetric() {
			if spec.label != "" && labelValue(m, spec.label) != spec.value {
				continue
			}
			v, ok := metricValue(m, part)
			if !ok {
				continue
			}
			cur, seen := snap.Values[spec.key]
			switch {
			case !seen:
				snap.Values[spec.key] = v
			case spec.agg == "max":
				snap.Values[spec.key] = max(cur, v)
			default:
				snap.Values[spec.key] = cur + v
			}
		}
	}
	for _, h := range quantileFamilies() {
		if fam := fams[h]; fam != nil && fam.GetType() == dto.MetricType_HISTOGRAM {
			snap.Buckets[h] = sumBuckets(fam)
		}
	}
	for _, f := range infoFamilies() {
		if fam := fams[f]; fam != nil && len(fam.GetMetric()) > 0 {
			labels := map[string]string{}
			for _, l := range fam.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			w.Info[f] = labels
		}
	}
	return snap, nil
}

// lookupFamily finds the family of a series name: the name itself, or a
// histogram's _sum or _count part.
func lookupFamily(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, string) {
	if f := fams[name]; f != nil {
		return f, ""
	}
	// Python's client names a counter's family without _total.
	if base, ok := cutSuffix(name, "_total"); ok {
		if f := fams[base]; f != nil && f.GetType() == dto.MetricType_COUNTER {
			return f, ""
		}
	}
	for _, suffix := range []string{"_sum", "_count"} {
		if base, ok := cutSuffix(name, suffix); ok {
			if f := fams[base]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
				return f, suffix
			}
		}
	}
	return nil, ""
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func metricValue(m *dto.Metric, part string) (float64, bool) {
	switch {
	case m.Histogram != nil && part == "_sum":
		return m.GetHistogram().GetSampleSum(), true
	case m.Histogram != nil && part == "_count":
		return float64(m.GetHistogram().GetSampleCount()), true
	case part != "":
		return 0, false
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sumBuckets adds a histogram's cumulative buckets over its label sets;
// the +Inf bucket is the sample count.
func sumBuckets(fam *dto.MetricFamily) map[float64]float64 {
	out := map[float64]float64{}
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		out[math.Inf(1)] += float64(h.GetSampleCount())
	}
	return out
}

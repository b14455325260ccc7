// Package promtext reads Prometheus' text exposition (a /metrics scrape of
// glassbox, vLLM, dcgm-exporter or anything else) and answers the questions
// bench, doctor and the dashboard ask of it: a family's value summed or
// maxed over its series, a histogram's buckets and an info family's labels
// (internal/histogram turns buckets into quantiles). It is the one reader: every
// consumer parses through it, so they cannot disagree about a scrape.
//
// It talks HTTP only to fetch a scrape and knows nothing of the engine.
package promtext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Accept is the Accept header a scrape sends: the classic text format,
// which every Prometheus client library (and vLLM's prometheus_client)
// serves.
const Accept = "text/plain;version=0.0.4"

// Scrape is one parsed exposition.
type Scrape struct {
	fams map[string]*dto.MetricFamily
}

// Parse reads the text format, validating names as UTF-8 (as Prometheus 3
// and the Gateway API Inference Extension's endpoint picker do).
func Parse(r io.Reader) (*Scrape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return &Scrape{fams: fams}, nil
}

// FromFamilies is a scrape of families gathered in process (a Prometheus
// registry's Gather), read as if they had been exposed and parsed.
func FromFamilies(mfs []*dto.MetricFamily) *Scrape {
	s := &Scrape{fams: make(map[string]*dto.MetricFamily, len(mfs))}
	for _, mf := range mfs {
		s.fams[mf.GetName()] = mf
	}
	return s
}

// Fetch scrapes url with client (an Authorization header, when the target
// needs one, comes from the client's transport or header).
func Fetch(ctx context.Context, client *http.Client, url string, header http.Header) (*Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", Accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	s, err := Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return s, nil
}

// Names lists the families present, sorted.
func (s *Scrape) Names() []string {
	out := make([]string, 0, len(s.fams))
	for n := range s.fams {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Family is the parsed family of that exact name, or nil.
func (s *Scrape) Family(name string) *dto.MetricFamily { return s.fams[name] }

// Labels are the label pairs a series must carry; nil matches every series.
type Labels map[string]string

func (l Labels) match(m *dto.Metric) bool {
	for k, v := range l {
		if labelValue(m, k) != v {
			return false
		}
	}
	return true
}

// Sum adds name's value over the series matching want. name may be a
// family, a counter's name with _total whose family was exposed without it
// (older Python clients), or a histogram's or summary's _sum or _count.
// ok is false when no series matched.
func (s *Scrape) Sum(name string, want Labels) (v float64, ok bool) {
	return s.reduce(name, want, func(acc, x float64) float64 { return acc + x })
}

// Max is the largest of name's values over the series matching want (a
// fraction such as KV usage: the fullest engine, not a sum).
func (s *Scrape) Max(name string, want Labels) (v float64, ok bool) {
	return s.reduce(name, want, math.Max)
}

func (s *Scrape) reduce(name string, want Labels, f func(acc, x float64) float64) (float64, bool) {
	fam, part := s.lookup(name)
	if fam == nil {
		return 0, false
	}
	var acc float64
	seen := false
	for _, m := range fam.GetMetric() {
		if !want.match(m) {
			continue
		}
		x, ok := value(m, part)
		if !ok {
			continue
		}
		if !seen {
			acc, seen = x, true
		} else {
			acc = f(acc, x)
		}
	}
	return acc, seen
}

// Series lists name's series with their labels and values, for readers
// that group them (by instance, by model).
func (s *Scrape) Series(name string) []Sample {
	fam, part := s.lookup(name)
	if fam == nil {
		return nil
	}
	var out []Sample
	for _, m := range fam.GetMetric() {
		if x, ok := value(m, part); ok {
			out = append(out, Sample{Labels: labelMap(m), Value: x})
		}
	}
	return out
}

// Sample is one series of a family.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Buckets adds a histogram's cumulative buckets over the series matching
// want: upper bound → count, with +Inf holding the sample count. nil when
// name is not a histogram in this scrape.
func (s *Scrape) Buckets(name string, want Labels) map[float64]float64 {
	fam := s.fams[name]
	if fam == nil || fam.GetType() != dto.MetricType_HISTOGRAM {
		return nil
	}
	out := map[float64]float64{}
	for _, m := range fam.GetMetric() {
		if !want.match(m) {
			continue
		}
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

// Info is the labels of an info family's first series (vLLM's
// cache_config_info), or nil.
func (s *Scrape) Info(name string) map[string]string {
	fam := s.fams[name]
	if fam == nil || len(fam.GetMetric()) == 0 {
		return nil
	}
	return labelMap(fam.GetMetric()[0])
}

// lookup finds the family of a series name and the part of it meant:
// "" for the value itself, "_sum" or "_count" of a histogram or summary.
func (s *Scrape) lookup(name string) (*dto.MetricFamily, string) {
	if f := s.fams[name]; f != nil {
		return f, ""
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		if f := s.fams[base]; f != nil && f.GetType() == dto.MetricType_COUNTER {
			return f, ""
		}
	}
	for _, part := range []string{"_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, part); ok {
			if f := s.fams[base]; f != nil && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return f, part
			}
		}
	}
	return nil, ""
}

func value(m *dto.Metric, part string) (float64, bool) {
	switch {
	case m.Histogram != nil && part == "_sum":
		return m.GetHistogram().GetSampleSum(), true
	case m.Histogram != nil && part == "_count":
		return float64(m.GetHistogram().GetSampleCount()), true
	case m.Summary != nil && part == "_sum":
		return m.GetSummary().GetSampleSum(), true
	case m.Summary != nil && part == "_count":
		return float64(m.GetSummary().GetSampleCount()), true
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

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

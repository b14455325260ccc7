package simulate

import (
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Series is a run's /metrics over virtual time: one reading every Interval,
// written as OpenMetrics with timestamps, which `promtool tsdb
// create-blocks-from openmetrics` turns into Prometheus blocks, so that a
// simulated hour can be looked at in Grafana and read by the doctor as if
// Prometheus had scraped it.
type Series struct {
	Interval time.Duration

	order    []string
	families map[string]*dto.MetricFamily // every reading's metrics, in time order
	last     time.Time
	err      error
}

// NewSeries records every interval of virtual time.
func NewSeries(interval time.Duration) *Series {
	return &Series{Interval: interval, families: make(map[string]*dto.MetricFamily)}
}

func (s *Series) taken(t time.Time) bool { return !s.last.IsZero() && !s.last.Before(t) }

// take records g's metrics as they are at t.
func (s *Series) take(g prometheus.Gatherer, t time.Time) {
	mfs, err := g.Gather()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("read metrics at %s: %w", t.Format(time.RFC3339), err)
	}
	ms := t.UnixMilli()
	for _, mf := range mfs {
		acc := s.families[mf.GetName()]
		if acc == nil {
			acc = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
			s.families[mf.GetName()] = acc
			s.order = append(s.order, mf.GetName())
		}
		for _, m := range mf.Metric {
			c := proto.Clone(m).(*dto.Metric)
			c.TimestampMs = &ms
			acc.Metric = append(acc.Metric, c)
		}
	}
	s.last = t
}

// Samples is how many metric points were recorded.
func (s *Series) Samples() int {
	n := 0
	for _, mf := range s.families {
		n += len(mf.Metric)
	}
	return n
}

// WriteOpenMetrics writes every reading, each family's points together and
// each series' points in time order, ending with # EOF.
func (s *Series) WriteOpenMetrics(w io.Writer) error {
	if s.err != nil {
		return s.err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, name := range s.order {
		if err := enc.Encode(bySeries(s.families[name])); err != nil {
			return fmt.Errorf("write openmetrics %s: %w", name, err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

// bySeries orders a family's points by label set, then time (they were
// taken reading by reading), as OpenMetrics wants a series' points together.
func bySeries(mf *dto.MetricFamily) *dto.MetricFamily {
	key := func(m *dto.Metric) string {
		k := ""
		for _, l := range m.Label {
			k += l.GetName() + "\x00" + l.GetValue() + "\x00"
		}
		return k
	}
	var keys []string
	groups := map[string][]*dto.Metric{}
	for _, m := range mf.Metric {
		k := key(m)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	out := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
	for _, k := range keys {
		out.Metric = append(out.Metric, groups[k]...)
	}
	return out
}

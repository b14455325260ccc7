package simulate

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// Series is a run's /metrics over virtual time, and its simulated GPU's
// dcgm-exporter's: one reading every Interval, written as OpenMetrics with
// timestamps, which `promtool tsdb create-blocks-from openmetrics` turns
// into Prometheus blocks, so that a simulated hour can be looked at in
// Grafana and read by the doctor as if Prometheus had scraped it. Every
// series carries the job and instance labels a scrape would give it
// (job="glassbox" and "dcgm", an instance per replica), so that the
// doctor's selector and its join of DCGM by instance work on the imported
// data.
type Series struct {
	Interval time.Duration
	// Instance is one replica's instance label; default DefaultInstance.
	// A fleet's replicas are simulated-0:8000, simulated-1:8000, ….
	Instance string

	order    []string
	families map[string]*dto.MetricFamily // every reading's metrics, in time order
	last     map[string]time.Time         // by instance
	err      error
}

// DefaultInstance is the instance label of a simulated replica's series.
const DefaultInstance = "simulated:8000"

// The jobs a simulated replica's series are labelled with, as a scrape
// config would name them (internal/dashboards' defaults).
const (
	JobEngine = "glassbox"
	JobDCGM   = "dcgm"
)

// NewSeries records every interval of virtual time.
func NewSeries(interval time.Duration) *Series {
	return &Series{Interval: interval, Instance: DefaultInstance, families: make(map[string]*dto.MetricFamily), last: map[string]time.Time{}}
}

func (s *Series) taken(t time.Time, instance string) bool {
	last, ok := s.last[instance]
	return ok && !last.Before(t)
}

// take records an instance's metrics, and its dcgm-exporter's when dcgm is
// not nil, as they are at t.
func (s *Series) take(g prometheus.Gatherer, dcgm http.Handler, t time.Time, instance string) {
	mfs, err := g.Gather()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("read metrics at %s: %w", t.Format(time.RFC3339), err)
	}
	s.add(mfs, JobEngine, instance, t)
	if dcgm != nil {
		gpu, err := scrapeHandler(dcgm)
		if err != nil && s.err == nil {
			s.err = fmt.Errorf("read dcgm-exporter at %s: %w", t.Format(time.RFC3339), err)
		}
		s.add(gpu, JobDCGM, instance, t)
	}
	if s.last == nil {
		s.last = map[string]time.Time{}
	}
	s.last[instance] = t
}

// scrapeHandler reads an exposition handler as Prometheus would.
func scrapeHandler(h http.Handler) ([]*dto.MetricFamily, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		out = append(out, fams[name])
	}
	return out, nil
}

// add appends a reading's families, labelled as job's scrape of the
// instance.
func (s *Series) add(mfs []*dto.MetricFamily, job, inst string, t time.Time) {
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
			c.Label = withTarget(c.Label, job, inst)
			acc.Metric = append(acc.Metric, c)
		}
	}
}

// withTarget adds job and instance labels, as a scrape does, keeping the
// labels sorted by name.
func withTarget(ls []*dto.LabelPair, job, instance string) []*dto.LabelPair {
	ls = slices.DeleteFunc(ls, func(l *dto.LabelPair) bool { return l.GetName() == "job" || l.GetName() == "instance" })
	ls = append(ls, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String(instance)},
		&dto.LabelPair{Name: proto.String("job"), Value: proto.String(job)})
	slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return ls
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

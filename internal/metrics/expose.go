package metrics

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// ContentType is what vLLM's /metrics answers with: the classic text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves g in the text format the way vLLM's single API server
// writes it with prometheus_client, so that what a scraper, a router or a
// `sum by (le)` panel reads is vLLM's: families in vLLM's order, labels
// sorted (le among them), numbers in Python's float style (le="1.0",
// "2560.0", "1e+06"), histogram _count before _sum, and a _created gauge
// family after every counter, histogram and summary. promhttp cannot do
// this: client_golang prints le="1" and no _created.
func Handler(g prometheus.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := g.Gather()
		if err != nil {
			http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		if r.Method == http.MethodHead {
			return
		}
		bw := bufio.NewWriter(w)
		// A write error means the scraper went away; nothing to tell it.
		_ = WriteText(bw, mfs)
		_ = bw.Flush()
	})
}

// WriteText writes families in the Prometheus text format 0.0.4 as vLLM
// does (see Handler). Only classic (bucketed) histograms are written.
func WriteText(w io.Writer, mfs []*dto.MetricFamily) error {
	tw := textWriter{w: w}
	for _, mf := range exposureOrder(mfs) {
		tw.family(mf)
	}
	return tw.err
}

// exposureOrder is vLLM's registration order: the runtime's own families
// first (python_* then process_* in vLLM; go_* then process_* here, the
// process families in Python's order), then metricspec's table, each
// deprecated family after its replacement, then anything else.
func exposureOrder(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	type ranked struct {
		rank float64
		mf   *dto.MetricFamily
	}
	rs := make([]ranked, len(mfs))
	for i, mf := range mfs {
		rs[i] = ranked{exposureRank(mf.GetName()), mf}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	out := make([]*dto.MetricFamily, len(rs))
	for i, r := range rs {
		out[i] = r.mf
	}
	return out
}

// exposureRank places one family in exposureOrder.
func exposureRank(name string) float64 {
	if i := metricspec.Index(name); i >= 0 {
		return float64(i)
	}
	if of, ok := deprecatedOf()[name]; ok {
		return float64(metricspec.Index(of)) + 0.5
	}
	switch {
	case strings.HasPrefix(name, "go_"):
		return -3
	case strings.HasPrefix(name, "process_"):
		if i := slices.Index(pythonProcessFamilies, name); i >= 0 {
			return -2 + float64(i)/100
		}
		return -1.5
	}
	return 1e6
}

// deprecatedOf maps each deprecated family to its replacement.
var deprecatedOf = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, d := range metricspec.DeprecatedFamilies() {
		m[d.Name] = d.Of
	}
	return m
})

// pythonProcessFamilies are prometheus_client's process collector's, in
// the order it writes them.
var pythonProcessFamilies = []string{"process_virtual_memory_bytes", "process_resident_memory_bytes",
	"process_start_time_seconds", "process_cpu_seconds_total", "process_open_fds", "process_max_fds"}

// textWriter keeps the first write error so that the encoding reads
// straight through.
type textWriter struct {
	w      io.Writer
	err    error
	labels []*dto.LabelPair // reused ordering buffer
	line   []byte
}

func (t *textWriter) write(b []byte) {
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

func (t *textWriter) family(mf *dto.MetricFamily) {
	name := metricName(mf.GetName())
	typ := "untyped"
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		typ = "counter"
	case dto.MetricType_GAUGE:
		typ = "gauge"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		typ = "histogram"
	case dto.MetricType_SUMMARY:
		typ = "summary"
	}
	t.header(name, mf, typ)
	for _, m := range mf.GetMetric() {
		t.metric(name, mf.GetType(), m)
	}
	t.created(name, mf)
}

func (t *textWriter) header(name string, mf *dto.MetricFamily, typ string) {
	if mf.Help != nil {
		t.write(fmt.Appendf(t.line[:0], "# HELP %s %s\n", name, escapeHelp(mf.GetHelp())))
	}
	t.write(fmt.Appendf(t.line[:0], "# TYPE %s %s\n", name, typ))
}

// created writes the _created gauge family prometheus_client adds after a
// counter (named without _total), histogram or summary: each series' start
// time in Unix seconds. Series with no creation time (constant metrics from
// collectors) have none, as in Python.
func (t *textWriter) created(name string, mf *dto.MetricFamily) {
	var ts func(*dto.Metric) *timestamppb.Timestamp
	base := name
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		ts = func(m *dto.Metric) *timestamppb.Timestamp { return m.GetCounter().GetCreatedTimestamp() }
		base = strings.TrimSuffix(name, "_total")
	case dto.MetricType_HISTOGRAM:
		ts = func(m *dto.Metric) *timestamppb.Timestamp { return m.GetHistogram().GetCreatedTimestamp() }
	case dto.MetricType_SUMMARY:
		ts = func(m *dto.Metric) *timestamppb.Timestamp { return m.GetSummary().GetCreatedTimestamp() }
	default:
		return
	}
	wrote := false
	for _, m := range mf.GetMetric() {
		c := ts(m)
		if c == nil {
			continue
		}
		if !wrote {
			t.header(base+"_created", mf, "gauge")
			wrote = true
		}
		sec := float64(c.GetSeconds()) + float64(c.GetNanos())/1e9
		t.sample(base+"_created", "", m, "", 0, sec)
	}
}

func (t *textWriter) metric(name string, typ dto.MetricType, m *dto.Metric) {
	switch typ {
	case dto.MetricType_COUNTER:
		t.sample(name, "", m, "", 0, m.GetCounter().GetValue())
	case dto.MetricType_GAUGE:
		t.sample(name, "", m, "", 0, m.GetGauge().GetValue())
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		hasInf := false
		for _, b := range h.GetBucket() {
			ub := b.GetUpperBound()
			hasInf = hasInf || math.IsInf(ub, +1)
			t.sample(name, "_bucket", m, "le", ub, float64(b.GetCumulativeCount()))
		}
		count := float64(h.GetSampleCount())
		if h.SampleCountFloat != nil {
			count = h.GetSampleCountFloat()
		}
		if !hasInf {
			t.sample(name, "_bucket", m, "le", math.Inf(+1), count)
		}
		t.sample(name, "_count", m, "", 0, count)
		t.sample(name, "_sum", m, "", 0, h.GetSampleSum())
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		for _, q := range s.GetQuantile() {
			t.sample(name, "", m, "quantile", q.GetQuantile(), q.GetValue())
		}
		t.sample(name, "_count", m, "", 0, float64(s.GetSampleCount()))
		t.sample(name, "_sum", m, "", 0, s.GetSampleSum())
	default:
		t.sample(name, "", m, "", 0, m.GetUntyped().GetValue())
	}
}

// sample writes one line, labels sorted by name as prometheus_client
// sorts them; extra, when set, is one more label (le or quantile) whose
// value is a number.
func (t *textWriter) sample(name, suffix string, m *dto.Metric, extra string, extraVal, v float64) {
	b := append(t.line[:0], name...)
	b = append(b, suffix...)
	t.labels = append(t.labels[:0], m.GetLabel()...)
	var extraPair dto.LabelPair
	if extra != "" {
		extraPair.Name, extraPair.Value = &extra, new(string)
		*extraPair.Value = metricspec.PyFloat(extraVal)
		t.labels = append(t.labels, &extraPair)
	}
	slices.SortFunc(t.labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	if len(t.labels) > 0 {
		b = append(b, '{')
		for i, lp := range t.labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, labelName(lp.GetName()), lp.GetValue())
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, metricspec.PyFloat(v)...)
	if m.TimestampMs != nil {
		b = append(b, ' ')
		b = strconv.AppendInt(b, m.GetTimestampMs(), 10)
	}
	b = append(b, '\n')
	t.line = b
	t.write(b)
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = append(b, escapeLabelValue(value)...)
	return append(b, '"')
}

func escapeHelp(s string) string       { return escape(s, false) }
func escapeLabelValue(s string) string { return escape(s, true) }

// escape applies the text format's escapes: backslash and newline always,
// double quote inside label values.
func escape(s string, quote bool) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	var sb strings.Builder
	for i := range len(s) {
		switch r := s[i]; {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '"' && quote:
			sb.WriteString(`\"`)
		default:
			sb.WriteByte(r)
		}
	}
	return sb.String()
}

// metricName and labelName keep names the 0.0.4 format can carry; a UTF-8
// name from some other collector is escaped with underscores, as promhttp
// does for 0.0.4 clients.
func metricName(n string) string {
	if model.IsValidLegacyMetricName(n) {
		return n
	}
	return model.EscapeName(n, model.UnderscoreEscaping)
}

func labelName(n string) string {
	if model.LabelName(n).IsValidLegacy() {
		return n
	}
	return model.EscapeName(n, model.UnderscoreEscaping)
}

// WithHidden is g with each deprecated family of hidden added beside its
// replacement, under its old name and HELP and with the replacement's
// samples (--show-hidden-metrics-for-version): a copy made when scraped,
// so the engine's loop records nothing twice.
func WithHidden(g prometheus.Gatherer, hidden []metricspec.Deprecated) prometheus.Gatherer {
	if len(hidden) == 0 {
		return g
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, d := range hidden {
			for _, mf := range mfs {
				if mf.GetName() == d.Of {
					mfs = append(mfs, &dto.MetricFamily{Name: proto.String(d.Name), Help: proto.String(d.Help), Type: mf.Type, Unit: mf.Unit, Metric: mf.Metric})
					break
				}
			}
		}
		return mfs, err
	})
}

// VLLMOnly is g without glassbox's own families (glassbox_*) and the Go
// runtime's (go_*): what a vLLM server exports (--disable-glassbox-metrics).
func VLLMOnly(g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if n := mf.GetName(); !strings.HasPrefix(n, "glassbox_") && !strings.HasPrefix(n, "go_") {
				out = append(out, mf)
			}
		}
		return out, err
	})
}

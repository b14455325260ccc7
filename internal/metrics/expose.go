package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// ContentType is what vLLM's /metrics answers with: the classic text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves g in the text format the way vLLM's prometheus_client
// writes it, so that the bytes a scraper or a `sum by (le)` panel sees are
// vLLM's: numbers in Python's float style (le="1.0", "2560.0", "1e+06"),
// model_name and engine first among labels, and histogram _count before
// _sum. promhttp cannot do this: client_golang prints le="1".
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

// WriteText writes families in the Prometheus text format 0.0.4 with
// Python-style numbers. Only classic (bucketed) histograms are written.
func WriteText(w io.Writer, mfs []*dto.MetricFamily) error {
	tw := textWriter{w: w}
	for _, mf := range mfs {
		tw.family(mf)
	}
	return tw.err
}

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
	if mf.Help != nil {
		t.write(fmt.Appendf(t.line[:0], "# HELP %s %s\n", name, escapeHelp(mf.GetHelp())))
	}
	t.write(fmt.Appendf(t.line[:0], "# TYPE %s %s\n", name, typ))
	for _, m := range mf.GetMetric() {
		t.metric(name, mf.GetType(), m)
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

// sample writes one line; extra, when set, is a last label (le or
// quantile) whose value is a number.
func (t *textWriter) sample(name, suffix string, m *dto.Metric, extra string, extraVal, v float64) {
	b := append(t.line[:0], name...)
	b = append(b, suffix...)
	t.labels = orderLabels(t.labels[:0], m.GetLabel())
	if len(t.labels) > 0 || extra != "" {
		b = append(b, '{')
		for i, lp := range t.labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, labelName(lp.GetName()), lp.GetValue())
		}
		if extra != "" {
			if len(t.labels) > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, extra, metricspec.PyFloat(extraVal))
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

// orderLabels puts model_name and engine first, as vLLM registers them;
// the rest keep the gatherer's (sorted) order.
func orderLabels(dst, src []*dto.LabelPair) []*dto.LabelPair {
	for _, want := range [...]string{labelModel, labelEngine} {
		for _, lp := range src {
			if lp.GetName() == want {
				dst = append(dst, lp)
			}
		}
	}
	for _, lp := range src {
		if n := lp.GetName(); n != labelModel && n != labelEngine {
			dst = append(dst, lp)
		}
	}
	return dst
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

package metrics

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestWriteText(t *testing.T) {
	lp := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: proto.String(n), Value: proto.String(v)} }
	mfs := []*dto.MetricFamily{{
		Name: proto.String("vllm:request_success_total"), Help: proto.String("Count of\nrequests \\ ok."),
		Type: dto.MetricType_COUNTER.Enum(),
		Metric: []*dto.Metric{{
			// Gathered labels arrive sorted; model_name and engine must lead.
			Label: []*dto.LabelPair{lp("engine", "0"), lp("finished_reason", "stop"), lp("model_name", `m"1\`)},
			Counter: &dto.Counter{Value: proto.Float64(3),
				CreatedTimestamp: &timestamppb.Timestamp{Seconds: 1790824327, Nanos: 221810600}},
		}},
	}, {
		Name: proto.String("vllm:e2e_request_latency_seconds"), Help: proto.String("e2e."),
		Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{lp("engine", "0")},
			Histogram: &dto.Histogram{
				SampleCount: proto.Uint64(2), SampleSum: proto.Float64(1.25),
				Bucket: []*dto.Bucket{
					{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)},
					{UpperBound: proto.Float64(1e6), CumulativeCount: proto.Uint64(2)},
				},
			},
		}},
	}, {
		Name: proto.String("go_gc_duration_seconds"), Type: dto.MetricType_SUMMARY.Enum(),
		Metric: []*dto.Metric{{Summary: &dto.Summary{
			SampleCount: proto.Uint64(4), SampleSum: proto.Float64(0.5),
			Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(0.0001)}},
		}}},
	}, {
		Name: proto.String("up"), Type: dto.MetricType_UNTYPED.Enum(),
		Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(1)}, TimestampMs: proto.Int64(1700000000000)}},
	}}
	// The runtime's families first, then vLLM's in its registration order,
	// then the rest; labels sorted, le among them; _created after a counter
	// or histogram that has a creation time.
	want := `# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.0001
go_gc_duration_seconds_count 4.0
go_gc_duration_seconds_sum 0.5
# HELP vllm:request_success_total Count of\nrequests \\ ok.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m\"1\\"} 3.0
# HELP vllm:request_success_created Count of\nrequests \\ ok.
# TYPE vllm:request_success_created gauge
vllm:request_success_created{engine="0",finished_reason="stop",model_name="m\"1\\"} 1.7908243272218106e+09
# HELP vllm:e2e_request_latency_seconds e2e.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1e+06"} 2.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf"} 2.0
vllm:e2e_request_latency_seconds_count{engine="0"} 2.0
vllm:e2e_request_latency_seconds_sum{engine="0"} 1.25
# TYPE up untyped
up 1.0 1700000000000
`
	var sb strings.Builder
	if err := WriteText(&sb, mfs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sb.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	parse(t, sb.String()) // and Prometheus' parser accepts it
}

// FuzzWriteText checks that any help text, label value and sample value
// survive the encoder and Prometheus' parser unchanged.
func FuzzWriteText(f *testing.F) {
	f.Add("help", "value", 1.5)
	f.Add("multi\nline \\ help", "quote \" back \\ newline \n", -2e6)
	f.Add("", "", math.Inf(1))
	f.Fuzz(func(t *testing.T, help, value string, v float64) {
		if !utf8.ValidString(help) || !utf8.ValidString(value) || math.IsNaN(v) {
			t.Skip("Prometheus requires UTF-8 text; NaN never equals itself")
		}
		mf := &dto.MetricFamily{
			Name: proto.String("vllm:x"), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{
				Label: []*dto.LabelPair{{Name: proto.String("model_name"), Value: proto.String(value)}},
				Gauge: &dto.Gauge{Value: proto.Float64(v)},
			}},
		}
		var sb strings.Builder
		if err := WriteText(&sb, []*dto.MetricFamily{mf}); err != nil {
			t.Fatal(err)
		}
		got := parse(t, sb.String())["vllm:x"]
		if got == nil || len(got.GetMetric()) != 1 {
			t.Fatalf("family lost:\n%s", sb.String())
		}
		m := got.GetMetric()[0]
		// The format cannot carry leading blanks of a help text: the parser
		// skips them as the separator.
		if got.GetHelp() != strings.TrimLeft(help, " \t") || labelMap(m)["model_name"] != value || m.GetGauge().GetValue() != v {
			t.Errorf("round trip changed the family:\n%s\nhelp %q value %q v %v", sb.String(), got.GetHelp(), labelMap(m)["model_name"], m.GetGauge().GetValue())
		}
	})
}

type failingGatherer struct{}

func (failingGatherer) Gather() ([]*dto.MetricFamily, error) {
	return nil, errors.New("collector broke")
}

func TestHandlerStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	tests := []struct {
		name     string
		g        prometheus.Gatherer
		method   string
		wantCode int
		wantBody bool
	}{
		{"get", reg, http.MethodGet, http.StatusOK, true},
		{"head", reg, http.MethodHead, http.StatusOK, false},
		{"gather error", failingGatherer{}, http.MethodGet, http.StatusInternalServerError, true},
	}
	if err := reg.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler(tt.g).ServeHTTP(rec, httptest.NewRequest(tt.method, "/metrics", nil))
			if rec.Code != tt.wantCode {
				t.Errorf("status %d, want %d", rec.Code, tt.wantCode)
			}
			if got := rec.Body.Len() > 0; got != tt.wantBody {
				t.Errorf("body present = %v, want %v: %q", got, tt.wantBody, rec.Body)
			}
		})
	}
}

package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

const (
	parentTrace = "0af7651916cd43dd8448eb211c80319c"
	parentSpan  = "b7ad6b7169203331"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// finished is a request that waited 10 ms, prefilled in two chunks, was
// preempted, waited again, recomputed and decoded.
func finished() *engine.FinishedEvent {
	p := sampling.Defaults()
	p.Temperature, p.TopP, p.MaxTokens = 0.7, 0.9, 64
	return &engine.FinishedEvent{
		ID: "cmpl-1-0", Group: "cmpl-1", GroupSize: 1, Reason: engine.FinishLength,
		PromptTokens: 100, CachedTokens: 32, GenerationTokens: 64, MaxTokens: 64,
		Timing: engine.Timing{Arrival: ms(0), Queued: ms(2), FirstScheduled: ms(12), FirstToken: ms(30), LastToken: ms(200),
			Finished: ms(201), Preemptions: 1},
		Request: &engine.Request{ID: "cmpl-1-0", Params: p,
			TraceParent: "00-" + parentTrace + "-" + parentSpan + "-01", TraceState: "congo=t61rcWkgMzE"},
		Phases: []engine.Phase{
			{Kind: engine.PhasePrefill, Start: ms(12), End: ms(20), Tokens: 40, Steps: 1},
			{Kind: engine.PhasePrefill, Start: ms(20), End: ms(30), Tokens: 28, Steps: 1},
			{Kind: engine.PhaseDecode, Start: ms(30), End: ms(50), Tokens: 10, Steps: 10},
			{Kind: engine.PhasePreempted, Start: ms(50), End: ms(50)},
			{Kind: engine.PhasePrefill, Start: ms(60), End: ms(70), Tokens: 78, Steps: 1},
			{Kind: engine.PhaseDecode, Start: ms(70), End: ms(200), Tokens: 53, Steps: 53},
		},
	}
}

func newTestTracer(t *testing.T, detailed bool) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(context.Background(), Config{Exporter: exp, Detailed: detailed, ServiceVersion: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(context.Background()) })
	return tr, exp
}

// spans flushes and returns what was exported (before Close, which clears
// the in-memory exporter).
func spans(t *testing.T, tr *Tracer, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func attrs(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func TestRequestSpan(t *testing.T) {
	tr, exp := newTestTracer(t, false)
	tr.ObserveFinished(finished())
	got := spans(t, tr, exp)
	if len(got) != 1 {
		t.Fatalf("%d spans, want 1 without detailed traces: %+v", len(got), got)
	}
	s := got[0]
	if s.Name != "llm_request" || s.SpanKind != trace.SpanKindServer || !s.StartTime.Equal(ms(0)) || !s.EndTime.Equal(ms(201)) {
		t.Errorf("span %q kind %v from %v to %v; want llm_request, server, arrival to finish", s.Name, s.SpanKind, s.StartTime, s.EndTime)
	}
	if s.Parent.TraceID().String() != parentTrace || s.Parent.SpanID().String() != parentSpan || !s.Parent.IsRemote() ||
		s.SpanContext.TraceID().String() != parentTrace || s.SpanContext.TraceState().Get("congo") != "t61rcWkgMzE" {
		t.Errorf("parent %v, span %v: traceparent/tracestate not honoured", s.Parent, s.SpanContext)
	}
	want := map[string]any{
		AttrTTFT: 0.030, AttrE2E: 0.201, AttrQueue: 0.010, AttrPrefill: 0.018, AttrDecode: 0.170, AttrInference: 0.188,
		AttrPromptTokens: int64(100), AttrCompletionTokens: int64(64), AttrRequestID: "cmpl-1",
		AttrTemperature: 0.7, AttrTopP: 0.9, AttrMaxTokens: int64(64), AttrN: int64(1),
		AttrSequenceID: "cmpl-1-0", AttrFinishReason: "length", AttrCachedTokens: int64(32), AttrPreemptions: int64(1),
	}
	if diff := cmp.Diff(want, attrs(s.Attributes), cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if got := s.Resource.Set(); !hasAttr(got, "service.name", "glassbox") || !hasAttr(got, "service.version", "v-test") {
		t.Errorf("resource %v: want service.name glassbox and the version", s.Resource)
	}
}

func hasAttr(set *attribute.Set, key, value string) bool {
	v, ok := set.Value(attribute.Key(key))
	return ok && v.AsString() == value
}

func TestDetailedSpans(t *testing.T) {
	tr, exp := newTestTracer(t, true)
	tr.ObserveFinished(finished())
	got := spans(t, tr, exp)
	type child struct {
		Name       string
		Start, End int // ms
		Tokens     int64
	}
	var root tracetest.SpanStub
	var children []child
	for _, s := range got {
		if s.Name == SpanName {
			root = s
		}
	}
	for _, s := range got {
		if s.Name == SpanName {
			continue
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s's parent is %v, want the request span", s.Name, s.Parent.SpanID())
		}
		tok, _ := attrs(s.Attributes)[AttrTokens].(int64)
		children = append(children, child{s.Name, int(s.StartTime.Sub(t0).Milliseconds()), int(s.EndTime.Sub(t0).Milliseconds()), tok})
	}
	want := []child{
		{"queued", 2, 12, 0}, {"prefill", 12, 20, 40}, {"prefill", 20, 30, 28}, {"decode", 30, 50, 10},
		{"queued", 50, 60, 0}, {"prefill", 60, 70, 78}, {"decode", 70, 200, 53},
	}
	if diff := cmp.Diff(want, children); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if len(root.Events) != 1 || root.Events[0].Name != "preempted" || !root.Events[0].Time.Equal(ms(50)) {
		t.Errorf("events %+v, want one preempted at 50 ms", root.Events)
	}
}

func TestAbortedWhileWaitingIsQueuedToTheEnd(t *testing.T) {
	tr, exp := newTestTracer(t, true)
	f := &engine.FinishedEvent{ID: "x", Reason: engine.FinishAbort, Timing: engine.Timing{Arrival: ms(0), Queued: ms(1), Finished: ms(40)}}
	tr.ObserveFinished(f)
	got := spans(t, tr, exp)
	if len(got) != 2 || got[0].Name != "queued" || !got[0].EndTime.Equal(ms(40)) {
		t.Fatalf("spans %+v: want queued until the abort, then the request", got)
	}
	if v := attrs(got[1].Attributes); v[AttrTTFT] != 0.0 || v[AttrRequestID] != "x" || v[AttrN] != int64(1) {
		t.Errorf("aborted request attributes %v", v)
	}
}

func TestEnvironmentDrivesSamplerAndResource(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "my-llm")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	tr, exp := newTestTracer(t, false)
	tr.ObserveFinished(finished())
	if got := spans(t, tr, exp); len(got) != 0 {
		t.Errorf("OTEL_TRACES_SAMPLER=always_off, but %d spans were exported", len(got))
	}

	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	tr, exp = newTestTracer(t, false)
	tr.ObserveFinished(finished())
	got := spans(t, tr, exp)
	if len(got) != 1 {
		t.Fatalf("%d spans, want 1", len(got))
	}
	set := got[0].Resource.Set()
	if !hasAttr(set, "service.name", "my-llm") || !hasAttr(set, "deployment.environment", "test") {
		t.Errorf("resource %v: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES not applied", got[0].Resource)
	}
}

func TestFullQueueDropsInsteadOfBlocking(t *testing.T) {
	tr := &Tracer{queue: make(chan item, 2), stop: make(chan struct{}), done: make(chan struct{})}
	// No builder goroutine runs: the engine goroutine must still not block.
	for range 5 {
		tr.ObserveFinished(finished())
	}
	if tr.Dropped() != 3 || len(tr.queue) != 2 {
		t.Errorf("dropped %d, queued %d; want 3 and 2", tr.Dropped(), len(tr.queue))
	}
}

func TestUnsupportedProtocol(t *testing.T) {
	_, err := New(context.Background(), Config{Endpoint: "127.0.0.1:4317", Protocol: "http/json"})
	if err == nil {
		t.Fatal("http/json accepted")
	}
}

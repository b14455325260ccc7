package tracing

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// SpanName is vLLM's name for the per-request span.
const SpanName = "llm_request"

// Attribute keys: vLLM's (the older GenAI semantic-convention names), then
// glassbox's own.
const (
	AttrTTFT             = "gen_ai.latency.time_to_first_token"
	AttrE2E              = "gen_ai.latency.e2e"
	AttrQueue            = "gen_ai.latency.time_in_queue"
	AttrPrefill          = "gen_ai.latency.time_in_model_prefill"
	AttrDecode           = "gen_ai.latency.time_in_model_decode"
	AttrInference        = "gen_ai.latency.time_in_model_inference"
	AttrPromptTokens     = "gen_ai.usage.prompt_tokens"
	AttrCompletionTokens = "gen_ai.usage.completion_tokens"
	AttrRequestID        = "gen_ai.request.id"
	AttrTemperature      = "gen_ai.request.temperature"
	AttrTopP             = "gen_ai.request.top_p"
	AttrMaxTokens        = "gen_ai.request.max_tokens"
	AttrN                = "gen_ai.request.n"

	AttrSequenceID   = "glassbox.sequence_id" // the engine request (one choice of n)
	AttrFinishReason = "glassbox.finish_reason"
	AttrCachedTokens = "glassbox.usage.prefix_cache_hit_tokens"
	AttrPreemptions  = "glassbox.preemptions"
	AttrTokens       = "glassbox.tokens" // on child spans: tokens computed or generated
	AttrSteps        = "glassbox.steps"
)

// record is what the span builder needs of a finished request, copied off
// the engine goroutine's reused event.
type record struct {
	id, group               string
	groupSize               int
	reason                  engine.FinishReason
	traceParent, traceState string
	temperature, topP       float64
	maxTokens               int
	prompt, cached, output  int
	timing                  engine.Timing
	phases                  []engine.Phase
}

func newRecord(f *engine.FinishedEvent, detailed bool) *record {
	r := &record{
		id: f.ID, group: f.Group, groupSize: max(f.GroupSize, 1), reason: f.Reason,
		maxTokens: f.MaxTokens, prompt: f.PromptTokens, cached: f.CachedTokens, output: f.GenerationTokens,
		timing: f.Timing,
	}
	if q := f.Request; q != nil {
		r.traceParent, r.traceState = q.TraceParent, q.TraceState
		r.temperature, r.topP = q.Params.Temperature, q.Params.TopP
	}
	if detailed {
		r.phases = slices.Clone(f.Phases)
	}
	return r
}

// carrier reads the two W3C headers from a record.
type carrier struct{ r *record }

func (c carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.r.traceParent
	case "tracestate":
		return c.r.traceState
	}
	return ""
}
func (c carrier) Set(string, string) {}
func (c carrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

var _ propagation.TextMapCarrier = carrier{}

// emit builds the request's span, from arrival at the server to the end.
func (t *Tracer) emit(r *record) {
	tm := &r.timing
	ctx := t.prop.Extract(context.Background(), carrier{r})
	requestID := r.group
	if requestID == "" {
		requestID = r.id
	}
	ctx, span := t.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(tm.Arrival),
		trace.WithAttributes(
			attribute.Float64(AttrTTFT, tm.TTFT()), attribute.Float64(AttrE2E, tm.E2E()),
			attribute.Float64(AttrQueue, tm.QueueTime()), attribute.Float64(AttrPrefill, tm.PrefillTime()),
			attribute.Float64(AttrDecode, tm.DecodeTime()), attribute.Float64(AttrInference, tm.InferenceTime()),
			attribute.Int(AttrPromptTokens, r.prompt), attribute.Int(AttrCompletionTokens, r.output),
			attribute.String(AttrRequestID, requestID),
			attribute.Float64(AttrTemperature, r.temperature), attribute.Float64(AttrTopP, r.topP),
			attribute.Int(AttrMaxTokens, r.maxTokens), attribute.Int(AttrN, r.groupSize),
			attribute.String(AttrSequenceID, r.id), attribute.String(AttrFinishReason, string(r.reason)),
			attribute.Int(AttrCachedTokens, r.cached), attribute.Int(AttrPreemptions, tm.Preemptions),
		))
	if r.reason == engine.FinishError {
		span.SetStatus(codes.Error, "the executor failed")
	}
	if t.detailed && span.IsRecording() {
		t.emitPhases(ctx, span, r)
	}
	span.End(trace.WithTimestamp(tm.Finished))
}

// emitPhases adds the children: "queued" from admission to the first step
// (and again after each preemption), one "prefill" per chunk, one "decode"
// per run of decode steps, and a "preempted" event on the request's span.
func (t *Tracer) emitPhases(ctx context.Context, parent trace.Span, r *record) {
	tm := &r.timing
	child := func(name string, start, end time.Time, attrs ...attribute.KeyValue) {
		_, s := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		s.End(trace.WithTimestamp(end))
	}
	waitFrom := tm.Queued // while set, the request is waiting since then
	for i, p := range r.phases {
		switch p.Kind {
		case engine.PhasePreempted:
			parent.AddEvent("preempted", trace.WithTimestamp(p.Start))
			waitFrom = p.Start
			continue
		case engine.PhasePrefill, engine.PhaseDecode:
			if !waitFrom.IsZero() {
				child("queued", waitFrom, p.Start, attribute.Bool("glassbox.after_preemption", i > 0))
				waitFrom = time.Time{}
			}
			child(p.Kind.String(), p.Start, p.End, attribute.Int(AttrTokens, p.Tokens), attribute.Int(AttrSteps, p.Steps))
		}
	}
	if !waitFrom.IsZero() && !tm.Finished.IsZero() {
		child("queued", waitFrom, tm.Finished, attribute.Bool("glassbox.after_preemption", len(r.phases) > 0))
	}
}

// Package tracing owns glassbox's OpenTelemetry set-up: the OTLP exporter
// (gRPC or HTTP/protobuf), the tracer provider, and the spans of finished
// requests. One "llm_request" SERVER span per engine request carries vLLM's
// gen_ai.* attributes; with Config.Detailed it gets child spans for queueing,
// each prefill chunk and decode, and an event per preemption.
//
// Spans are built after the fact, from the engine's timestamps, on this
// package's own goroutine: the engine goroutine only copies a finished
// request into a bounded queue (dropping it when the queue is full), so
// tracing never slows the serving loop. The parent context comes from the
// W3C traceparent/tracestate values the server put into engine.Request.
//
// The OTel SDK reads the standard OTEL_* variables itself (sampler,
// service name, resource attributes, exporter headers and timeouts); this
// package reads no environment of its own: cmd/ passes the protocol in.
// It must not import server, metrics or an executor.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// Protocols of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL that glassbox supports,
// as vLLM does.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Config is the tracing configuration, filled from flags and the protocol
// variable in cmd/.
type Config struct {
	// Endpoint is --otlp-traces-endpoint: host:port, or a URL. gRPC without
	// a scheme or with http:// is plaintext, as vLLM's exporter is; https://
	// uses TLS. HTTP without a path posts to /v1/traces.
	Endpoint string
	Protocol string // ProtocolGRPC (the default when empty) or ProtocolHTTP
	// Detailed (--collect-detailed-traces) adds child spans for queueing,
	// prefill chunks and decode; the engine must record phases for them
	// (engine.Config.RecordPhases).
	Detailed       bool
	ServiceVersion string
	Logger         *slog.Logger
	// Exporter, when set, replaces the OTLP exporter (tests, embedding).
	Exporter sdktrace.SpanExporter
	// QueueSize bounds finished requests waiting for their spans; beyond it
	// they are dropped and counted. Default 4096.
	QueueSize int
}

// Tracer turns finished requests into spans. It is an engine.Observer.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	detailed bool
	log      *slog.Logger

	queue   chan item
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	dropped atomic.Uint64
}

// item is a finished request, or a flush marker.
type item struct {
	rec     *record
	flushed chan struct{}
}

// New builds the exporter and the provider and starts the span builder.
// Call Close to flush and stop it.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4096
	}
	exp := cfg.Exporter
	if exp == nil {
		var err error
		if exp, err = newExporter(ctx, cfg.Endpoint, cfg.Protocol); err != nil {
			return nil, err
		}
	}
	res, err := newResource(ctx, cfg.ServiceVersion)
	if err != nil {
		return nil, err
	}
	// No WithSampler: the SDK takes OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on), as vLLM.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &Tracer{
		provider: tp,
		tracer:   tp.Tracer("github.com/glassbox-llm/glassbox/internal/tracing"),
		prop:     propagation.TraceContext{},
		detailed: cfg.Detailed,
		log:      cfg.Logger,
		queue:    make(chan item, cfg.QueueSize),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go t.run()
	return t, nil
}

// newExporter builds the OTLP exporter for endpoint. Exporter settings not
// given here (headers, timeout, certificates) come from OTEL_EXPORTER_OTLP_*.
func newExporter(ctx context.Context, endpoint, protocol string) (sdktrace.SpanExporter, error) {
	if endpoint == "" {
		return nil, errors.New("create trace exporter: no OTLP endpoint")
	}
	hasScheme := strings.Contains(endpoint, "://")
	switch protocol {
	case "", ProtocolGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure()}
		if hasScheme {
			opts = []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}
		}
		return otlptracegrpc.New(ctx, opts...)
	case ProtocolHTTP:
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure()}
		if hasScheme {
			u, err := url.Parse(endpoint)
			if err != nil {
				return nil, fmt.Errorf("parse OTLP endpoint %q: %w", endpoint, err)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces" // the collector's standard path, which a bare URL would miss
			}
			opts = []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("create trace exporter: unsupported OTLP protocol %q (want %q or %q)", protocol, ProtocolGRPC, ProtocolHTTP)
}

// newResource names the service "glassbox" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise: the environment is merged last,
// so it wins.
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "glassbox"),
		attribute.Int("glassbox.process_id", os.Getpid()),
	}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("build trace resource: %w", err)
	}
	return res, nil
}

// ObserveStep is unused: spans come from finished requests.
func (t *Tracer) ObserveStep(*engine.StepEvent) {}

// ObserveFinished copies f and queues it for the span builder, on the
// engine goroutine: it never blocks, and a full queue drops the request.
func (t *Tracer) ObserveFinished(f *engine.FinishedEvent) {
	r := newRecord(f, t.detailed)
	select {
	case t.queue <- item{rec: r}:
	default:
		t.dropped.Add(1)
	}
}

// Dropped counts requests whose span was not built because the queue was
// full.
func (t *Tracer) Dropped() uint64 { return t.dropped.Load() }

// run builds spans until Close, then builds what is still queued.
func (t *Tracer) run() {
	defer close(t.done)
	for {
		select {
		case it := <-t.queue:
			t.handle(it)
		case <-t.stop:
			for {
				select {
				case it := <-t.queue:
					t.handle(it)
				default:
					return
				}
			}
		}
	}
}

func (t *Tracer) handle(it item) {
	if it.flushed != nil {
		close(it.flushed)
		return
	}
	t.emit(it.rec)
}

// Flush waits until every request queued so far has its span, then
// exports them.
func (t *Tracer) Flush(ctx context.Context) error {
	marker := item{flushed: make(chan struct{})}
	select {
	case t.queue <- marker:
	case <-t.done:
		return errors.New("flush traces: tracer is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-marker.flushed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.provider.ForceFlush(ctx)
}

// Close builds the spans still queued, exports them and shuts the exporter
// down. Requests finishing afterwards are dropped.
func (t *Tracer) Close(ctx context.Context) error {
	t.closing.Do(func() { close(t.stop) })
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracer provider: %w", err)
	}
	if n := t.dropped.Load(); n > 0 {
		t.log.Warn("traces dropped: the span queue was full", "requests", n)
	}
	return nil
}

package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is an in-process OTLP receiver that keeps every span it gets.
type collector struct {
	collectorpb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) add(req *collectorpb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
}

// Export is the gRPC method.
func (c *collector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is OTLP/HTTP with protobuf bodies.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces with a protobuf body", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.add(&req)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (c *collector) got() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

func TestOTLPExport(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		start    func(t *testing.T, c *collector) string // returns the endpoint
	}{
		{"grpc host:port", ProtocolGRPC, startGRPC(false)},
		{"grpc URL", "", startGRPC(true)},
		{"http URL without a path", ProtocolHTTP, func(t *testing.T, c *collector) string {
			srv := httptest.NewServer(c)
			t.Cleanup(srv.Close)
			return srv.URL
		}},
		{"http host:port", ProtocolHTTP, func(t *testing.T, c *collector) string {
			srv := httptest.NewServer(c)
			t.Cleanup(srv.Close)
			return srv.Listener.Addr().String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &collector{}
			tr, err := New(context.Background(), Config{Endpoint: tt.start(t, c), Protocol: tt.protocol, Detailed: true})
			if err != nil {
				t.Fatal(err)
			}
			tr.ObserveFinished(finished())
			if err := tr.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := c.got()
			var root *tracepb.Span
			for _, s := range spans {
				if s.GetName() == SpanName {
					root = s
				}
			}
			if root == nil || len(spans) != 8 {
				t.Fatalf("received %d spans (request span found: %v), want the request and 7 children", len(spans), root != nil)
			}
			if root.GetKind() != tracepb.Span_SPAN_KIND_SERVER || uint64(ms(0).UnixNano()) != root.GetStartTimeUnixNano() {
				t.Errorf("request span kind %v start %d", root.GetKind(), root.GetStartTimeUnixNano())
			}
			found := map[string]bool{}
			for _, kv := range root.GetAttributes() {
				found[kv.GetKey()] = true
				if kv.GetKey() == AttrRequestID && kv.GetValue().GetStringValue() != "cmpl-1" {
					t.Errorf("%s = %v", AttrRequestID, kv.GetValue())
				}
			}
			for _, k := range []string{AttrTTFT, AttrE2E, AttrQueue, AttrPrefill, AttrDecode, AttrInference, AttrPromptTokens, AttrCompletionTokens, AttrTemperature, AttrTopP, AttrMaxTokens, AttrN} {
				if !found[k] {
					t.Errorf("attribute %s missing", k)
				}
			}
		})
	}
}

func startGRPC(url bool) func(t *testing.T, c *collector) string {
	return func(t *testing.T, c *collector) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		collectorpb.RegisterTraceServiceServer(srv, c)
		var wg sync.WaitGroup
		wg.Go(func() { _ = srv.Serve(ln) })
		t.Cleanup(func() { srv.Stop(); wg.Wait() })
		if url {
			return "http://" + ln.Addr().String()
		}
		return ln.Addr().String()
	}
}

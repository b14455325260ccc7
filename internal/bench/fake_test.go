package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// script is what the fake server does for one prompt: wait TTFT, send a
// chunk, then one chunk after each gap, then the usage chunk after
// usageDelay, then [DONE]. status != 200 answers an error instead.
type script struct {
	status       int
	ttft         time.Duration
	gaps         []time.Duration
	promptTokens int
	chat         bool
}

// usageDelay separates the last token chunk from the usage chunk: it must
// not count in any latency.
const usageDelay = 5 * time.Millisecond

// fakeServer is a scripted OpenAI-compatible server with /v1/models,
// /tokenize (one token per word), streaming /v1/completions and
// /v1/chat/completions, and a /metrics with vLLM's counters and a TTFT
// histogram that it fills from the scripts it played.
type fakeServer struct {
	scripts map[string]script // by prompt
	reg     *prometheus.Registry
	success prometheus.Counter
	gen     prometheus.Counter
	prompt  prometheus.Counter
	ttft    prometheus.Histogram
}

func newFakeServer(scripts map[string]script) *fakeServer {
	f := &fakeServer{scripts: scripts, reg: prometheus.NewRegistry(),
		success: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:request_success_total"}),
		gen:     prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:generation_tokens_total"}),
		prompt:  prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds",
			Buckets: []float64{0.05, 0.15, 0.25, 0.35, 0.5}}),
	}
	f.reg.MustRegister(f.success, f.gen, f.prompt, f.ttft)
	return f
}

func (f *fakeServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&req)
		n := len(strings.Fields(req.Prompt))
		fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[]}`, n)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(f.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /v1/completions", f.stream)
	mux.HandleFunc("POST /v1/chat/completions", f.stream)
	return mux
}

func (f *fakeServer) stream(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   string
		Messages []struct{ Content string }
		Stream   bool
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "bad request", 400)
		return
	}
	prompt := req.Prompt
	chat := len(req.Messages) > 0
	if chat {
		prompt = req.Messages[0].Content
	}
	sc, ok := f.scripts[prompt]
	if !ok || sc.status != 0 && sc.status != 200 {
		http.Error(w, `{"error":{"message":"scripted failure"}}`, max(sc.status, 500))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s); fl.Flush() }
	token := func(i int) string {
		if chat {
			return fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" t%d"}}]}`, i)
		}
		return fmt.Sprintf(`{"object":"text_completion","choices":[{"index":0,"text":" t%d"}]}`, i)
	}
	time.Sleep(sc.ttft)
	f.ttft.Observe(sc.ttft.Seconds())
	send(token(0))
	w.Write([]byte(": keep-alive comment, not an event\n\n"))
	for i, g := range sc.gaps {
		time.Sleep(g)
		send(token(i + 1))
	}
	time.Sleep(usageDelay)
	n := len(sc.gaps) + 1
	f.success.Inc()
	f.gen.Add(float64(n))
	f.prompt.Add(float64(sc.promptTokens))
	send(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, sc.promptTokens, n, sc.promptTokens+n))
	send("[DONE]")
}

// pipeNet serves handler over in-memory net.Pipe connections, so a test in
// a synctest bubble has a server whose every wait is on the fake clock.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error { p.once.Do(func() { close(p.closed) }); return nil }

func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startPipeServer serves h in the current (bubble's) goroutines and returns
// a client that reaches it, and a stop function that ends every goroutine.
func startPipeServer(h http.Handler) (*http.Client, func()) {
	ln := &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	tr := &http.Transport{DialContext: ln.dial, MaxIdleConnsPerHost: 1024}
	return &http.Client{Transport: tr}, func() {
		tr.CloseIdleConnections()
		srv.Close()
		<-done
	}
}

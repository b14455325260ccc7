package main

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// startInstance starts 'glassbox serve' with args on loopback and stops it
// (waiting for its shutdown) when the test ends or stop is called.
func startInstance(t *testing.T, args ...string) (*instance, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := startServe(ctx, append([]string{"--host", "127.0.0.1", "--port", "0", "--log-level", "warn", "--sim-time-scale", "0"}, args...), io.Discard, io.Discard)
	if err != nil {
		cancel()
		t.Fatalf("serve %v: %v", args, err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-inst.done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return inst, stop
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "glassbox test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func get(t *testing.T, c *http.Client, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeMetricsPortAuthAndTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	authFile := filepath.Join(t.TempDir(), "metrics-auth")
	if err := os.WriteFile(authFile, []byte("# scrapers\nscrape-token\nprom:pa55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inst, _ := startInstance(t, "--api-key", "api-k", "--metrics-port", "0", "--metrics-auth-file", authFile,
		"--ssl-certfile", certFile, "--ssl-keyfile", keyFile)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	api, met := "https://"+inst.addr, "https://"+inst.metricsAddr
	basic := "Basic " + "cHJvbTpwYTU1" // prom:pa55
	tests := []struct {
		url, auth string
		want      int
	}{
		{api + "/health", "", 200},
		{api + "/ready", "", 200},
		{api + "/metrics", "", 401},
		{api + "/metrics", "Bearer scrape-token", 401}, // the API port takes the API key
		{api + "/metrics", "Bearer api-k", 200},
		{api + "/version", "", 401},
		{api + "/debug/engine", "Bearer api-k", 200},
		{met + "/health", "", 200},
		{met + "/metrics", "", 401},
		{met + "/metrics", "Bearer api-k", 401},
		{met + "/metrics", "Bearer scrape-token", 200},
		{met + "/metrics", basic, 200},
		{met + "/v1/models", "Bearer scrape-token", 404}, // only metrics and health live there
	}
	for _, tt := range tests {
		code, body := get(t, c, tt.url, "Authorization", tt.auth)
		if code != tt.want {
			t.Errorf("GET %s with %q: %d, want %d", tt.url, tt.auth, code, tt.want)
		}
		if code == 200 && strings.HasSuffix(tt.url, "/metrics") && !strings.Contains(body, "vllm:num_requests_running") {
			t.Errorf("GET %s: no vLLM metrics in the body", tt.url)
		}
	}
	// A TLS listener answers plain HTTP with a 400.
	if resp, err := http.Get("http://" + inst.addr + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP got 200 from the TLS listener")
		}
	}
}

func TestServeFlagCombinations(t *testing.T) {
	for _, args := range [][]string{
		{"--metrics-auth-file", "x"},
		{"--ssl-certfile", "x"},
		{"--collect-detailed-traces", "all"},
		{"--otlp-traces-endpoint", "127.0.0.1:1", "--collect-detailed-traces", "everything"},
		{"--dcgm-port", "0", "--sim-dcgm-port", "0"},                               // one name of the flag
		{"--dcgm-port", "0", "--dcgm-interval", "1s", "--sim-dcgm-interval", "2s"}, // likewise
		{"--dcgm-interval", "2s"}, // nothing to read at that rate
		{"--sim-dcgm-interval", "2s"},
	} {
		if _, err := parseServeFlags(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestServeDCGMPort: --dcgm-port serves the simulated GPUs' series under
// the simulator (--sim-dcgm-port is its old name), says so in the
// banner, and is refused by name where no GPU's counters exist.
func TestServeDCGMPort(t *testing.T) {
	for _, flag := range []string{"--dcgm-port", "--sim-dcgm-port"} {
		ctx, cancel := context.WithCancel(context.Background())
		var banner strings.Builder
		inst, err := startServe(ctx, []string{"--host", "127.0.0.1", "--port", "0", "--sim-time-scale", "0", flag, "0", "--dcgm-interval", "500ms"}, &banner, io.Discard)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", flag, err)
		}
		resp, err := http.Get("http://" + inst.dcgmAddr + "/metrics")
		var body []byte
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cancel()
		if err := <-inst.done; err != nil {
			t.Error(err)
		}
		if err != nil || !strings.Contains(string(body), "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\"") {
			t.Errorf("%s: GET the exporter: %v\n%s", flag, err, body)
		}
		if !strings.Contains(banner.String(), "dcgm-exporter on http://"+inst.dcgmAddr+"/metrics") || !strings.Contains(banner.String(), "the simulated dcgm-exporter of 1× NVIDIA") {
			t.Errorf("%s: banner\n%s", flag, banner.String())
		}
	}
	stories := storiesPath(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dcgm-port", "0", "--dcgm-interval", "10ms"}, "--dcgm-interval"},
		{[]string{"--model", stories, "--device", "cpu", "--dcgm-port", "0"}, "--dcgm-port: the CPU executor has no GPU counters"},
		// This machine has no GPU: auto runs on the CPU, and says why.
		{[]string{"--model", stories, "--dcgm-port", "0"}, "--device auto"},
	} {
		_, err := startServe(context.Background(), append([]string{"--host", "127.0.0.1", "--port", "0"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

func TestServeDebugEngineAndTiming(t *testing.T) {
	inst, _ := startInstance(t, "--max-num-seqs", "7")
	base := "http://" + inst.addr
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(`{"prompt":"Hello","max_tokens":5,"ignore_eos":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Glassbox-Timing", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Timing []struct {
			TTFT float64 `json:"time_to_first_token"`
			E2E  float64 `json:"e2e_latency"`
		} `json:"timing"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || len(body.Timing) != 1 || body.Timing[0].E2E <= 0 || body.Timing[0].TTFT > body.Timing[0].E2E {
		t.Errorf("timing %+v (err %v): want one choice's breakdown", body.Timing, err)
	}
	code, out := get(t, http.DefaultClient, base+"/debug/engine")
	var snap struct {
		Config struct {
			MaxNumSeqs int `json:"max_num_seqs"`
		} `json:"scheduler_config"`
		Steps  int            `json:"steps"`
		Blocks map[string]any `json:"block_pool"`
	}
	if err := json.Unmarshal([]byte(out), &snap); code != 200 || err != nil {
		t.Fatalf("/debug/engine: %d %v %s", code, err, out)
	}
	if snap.Config.MaxNumSeqs != 7 || snap.Steps != 5 || snap.Blocks["total"] == nil {
		t.Errorf("/debug/engine %s: want max_num_seqs 7, 5 steps and the block pool", out)
	}
}

func TestServeProfiler(t *testing.T) {
	off, _ := startInstance(t)
	if resp, err := http.Post("http://"+off.addr+"/start_profile", "", nil); err != nil || resp.StatusCode != 404 {
		t.Errorf("/start_profile without --profiler-dir: %v %v, want 404", err, resp)
	}
	names := profileOnce(t)
	if names["step"] != 4 {
		t.Errorf("%d steps in the profile, want the request's 4", names["step"])
	}
	if names["attention"] != 0 {
		t.Errorf("the simulator's steps have %d attention slices: its step is one slice", names["attention"])
	}
}

// TestServeProfilerCPUPhases: on the CPU executor the profile's steps
// hold the forward pass's phases.
func TestServeProfilerCPUPhases(t *testing.T) {
	names := profileOnce(t, "--model", storiesPath(t), "--device", "cpu", "--threads", "2")
	steps := names["step"]
	if steps != 4 {
		t.Errorf("%d steps in the profile, want the request's 4", steps)
	}
	for _, name := range []string{"embed", "layer 0", "attention", "qkv_proj", "mlp", "lm_head", "sample"} {
		if names[name] < steps {
			t.Errorf("%d %q slices in %d steps", names[name], name, steps)
		}
	}
}

// profileOnce serves with a profiler, profiles one 4-token completion
// and counts the trace's slices by name.
func profileOnce(t *testing.T, args ...string) map[string]int {
	t.Helper()
	dir := t.TempDir()
	inst, _ := startInstance(t, append([]string{"--profiler-dir", dir}, args...)...)
	base := "http://" + inst.addr
	post := func(path, body string) string {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if b := post("/start_profile", ""); b != "" {
		t.Errorf("/start_profile body %q, want empty", b)
	}
	post("/v1/completions", `{"prompt":"Hello","max_tokens":4}`)
	if b := post("/stop_profile", ""); b != "" {
		t.Errorf("/stop_profile body %q, want empty", b)
	}
	traces, _ := filepath.Glob(filepath.Join(dir, "*.trace.json.gz"))
	cpus, _ := filepath.Glob(filepath.Join(dir, "*.cpu.pprof"))
	if len(traces) != 1 || len(cpus) != 1 {
		t.Fatalf("profile files %v %v, want a trace and a CPU profile", traces, cpus)
	}
	f, err := os.Open(traces[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		TraceEvents []struct{ Name, Ph string } `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&tf); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" {
			names[e.Name]++
		}
	}
	return names
}

// otlpCollector is an OTLP/HTTP receiver keeping every span.
type otlpCollector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func TestServeTracesOverOTLPHTTP(t *testing.T) {
	c := &otlpCollector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	inst, stop := startInstance(t, "--otlp-traces-endpoint", srv.URL, "--collect-detailed-traces", "all")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, "http://"+inst.addr+"/v1/completions", strings.NewReader(`{"prompt":"Hello","max_tokens":3,"ignore_eos":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	stop() // shutdown flushes the spans
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]int{}
	for _, s := range c.spans {
		names[s.GetName()]++
		if got := hexID(s.GetTraceId()); got != traceID {
			t.Errorf("span %s in trace %s, want the client's %s", s.GetName(), got, traceID)
		}
	}
	if names["llm_request"] != 1 || names["prefill"] != 1 || names["decode"] != 1 || names["queued"] != 1 {
		t.Errorf("spans %v: want one llm_request with queued, prefill and decode children", names)
	}
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

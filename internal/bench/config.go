// Package bench is glassbox's load generator: `glassbox bench`. It drives any
// OpenAI-compatible server over HTTP (glassbox, vLLM, llama.cpp's server…)
// with streamed completions or chats, times every chunk, and computes the
// metrics of `vllm bench serve` with the same definitions and JSON keys
// (docs/bench.md). While the load runs it scrapes the server's /metrics, when
// there is one, so the server's own view sits beside the client's.
//
// It owns load shapes and arrival schedules, datasets, the streaming client,
// metrics, sweeps, the server-side view and the outputs (summary table, JSON
// result, offline HTML report). It is a black box over HTTP: it must never
// import engine, sched, kvcache or an executor (internal/layering enforces
// this), nor read flags or the environment (cmd/glassbox does that).
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Config is one bench invocation. Zero values take the defaults noted, which
// are vLLM's where vLLM has the knob.
type Config struct {
	BaseURL    string // e.g. http://127.0.0.1:8000; required
	Endpoint   string // default /v1/completions, or /v1/chat/completions for openai-chat
	Backend    string // "openai" (completions; "vllm" is an alias) or "openai-chat"
	Model      string // default: the first model of GET /v1/models
	APIKey     string // sent as a bearer token when set
	MetricsURL string // default BaseURL+"/metrics"; "-" turns scraping off
	Label      string // result label; default the backend

	// Plan, when set, builds the load run instead of Dataset and the rate
	// fields (an inference-perf configuration's stages, data and sessions:
	// internal/inferenceperf makes it), with the server's tokenizer and
	// Seed. The LoRA adapters its requests go to must be served.
	Plan func(ctx context.Context, tk workload.Tokenizer, seed int64) (*workload.Plan, error)

	// Headers are sent with every request (inference-perf's api.headers);
	// ResponseFormat, when set, is every request's response_format (its
	// api.response_format; a Plan's own replaces it).
	Headers        map[string]string
	ResponseFormat map[string]any
	// SessionHeader, when set, is the request header that names a session
	// round's user, and SessionTokenHeader the response header whose token
	// the user's next round sends back (inference-perf's
	// api.session_id_header_key and session_token_header_key).
	SessionHeader, SessionTokenHeader string
	// ClientCert and ClientKey, when set, are the TLS client certificate
	// the requests present (inference-perf's server.cert_path, key_path).
	ClientCert, ClientKey string
	// LoRAModules, when set, sends each request to one of these adapters
	// at random (vLLM's --lora-modules); a Plan's LoRA split is its own.
	LoRAModules []string
	// MaxConnections caps the TCP connections (inference-perf's num_workers
	// × worker_max_tcp_connections); 0: MaxConcurrency's.
	MaxConnections int

	Dataset workload.DatasetConfig
	// Agent, with the dataset agent, is the sessions' shape: NumPrompts
	// sessions arriving at RequestRate (with Burstiness), at most
	// MaxConcurrency of them running at once, started until Duration.
	Agent       *workload.AgentConfig
	NumPrompts  int           // default 1000 (the dataset size, and the request count unless Duration is set)
	Duration    time.Duration // when set, send until this much time has passed instead of NumPrompts requests
	NumWarmups  int           // requests sent and awaited before the measured run, not counted
	IgnoreEOS   bool          // send ignore_eos (forced on for the random dataset, as vLLM)
	Temperature *float64      // sent only when set

	RequestRate    float64        // requests per second; 0 or +Inf sends everything at once
	Burstiness     float64        // gamma shape of inter-arrival gaps; default 1 (Poisson); +Inf is constant spacing
	MaxConcurrency int            // client-side cap on requests in flight; 0 is none
	Ramp           *workload.Ramp // ramps the rate from Start to End over the run instead of RequestRate
	Seed           int64          // seeds datasets and arrivals; default 0

	PercentileMetrics []string  // default ttft,tpot,itl
	Percentiles       []float64 // default 99
	Goodput           SLOs      // request-level SLOs; empty disables goodput

	Sweep       bool    // synchronous pass, max-throughput pass, then rates between
	SweepSize   int     // passes in all, including the first two; default 10
	SLOAttained float64 // share of requests meeting every SLO for a rate to count as meeting them; default 0.9

	ScrapeInterval time.Duration // default 1s
	RequestTimeout time.Duration // per request; default 10 minutes

	// Chaos, when set, makes a share of the requests misbehave and
	// reconciles the clients' view with the server's metrics.
	Chaos *Chaos
	// Soak reads the server's memory, goroutines and latencies every
	// ScrapeInterval and fits the memory's trend (a long Duration).
	Soak bool

	HTTPClient *http.Client // default: a pooled client sized to MaxConcurrency
	Progress   io.Writer    // where the progress line goes; nil for none (cmd passes stderr on a terminal)
	Now        func() time.Time
}

// metricNames are the metrics --percentile-metrics may select.
var metricNames = []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.BaseURL == "" {
		return c, errors.New("check config: a base URL is required")
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return c.ClientDefaults()
}

// ClientDefaults fills and checks what shapes and reports a load, which
// also applies to a run that no HTTP client sent (Offline, simulate, plan):
// the rate is +Inf when unset, the burstiness 1, and so on.
func (c Config) ClientDefaults() (Config, error) {
	switch c.Backend {
	case "", "openai", "vllm":
		c.Backend = "openai"
		if c.Endpoint == "" {
			c.Endpoint = "/v1/completions"
		}
	case "openai-chat":
		if c.Endpoint == "" {
			c.Endpoint = "/v1/chat/completions"
		}
	default:
		return c, fmt.Errorf("check backend %q: want openai, vllm or openai-chat", c.Backend)
	}
	if c.MetricsURL == "" {
		c.MetricsURL = c.BaseURL + "/metrics"
	}
	if c.Label == "" {
		c.Label = c.Backend
	}
	if c.NumPrompts == 0 {
		c.NumPrompts = 1000
	}
	if c.NumPrompts < 0 || c.NumWarmups < 0 || c.MaxConcurrency < 0 {
		return c, errors.New("check config: counts must not be negative")
	}
	if c.RequestRate == 0 {
		c.RequestRate = math.Inf(1)
	}
	if c.Burstiness == 0 {
		c.Burstiness = 1
	}
	if c.RequestRate < 0 || c.Burstiness < 0 || math.IsNaN(c.RequestRate) || math.IsNaN(c.Burstiness) {
		return c, errors.New("check config: request rate and burstiness must be positive")
	}
	if err := c.Ramp.Check(c.RequestRate); err != nil {
		return c, err
	}
	if len(c.LoRAModules) > 0 && c.Plan != nil {
		return c, errors.New("check config: --lora-modules with --config: the configuration's load.lora_traffic_split sends to the adapters")
	}
	if c.Dataset.Name == "agent" && (c.Sweep || c.Ramp != nil || c.Plan != nil || c.Agent == nil) {
		return c, errors.New("check config: --dataset-name agent starts --num-prompts sessions at --request-rate: no --sweep, ramp or --config with it")
	}
	if c.Dataset.Name == "trace" && (c.Sweep || c.Ramp != nil || c.Duration > 0 || c.Plan != nil) {
		return c, errors.New("check config: --dataset-name trace sends the trace's requests at its times: no --sweep, ramp, --duration or --config with it")
	}
	if c.Plan != nil && (c.Sweep || c.Ramp != nil || c.Duration > 0) {
		return c, errors.New("check config: an inference-perf --config sets its own stages: no --sweep, ramp or --duration with it")
	}
	if c.Duration > 0 && math.IsInf(c.RequestRate, 1) && c.Ramp == nil && c.MaxConcurrency == 0 && !c.Sweep && c.Agent == nil {
		return c, errors.New("check config: --duration needs a finite --request-rate or a --max-concurrency, or it would send without end")
	}
	if len(c.PercentileMetrics) == 0 {
		c.PercentileMetrics = []string{"ttft", "tpot", "itl"}
	}
	for _, m := range c.PercentileMetrics {
		if !slices.Contains(metricNames, m) {
			return c, fmt.Errorf("check percentile metric %q: want one of %s", m, strings.Join(metricNames, ", "))
		}
	}
	if len(c.Percentiles) == 0 {
		c.Percentiles = []float64{99}
	}
	for _, p := range c.Percentiles {
		if !(p >= 0 && p <= 100) {
			return c, fmt.Errorf("check percentile %v: want 0 to 100", p)
		}
	}
	if c.SweepSize == 0 {
		c.SweepSize = 10
	}
	if c.Sweep && c.SweepSize < 2 {
		return c, errors.New("check config: a sweep needs at least 2 passes")
	}
	if c.SLOAttained == 0 {
		c.SLOAttained = 0.9
	}
	if c.ScrapeInterval == 0 {
		c.ScrapeInterval = time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HTTPClient == nil {
		conns := c.MaxConcurrency
		if c.MaxConnections > 0 {
			conns = c.MaxConnections
		}
		tr := &http.Transport{
			Proxy:               nil, // loopback benchmarks must not detour through a proxy
			MaxConnsPerHost:     conns,
			MaxIdleConns:        0,
			MaxIdleConnsPerHost: 1 << 16, // keep every connection alive between requests, as aiohttp does
			IdleConnTimeout:     60 * time.Second,
			ForceAttemptHTTP2:   false,
		}
		if c.ClientCert != "" {
			cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
			if err != nil {
				return c, fmt.Errorf("check config: client certificate: %w", err)
			}
			tr.TLSClientConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		}
		c.HTTPClient = &http.Client{Transport: tr}
	}
	return c, c.Dataset.Check()
}

// AgentPlan is the agent sessions' plan: the flags' shape with the run's
// sessions (NumPrompts), rate, burstiness and concurrency cap.
func (c *Config) AgentPlan(ctx context.Context, tk workload.Tokenizer, rng *rand.Rand) (*workload.Plan, error) {
	a := *c.Agent
	a.Sessions, a.Rate, a.Burstiness, a.MaxConcurrency, a.Until = c.NumPrompts, c.RequestRate, c.Burstiness, c.MaxConcurrency, c.Duration
	return workload.NewAgentPlan(ctx, a, tk, rng)
}

// SLOs are request-level service level objectives in milliseconds, as
// `--goodput ttft:200 tpot:50 e2el:2000`. A nil field is not checked.
type SLOs struct {
	TTFT, TPOT, E2EL *float64
}

// Empty reports whether no SLO is set.
func (s SLOs) Empty() bool { return s.TTFT == nil && s.TPOT == nil && s.E2EL == nil }

// ParseGoodput reads vLLM's --goodput pairs, "KEY:MS" with KEY one of ttft,
// tpot, e2el, separated by spaces or commas.
func ParseGoodput(s string) (SLOs, error) {
	var out SLOs
	for _, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
		key, val, ok := strings.Cut(pair, ":")
		if !ok {
			return SLOs{}, fmt.Errorf("parse goodput %q: want KEY:MILLISECONDS", pair)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return SLOs{}, fmt.Errorf("parse goodput %q: the value must be a non-negative number of milliseconds", pair)
		}
		var dst **float64
		switch key {
		case "ttft":
			dst = &out.TTFT
		case "tpot":
			dst = &out.TPOT
		case "e2el":
			dst = &out.E2EL
		default:
			return SLOs{}, fmt.Errorf("parse goodput %q: the metric must be ttft, tpot or e2el", pair)
		}
		*dst = &v
	}
	return out, nil
}

// ParsePercentiles reads vLLM's --metric-percentiles, e.g. "50,90,99.9".
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("parse percentile %q: want a number from 0 to 100", f)
		}
		out = append(out, p)
	}
	return out, nil
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
)

// serveTest starts 'glassbox serve' with args on a free loopback port and
// stops it when the test ends.
func serveTest(t *testing.T, args ...string) (base string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	inst, err := startServe(ctx, append([]string{"--host", "127.0.0.1", "--port", "0", "--log-level", "warn"}, args...), &out, io.Discard)
	if err != nil {
		cancel()
		t.Fatalf("serve %v: %v", args, err)
	}
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() { cancel(); serr = <-inst.done })
		return serr
	}
	t.Cleanup(func() { stop() })
	base = "http://" + inst.addr
	servers.Store(base, inst)
	t.Cleanup(func() { servers.Delete(base) })
	return base, stop
}

// servers maps a running test server's base URL to its instance.
var servers sync.Map

// scrape reads /metrics into sample values keyed by name and sorted labels,
// e.g. `vllm:request_success_total{finished_reason="stop"}`.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "model_name" || l.GetName() == "engine" {
					continue
				}
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func successTotal(m map[string]float64) float64 {
	var n float64
	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		n += m[fmt.Sprintf("vllm:request_success_total{finished_reason=%q}", r)]
	}
	return n
}

// waitIdle waits until the engine of the server at base holds no request
// (every aborted or finished one observed), then scrapes /metrics.
func waitIdle(t *testing.T, base string) map[string]float64 {
	t.Helper()
	inst, ok := servers.Load(base)
	if !ok {
		t.Fatalf("no test server at %s", base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.(*instance).engine.AwaitIdle(ctx); err != nil {
		t.Fatalf("wait for the engine to go idle: %v", err)
	}
	return scrape(t, base)
}

func TestServeDefaultStartsOnTheSimulator(t *testing.T) {
	base, _ := serveTest(t)
	for _, path := range []string{"/health", "/version", "/v1/models"} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	m := scrape(t, base)
	for _, name := range []string{"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:generation_tokens_total",
		`vllm:request_success_total{finished_reason="abort"}`, "vllm:time_to_first_token_seconds_count", "vllm:num_preemptions_total"} {
		if v, ok := m[name]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0 at start-up", name, v, ok)
		}
	}
}

// TestOpenAIClientConcurrentStreams is the spine's acceptance test: 100
// concurrent streaming chats through the official client, then /metrics
// must agree with what the clients received.
func TestOpenAIClientConcurrentStreams(t *testing.T) {
	base, _ := serveTest(t, "--sim-time-scale", "0.2")
	client := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var mu sync.Mutex
	completion := 0
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model:         "llama-3.1-8b",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Tell me story number %d.", i))},
				MaxTokens:     openai.Int(int64(8 + i%24)),
				Seed:          openai.Int(int64(i)),
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			var usage int64
			var text strings.Builder
			finish := ""
			for stream.Next() {
				c := stream.Current()
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
					if ch.FinishReason != "" {
						finish = ch.FinishReason
					}
				}
				if c.Usage.CompletionTokens > 0 {
					usage = c.Usage.CompletionTokens
				}
			}
			if err := stream.Err(); err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			if finish == "" || usage == 0 || usage > int64(8+i%24) || text.Len() == 0 {
				t.Errorf("stream %d: finish %q, %d completion tokens, %d bytes of text", i, finish, usage, text.Len())
			}
			mu.Lock()
			completion += int(usage)
			mu.Unlock()
		})
	}
	wg.Wait()
	m := waitIdle(t, base)
	if got := successTotal(m); got != 100 {
		t.Errorf("vllm:request_success_total sums to %v, want 100", got)
	}
	if got := m["vllm:generation_tokens_total"]; got != float64(completion) {
		t.Errorf("vllm:generation_tokens_total = %v, clients received %d completion tokens", got, completion)
	}
	if m["vllm:kv_cache_usage_perc"] != 0 || m["vllm:num_requests_running"] != 0 {
		t.Errorf("after the load: kv usage %v, running %v; want 0, 0", m["vllm:kv_cache_usage_perc"], m["vllm:num_requests_running"])
	}
	if m["vllm:time_to_first_token_seconds_count"] != 100 || m["vllm:e2e_request_latency_seconds_count"] != 100 {
		t.Errorf("TTFT count %v, e2e count %v; want 100 each", m["vllm:time_to_first_token_seconds_count"], m["vllm:e2e_request_latency_seconds_count"])
	}
}

// post sends a JSON body and decodes a JSON answer.
func post(t *testing.T, url string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("decode %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

type completionResp struct {
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func words(n int, seed int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "word%d ", (i*7+seed)%1000)
	}
	return b.String()
}

func TestKVOverfillPreemptsAndCompletes(t *testing.T) {
	// Llama-3.1-8B keeps 128 KiB of KV per token: 256 blocks of 16 tokens
	// hold 4096 tokens, for 16 requests that each grow past 400.
	base, _ := serveTest(t, "--sim-time-scale", "0", "--max-model-len", "1024",
		"--kv-cache-memory-bytes", fmt.Sprint(256*16*131072), "--no-enable-prefix-caching")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			var r completionResp
			code := post(t, base+"/v1/completions", map[string]any{
				"model": "llama-3.1-8b", "prompt": words(150, i), "max_tokens": 300, "ignore_eos": true,
			}, &r)
			if code != 200 || len(r.Choices) != 1 || r.Usage.CompletionTokens != 300 || r.Choices[0].FinishReason != "length" {
				t.Errorf("request %d: status %d, %+v", i, code, r)
			}
		})
	}
	wg.Wait()
	m := waitIdle(t, base)
	if m["vllm:num_preemptions_total"] == 0 {
		t.Error("overfilling the KV cache caused no preemption")
	}
	if m[`vllm:request_success_total{finished_reason="length"}`] != 16 || m["vllm:generation_tokens_total"] != 16*300 {
		t.Errorf("success %v, generation tokens %v; want 16 and 4800", m[`vllm:request_success_total{finished_reason="length"}`], m["vllm:generation_tokens_total"])
	}
}

// TestAbortHalfTheStreams disconnects half of the clients mid-stream: their
// requests must be aborted at once, their blocks freed, and no goroutine left.
func TestAbortHalfTheStreams(t *testing.T) {
	base, stop := serveTest(t, "--sim-time-scale", "0.05")
	scrape(t, base)
	http.DefaultClient.CloseIdleConnections()
	before := goleak.IgnoreCurrent()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := fmt.Sprintf(`{"model":"llama-3.1-8b","prompt":%q,"max_tokens":400,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, words(50, i))
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			chunks, complete := 0, false
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					chunks++
				}
				complete = complete || strings.Contains(sc.Text(), `"completion_tokens":400`)
				if i%2 == 0 && chunks == 5 {
					cancel() // walk away mid-stream
					return
				}
			}
			if i%2 == 1 && !complete {
				t.Errorf("stream %d ended after %d chunks without its 400 tokens", i, chunks)
			}
		})
	}
	wg.Wait()
	m := waitIdle(t, base)
	if got := m[`vllm:request_success_total{finished_reason="abort"}`]; got != 10 {
		t.Errorf("aborted requests %v, want 10", got)
	}
	if m["vllm:kv_cache_usage_perc"] != 0 {
		t.Errorf("KV usage %v after the aborts, want 0 (leaked blocks)", m["vllm:kv_cache_usage_perc"])
	}
	http.DefaultClient.CloseIdleConnections()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left after the streams ended: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestGracefulShutdownDrains stops the server while a request streams: the
// request still completes, then serve returns.
func TestGracefulShutdownDrains(t *testing.T) {
	base, stop := serveTest(t, "--sim-time-scale", "0.2")
	body := `{"model":"llama-3.1-8b","prompt":"Once upon a time","max_tokens":50,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no first chunk")
	}
	stopped := make(chan error)
	go func() { stopped <- stop() }() // SIGTERM, in effect, mid-stream
	complete, done := false, false
	for sc.Scan() {
		complete = complete || strings.Contains(sc.Text(), `"completion_tokens":50`)
		done = done || sc.Text() == "data: [DONE]"
	}
	if !complete || !done {
		t.Errorf("stream cut by shutdown: all 50 tokens %v, [DONE] %v", complete, done)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestServeDashboardTakesThresholds: serve's own /dashboard answers with
// the thresholds its command line sets, as glassbox doctor and dashboard
// do.
func TestServeDashboardTakesThresholds(t *testing.T) {
	base, stop := serveTest(t, "--sim-time-scale", "0", "--threshold", "kv_watermark=0.6")
	defer stop()
	resp, err := http.Get(base + "/dashboard/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		KVWatermark float64 `json:"kv_watermark"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.KVWatermark != 0.6 {
		t.Errorf("serve --threshold kv_watermark=0.6: the page's watermark is %v", st.KVWatermark)
	}
	if _, err := startServe(context.Background(), []string{"--threshold", "no_such=1"}, io.Discard, io.Discard); err == nil {
		t.Error("an unknown threshold was accepted")
	}
}

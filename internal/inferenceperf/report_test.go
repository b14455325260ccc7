package inferenceperf

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/bench"
)

// recordingServer answers completions (streamed or not) with three tokens
// and records every request's body and headers.
type recordingServer struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	models  []string
}

func (s *recordingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		var data []string
		for _, m := range s.models {
			data = append(data, fmt.Sprintf(`{"id":%q,"object":"model"}`, m))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
		return
	case "/v1/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var b map[string]any
	json.NewDecoder(r.Body).Decode(&b)
	s.mu.Lock()
	s.bodies, s.headers = append(s.bodies, b), append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if strings.Contains(fmt.Sprint(b["prompt"]), "3 4") {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"the queue is full","type":"ServiceUnavailable","param":null,"code":503}}`)
		return
	}
	if b["stream"] == false {
		fmt.Fprint(w, `{"choices":[{"index":0,"text":" a b c"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, t := range []string{" a", " b", " c"} {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q}]}\n\n", t)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
}

// TestInferencePerfRequestsAndReports: an inference-perf configuration's
// request options reach the server (response_format, headers, the LoRA
// adapters as model names, streaming false), and the run is written in
// inference-perf's report layout, key for key.
func TestInferencePerfRequestsAndReports(t *testing.T) {
	srv := &recordingServer{models: []string{"base", "movie", "consumer"}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	w, err := Parse(strings.NewReader(`
load:
  type: constant
  interval: 0
  stages: [{rate: 40, duration: 0.5}, {rate: 40, duration: 0.25}]
  lora_traffic_split: [{name: movie, split: 0.5}, {name: consumer, split: 0.5}]
api:
  type: completion
  streaming: false
  headers: {x-tenant: t1, x-slo-ttft-ms: "5000"}
  response_format: {type: json_schema, name: person, json_schema: {type: object, properties: {name: {type: string}}}}
data: {type: mock}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true, per_adapter: true, percentiles: [50, 99]}
  goodput: {constraints: {request_latency: 10}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.Config{BaseURL: ts.URL, MetricsURL: "-", Model: "base"}
	w.Bench(&cfg, PlanOptions{})
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	models := map[any]int{}
	for i, b := range srv.bodies {
		rf, _ := b["response_format"].(map[string]any)
		if b["stream"] != false || rf["type"] != "json_schema" || srv.headers[i].Get("X-Tenant") != "t1" {
			t.Fatalf("request %v with headers %v: want stream false, the response_format and x-tenant", b, srv.headers[i])
		}
		models[b["model"]]++
	}
	if len(srv.bodies) != 30 || models["movie"] < 8 || models["consumer"] < 8 || models["base"] != 0 {
		t.Errorf("%d requests to models %v; want 30 split between the two adapters", len(srv.bodies), models)
	}
	dir := t.TempDir()
	files, err := WriteReports(res, w, dir, "run1-", []byte("load: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[filepath.Base(f)] = true
	}
	for _, want := range []string{"run1-summary_lifecycle_metrics.json", "run1-stage_0_lifecycle_metrics.json", "run1-stage_1_lifecycle_metrics.json",
		"run1-per_request_lifecycle_metrics.json", "run1-adapter_movie_lifecycle_metrics.json", "run1-adapter_consumer_lifecycle_metrics.json", "run1-config.yaml"} {
		if !names[want] {
			t.Errorf("no %s among %v", want, names)
		}
	}
	var stage map[string]any
	readJSON(t, filepath.Join(dir, "run1-stage_0_lifecycle_metrics.json"), &stage)
	load := stage["load_summary"].(map[string]any)
	succ := stage["successes"].(map[string]any)
	lat := succ["latency"].(map[string]any)
	if load["count"] != 20.0 || load["requested_rate"] != 40.0 || load["achieved_rate"] == nil || succ["count"] != 19.0 ||
		lat["time_to_first_token"] != nil || lat["request_latency"].(map[string]any)["p99"] == nil {
		t.Errorf("stage 0 report: load %v, %v successes, latency %v; want 20 requests at 40/s, 19 answered, no TTFT (unary), latency percentiles", load, succ["count"], lat)
	}
	pt := succ["prompt_tokens"].(map[string]any)
	if pt["total"] != 95.0 || pt["cached"] != 38.0 || succ["output_tokens"].(map[string]any)["total"] != 57.0 {
		t.Errorf("prompt tokens %v, output %v; want the server's usage (5 prompt, 2 cached, 3 output each)", pt, succ["output_tokens"])
	}
	g := succ["goodput_metrics"].(map[string]any)
	if g["good_requests"] != 19.0 || g["request_latency_attainment_percentage"] != 100.0 {
		t.Errorf("goodput %v", g)
	}
	fails := stage["failures"].(map[string]any)
	labels := fails["by_label"].(map[string]any)
	if fails["count"] != 1.0 || labels["503 - Service Unavailable"] == nil ||
		!strings.Contains(fmt.Sprint(labels["503 - Service Unavailable"]), "the queue is full") {
		t.Errorf("failures %v; want one 503 labelled as inference-perf labels it, with the server's message", fails)
	}
	var per []map[string]any
	readJSON(t, filepath.Join(dir, "run1-per_request_lifecycle_metrics.json"), &per)
	info := per[0]["info"].(map[string]any)
	text := info["request_metrics"].(map[string]any)["text"].(map[string]any)
	if len(per) != 30 || info["lora_adapter"] == nil || info["input_tokens"] == nil || text["input_tokens"] == nil || per[0]["start_time"].(float64) < 1e9 {
		t.Errorf("per-request record %v", per[0])
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestErrorLabels(t *testing.T) {
	for _, tc := range []struct{ typ, msg, want string }{
		{"HTTP Error 503", "x", "503 - Service Unavailable"},
		{"HTTP Error 400", "This model's maximum context length is 4096 tokens", "400 - Context Window"},
		{"HTTP Error 404", "The model `x` does not exist", "404 - other"},
		{"TimeoutError", "request timed out", "Timeout"},
		{"ClientError", "dial tcp: connection refused", "Connection Error"},
		{"CancelledError", "cancelled", "cancellederror"},
	} {
		if got := errorLabel(tc.typ, tc.msg); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.typ, tc.msg, got, tc.want)
		}
	}
}

// TestUserSessionHeaders: api.session_id_header_key carries each request's
// session as inference-perf names it — a conversation that starts over in
// its slot is a session of its own — and per_request_lifecycle_metrics.json
// gives it with the request's round in extra_info.
func TestUserSessionHeaders(t *testing.T) {
	srv := &recordingServer{models: []string{"base"}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	w, err := Parse(strings.NewReader(`
load: {type: concurrent, stages: [{num_requests: 6, concurrency_level: 1}]}
api: {type: completion, streaming: true, session_id_header_key: x-session-id}
data:
  type: conversation_replay
  conversation_replay: {num_conversations: 2, shared_system_prompt_len: 10, turns_per_conversation: {type: fixed, mean: 2},
    input_tokens_per_turn: {type: fixed, mean: 4}, output_tokens_per_turn: {type: fixed, mean: 3}}
report: {request_lifecycle: {per_request: true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.Config{BaseURL: ts.URL, MetricsURL: "-", Model: "base"}
	w.Bench(&cfg, PlanOptions{})
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, h := range srv.headers {
		sent = append(sent, h.Get("X-Session-Id"))
	}
	if want := []string{"conv_0", "conv_1", "conv_0", "conv_1", "slot_0_convo_1", "slot_1_convo_1"}; !slices.Equal(sent, want) {
		t.Errorf("session headers %v, want %v", sent, want)
	}
	dir := t.TempDir()
	if _, err := WriteReports(res, w, dir, "", nil); err != nil {
		t.Fatal(err)
	}
	var per []map[string]any
	readJSON(t, filepath.Join(dir, "per_request_lifecycle_metrics.json"), &per)
	for i, r := range per {
		x := r["info"].(map[string]any)["extra_info"].(map[string]any)
		if want := []any{1.0, 1.0, 2.0, 2.0, 1.0, 1.0}[i]; x["user_session"] != sent[i] || x["chat_round"] != want {
			t.Errorf("request %d: extra_info %v, want user_session %s, chat_round %v", i, x, sent[i], want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// ipExample is a configuration shaped like one inference-perf ships for
// vLLM (its top-level config.yml, examples/vllm/*, the multi-LoRA and
// structured-output examples, the KubeCon demo), written here with the
// same keys and data types and stages short enough for a test.
type ipExample struct {
	name, yaml string
	stages     int // stages the run reports
	lora       bool
	refused    string // what simulate and plan say instead of running it, when they refuse it
	// benchRefused is what glassbox's server answers every request with,
	// when it refuses what the configuration asks.
	benchRefused string
	// slow sends bench to a server in real time with one sequence at a
	// time, which a sweep's probe overwhelms, so that it sees a drain.
	slow  bool
	check func(t *testing.T, result map[string]any, reports string)
}

const ipServer = "server: {type: vllm, model_name: llama-3.1-8b, base_url: http://0.0.0.0:8000, ignore_eos: true}\n"

const ipPrometheus = `metrics:
  type: prometheus
  prometheus: {url: http://localhost:9090, scrape_interval: 15}
`

func ipExamples(dir string) []ipExample {
	trace := filepath.Join(dir, "trace.csv")
	return []ipExample{
		{name: "config.yml", stages: 1, yaml: `load:
  type: constant
  stages: [{rate: 10, duration: 1}]
api: {type: completion, streaming: true}
` + ipServer + `tokenizer: {pretrained_model_name_or_path: HuggingFaceTB/SmolLM2-135M-Instruct}
data: {type: shareGPT}
` + ipPrometheus + `report:
  request_lifecycle: {summary: true, per_stage: true, per_request: false}
  prometheus: {summary: true, per_stage: false}
`, check: func(t *testing.T, _ map[string]any, reports string) {
			// ShareGPT came from the (fake) hub, and the Prometheus summary from /metrics.
			p := readReport(t, reports, "summary_prometheus_metrics.json")
			if s := p["successes"].(map[string]any); s["count"].(float64) < 1 || s["time_to_first_token"].(map[string]any)["p99"].(float64) <= 0 {
				t.Errorf("prometheus summary %v", s)
			}
		}},
		{name: "examples/vllm/config.yml", stages: 1, yaml: `data: {type: shareGPT}
load:
  type: constant
  stages: [{rate: 10, duration: 1}]
api: {type: chat}
` + ipServer},
		{name: "examples/vllm/config-circuitbreaker.yml", stages: 1, yaml: `circuit_breakers:
  - name: request_timeout_breaker
    metrics:
      matches: ["error.error_type == 'TimeoutError'"]
    triggers:
      - {type: consecutive, threshold: 10}
      - {type: rate_over_window, window_sec: 2.5, threshold: 0.8, min_samples: 2}
data: {type: shareGPT}
load:
  type: constant
  stages: [{rate: 10, duration: 1}]
  circuit_breakers: [request_timeout_breaker]
  request_timeout: 60.0
api: {type: chat}
` + ipServer},
		{name: "examples/vllm/config-random.yml", stages: 1, yaml: `load:
  type: constant
  stages: [{rate: 10, duration: 1}]
api: {type: completion}
` + ipServer + `data:
  type: random
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
` + ipPrometheus + `report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true}
`, check: func(t *testing.T, _ map[string]any, reports string) {
			s := readReport(t, reports, "summary_lifecycle_metrics.json")["successes"].(map[string]any)
			if s["latency"].(map[string]any)["time_to_first_token"] != nil {
				t.Error("streaming is off (inference-perf's default): a unary run has no TTFT")
			}
			if _, err := os.Stat(filepath.Join(reports, "per_request_lifecycle_metrics.json")); err != nil {
				t.Error(err)
			}
		}},
		{name: "examples/vllm/config-shared-prefix-distributions.yml", stages: 2, yaml: `load:
  type: constant
  interval: 0.05
  stages: [{rate: 8, duration: 1}, {rate: 12, duration: 0.5}]
api: {type: completion}
` + ipServer + `data:
  type: shared_prefix
  shared_prefix:
    seed: 42
    num_unique_system_prompts: 4
    num_users_per_system_prompt: 3
    system_prompt_len: 100
    question_len: {type: skew_normal, mean: 60, std_dev: 20, skew: 2.5, min: 10, max: 200}
    output_len: {type: lognormal, mean: 20, std_dev: 8, min: 1, max: 60}
`},
		{name: "examples/vllm/config-shared-prefix-multi-turn.yml", stages: 1, yaml: `load:
  type: constant
  num_workers: 2
  worker_max_concurrency: 10
  stages: [{rate: 10, duration: 1}]
api: {type: completion}
` + ipServer + `data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 2
    num_users_per_system_prompt: 5
    system_prompt_len: 100
    question_len: 50
    output_len: 20
    enable_multi_turn_chat: true
`},
		{name: "examples/vllm/config-shared-prefix.yml", stages: 2, yaml: `load:
  type: constant
  interval: 0.05
  stages: [{rate: 8, duration: 1}, {rate: 12, duration: 0.5}]
api: {type: completion}
` + ipServer + `data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 4
    num_users_per_system_prompt: 3
    system_prompt_len: 100
    question_len: 50
    output_len: 20
`},
		{name: "examples/vllm/config-sweep.yml", stages: 3, slow: true, yaml: `load:
  type: constant
  interval: 0.05
  sweep: {type: linear, timeout: 20, num_stages: 3, stage_duration: 1, saturation_percentile: 95, num_requests: 100}
api: {type: completion}
server: {type: vllm, base_url: http://0.0.0.0:8000}
data: {type: shareGPT}
` + ipPrometheus + `report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true}
`, check: func(t *testing.T, _ map[string]any, reports string) {
			st := readReport(t, reports, "stage_2_lifecycle_metrics.json")["load_summary"].(map[string]any)
			if r := st["requested_rate"].(float64); r <= 1 {
				t.Errorf("the sweep's last stage at %v req/s; want the saturation the probe found, above 1", r)
			}
		}},
		{name: "examples/vllm/config-synthetic.yml", stages: 2, yaml: `load:
  type: constant
  interval: 0.05
  stages: [{rate: 8, duration: 1}, {rate: 12, duration: 0.5}]
api: {type: completion}
` + ipServer + `data:
  type: synthetic
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
`},
		{name: "examples/vllm/config-trace-replay.yml", stages: 2, yaml: `load:
  type: trace_replay
  trace: {file: ` + trace + `, format: AzurePublicDataset}
  interval: 0.05
  stages: [{rate: 1, duration: 30}, {rate: 1, duration: 30}]
api: {type: completion, streaming: true}
` + ipServer + `data:
  type: random
  trace: {file: ` + trace + `, format: AzurePublicDataset}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: false}
  prometheus: {summary: true, per_stage: false}
`, check: func(t *testing.T, j map[string]any, _ string) {
			if j["completed"] != 24.0 {
				t.Errorf("%v requests, want the trace's 12 in each of the two stages", j["completed"])
			}
		}},
		{name: "examples/multilora/multilora_config.yml", stages: 1, lora: true, yaml: `load:
  type: constant
  stages: [{rate: 10, duration: 1}]
  lora_traffic_split:
    - {name: movie, split: 0.50}
    - {name: consumer, split: 0.50}
api: {type: completion, streaming: true}
` + ipServer + `data: {type: shareGPT}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: false, per_adapter: true, per_adapter_stage: true}
  prometheus: {summary: true, per_stage: false}
`, check: func(t *testing.T, _ map[string]any, reports string) {
			for _, a := range []string{"movie", "consumer"} {
				r := readReport(t, reports, "adapter_"+a+"_lifecycle_metrics.json")
				if n := r["successes"].(map[string]any)["count"].(float64); n < 2 {
					t.Errorf("adapter %s: %v requests", a, n)
				}
				readReport(t, reports, "adapter_"+a+"_stage_0_lifecycle_metrics.json")
			}
		}},
		{name: "examples/structured-output/config.yml", stages: 2, benchRefused: "ignore_eos", yaml: `load:
  type: constant
  interval: 0.05
  stages: [{rate: 8, duration: 0.5}, {rate: 8, duration: 0.5}]
api:
  type: chat
  streaming: false
  response_format:
    type: json_schema
    name: my_schema
    json_schema:
      type: object
      properties: {name: {type: string}, age: {type: integer}}
      required: [name, age]
server: {type: vllm, model_name: llama-3.1-8b, base_url: http://0.0.0.0:8000}
data:
  type: synthetic
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
`},
		{name: "examples/structured-output/config.yml with ignore_eos false", stages: 2, yaml: `load:
  type: constant
  interval: 0.05
  stages: [{rate: 8, duration: 0.5}, {rate: 8, duration: 0.5}]
api:
  type: chat
  streaming: false
  response_format:
    type: json_schema
    name: my_schema
    json_schema:
      type: object
      properties: {name: {type: string}, age: {type: integer}}
      required: [name, age]
server: {type: vllm, model_name: llama-3.1-8b, base_url: http://0.0.0.0:8000, ignore_eos: false}
data:
  type: synthetic
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
`, check: func(t *testing.T, j map[string]any, _ string) {
			if j["backend"] != "openai-chat" || strings.HasPrefix(fmt.Sprint(j["label"]), "glassbox-simulate") {
				return // simulate keeps no text: its model's outputs are held to the schema as serve's
			}
			// The server constrained every answer to the schema. An answer
			// cut off by its max_tokens (finish_reason "length", as in vLLM)
			// is a prefix of a document the schema accepts; one the schema
			// may end on is a whole document with both fields.
			texts, _ := j["generated_texts"].([]any)
			if len(texts) == 0 {
				t.Error("no generated_texts in the detailed result")
			}
			g, err := grammar.JSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`))
			if err != nil {
				t.Fatal(err)
			}
			c := grammar.Compile(g, grammar.NewVocab(256, func(id int) []byte { return []byte{byte(id)} }, nil))
			whole := 0
			for _, x := range texts {
				mt := c.NewMatcher()
				if !mt.AcceptBytes([]byte(x.(string))) {
					t.Errorf("answer %q is not a prefix of a document the schema accepts", x)
					continue
				}
				if !mt.CanEnd() {
					continue
				}
				whole++
				var v map[string]any
				if err := json.Unmarshal([]byte(x.(string)), &v); err != nil || v["name"] == nil || v["age"] == nil {
					t.Errorf("answer %q does not follow the schema: %v", x, err)
				}
			}
			t.Logf("%d of %d answers whole, the rest cut off by max_tokens", whole, len(texts))
		}},
		{name: "demos/kubecon-na-2025/config.yaml", stages: 3, slow: true, yaml: `api: {type: completion, streaming: true}
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 4
    num_users_per_system_prompt: 4
    system_prompt_len: 128
    question_len: 64
    output_len: 8
load:
  type: constant
  interval: 0.05
  sweep: {type: linear, timeout: 20, num_stages: 3, stage_duration: 1, num_requests: 60}
  num_workers: 44
  worker_max_concurrency: 10
  worker_max_tcp_connections: 2500
metrics:
  prometheus: {filters: ['namespace="test-ns"'], google_managed: true, scrape_interval: 15}
  type: prometheus
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true}
  prometheus: {summary: true, per_stage: true}
storage:
  google_cloud_storage: {bucket_name: my-bucket}
server:
  base_url: http://vllm-service.test-ns.svc.cluster.local:8000
  ignore_eos: true
  model_name: llama-3.1-8b
  type: vllm
tokenizer:
  pretrained_model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct
  token: <your-hf-token>
`, check: func(t *testing.T, _ map[string]any, reports string) {
			readReport(t, reports, "stage_1_prometheus_metrics.json")
		}},
	}
}

func readReport(t *testing.T, dir, name string) map[string]any {
	t.Helper()
	return resultJSON(t, filepath.Join(dir, name))
}

// ipFixtures writes the ShareGPT file the fake hub serves and the Azure
// trace, and points the hub client at the fake hub.
func ipFixtures(t *testing.T, dir string) {
	var b bytes.Buffer
	b.WriteString("[")
	words := strings.Fields("the cat sat on a warm mat and looked at the garden where the birds sang all morning long")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		q := strings.Join(words[:6+i%10], " ")
		a := strings.Join(words[:4+i%12], " ")
		fmt.Fprintf(&b, `{"id":"c%d","conversations":[{"from":"human","value":"question %d: %s"},{"from":"gpt","value":"%s"}]}`, i, i, q, a)
	}
	b.WriteString("]")
	sharegpt := b.Bytes()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/ShareGPT_V3_unfiltered_cleaned_split.json" {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "s.json", time.Time{}, bytes.NewReader(sharegpt))
	}))
	t.Cleanup(hub.Close)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("GLASSBOX_CACHE", filepath.Join(dir, "cache"))
	var tr strings.Builder
	tr.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	for i := range 12 {
		fmt.Fprintf(&tr, "2023-11-16 18:15:40.%07d,%d,%d\n", 800000*i+1234, 60+13*i, 5+i)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(tr.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInferencePerfExamples: every configuration shaped like one of
// inference-perf's vLLM examples runs unchanged through bench against
// serve and through simulate, each writing inference-perf's reports, the
// right number of stages and no failure; the one glassbox's engine cannot
// honour yet (structured output) is refused by simulate by name.
func TestInferencePerfExamples(t *testing.T) {
	reftest.Long(t, "every inference-perf example through bench and simulate")
	dir := t.TempDir()
	ipFixtures(t, dir)
	lora := []string{"--enable-lora", "--lora-modules", "movie=/adapters/movie", "consumer=/adapters/consumer", "--max-loras", "1"}
	base, _ := serveTest(t, append([]string{"--sim-time-scale", "0.02"}, lora...)...)
	slow, _ := serveTest(t, "--sim-time-scale", "1", "--max-num-seqs", "1")
	for i, ex := range ipExamples(dir) {
		t.Run(ex.name, func(t *testing.T) {
			cfg := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			if err := os.WriteFile(cfg, []byte(ex.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"bench", "simulate"} {
				out := filepath.Join(dir, fmt.Sprintf("%s-%d.json", cmd, i))
				reports := filepath.Join(dir, fmt.Sprintf("%s-%d-reports", cmd, i))
				args := []string{cmd, "--config", cfg, "--result-filename", out, "--inference-perf-report", reports, "--seed", "1"}
				if cmd == "bench" {
					target := base
					if ex.slow {
						target = slow
					}
					args = append(args, "--base-url", target, "--disable-tqdm", "--metrics-interval", "100ms")
				} else if ex.lora {
					args = append(args, lora...)
				}
				if cmd == "bench" {
					args = append(args, "--save-detailed")
				}
				var stdout, stderr strings.Builder
				err := run(context.Background(), args, &stdout, &stderr)
				if cmd == "bench" && ex.benchRefused != "" {
					// glassbox's server refuses every request by name (vLLM
					// takes ignore_eos with a grammar; glassbox does not).
					if err == nil || !strings.Contains(err.Error(), "every request failed") || !strings.Contains(err.Error(), ex.benchRefused) {
						t.Errorf("bench: %v; want every request refused, naming %s", err, ex.benchRefused)
					}
					continue
				}
				if cmd == "simulate" && ex.refused != "" {
					if err == nil || !strings.Contains(err.Error(), ex.refused) {
						t.Errorf("simulate: %v; want it refused, naming %s", err, ex.refused)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v\n%s\n%s", cmd, err, stdout.String(), stderr.String())
				}
				j := resultJSON(t, out)
				stages, _ := j["stages"].([]any)
				if j["failed"] != 0.0 || j["completed"].(float64) < 4 || (ex.stages > 1 && len(stages) != ex.stages) {
					t.Errorf("%s: completed %v, failed %v, %d stages; want no failure and %d stages", cmd, j["completed"], j["failed"], len(stages), ex.stages)
				}
				sum := readReport(t, reports, "summary_lifecycle_metrics.json")
				if ls := sum["load_summary"].(map[string]any); ls["count"].(float64) != j["completed"].(float64) {
					t.Errorf("%s: the inference-perf summary counts %v requests, the result %v", cmd, ls["count"], j["completed"])
				}
				for s := range ex.stages {
					readReport(t, reports, fmt.Sprintf("stage_%d_lifecycle_metrics.json", s))
				}
				if ex.check != nil {
					ex.check(t, j, reports)
				}
			}
		})
	}
	// vLLM bench's own flag: each request to one of the adapters at random.
	j := benchJSON(t, "--base-url", base, "--lora-modules", "movie", "consumer", "--num-prompts", "40", "--request-rate", "80",
		"--random-input-len", "64", "--random-output-len", "40", "--metrics-interval", "20ms")
	if j["completed"] != 40.0 {
		t.Errorf("bench --lora-modules: %v completed", j["completed"])
	}
	seen := map[string]bool{}
	for k := range scrape(t, base) {
		if strings.HasPrefix(k, "vllm:lora_requests_info{") {
			for _, a := range []string{"movie", "consumer"} {
				seen[a] = seen[a] || strings.Contains(k, a)
			}
		}
	}
	if !seen["movie"] || !seen["consumer"] {
		t.Errorf("vllm:lora_requests_info never showed both adapters: %v", seen)
	}
}

// TestInferencePerfPlan: plan takes the configurations' data and traces
// (its own search sets the rates), and refuses structured output by name.
func TestInferencePerfPlan(t *testing.T) {
	dir := t.TempDir()
	ipFixtures(t, dir)
	for _, name := range []string{"examples/vllm/config-sweep.yml", "examples/vllm/config-trace-replay.yml", "examples/vllm/config-synthetic.yml",
		"examples/structured-output/config.yml"} {
		for i, ex := range ipExamples(dir) {
			if ex.name != name {
				continue
			}
			cfg := filepath.Join(dir, fmt.Sprintf("p%d.yaml", i))
			os.WriteFile(cfg, []byte(ex.yaml), 0o644)
			var out strings.Builder
			err := run(context.Background(), []string{"plan", "--config", cfg, "--slo", "ttft:p99<=2s", "--sim-hardware", "h100", "--trial-duration", "5s",
				"--max-rate", "50"}, &out, io.Discard)
			switch {
			case ex.refused != "":
				if err == nil || !strings.Contains(err.Error(), ex.refused) {
					t.Errorf("%s: %v; want it refused, naming %s", name, err, ex.refused)
				}
			case err != nil:
				t.Errorf("%s: %v\n%s", name, err, out.String())
			case !strings.Contains(out.String(), "Best: h100"):
				t.Errorf("%s: plan found no rate:\n%s", name, out.String())
			}
		}
	}
}

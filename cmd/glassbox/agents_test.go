package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentFlagsRefuseOutOfRange: the simulated model's tool-calling
// shares and the Responses store's size are refused by name when out of
// range.
func TestAgentFlagsRefuseOutOfRange(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--sim-tool-call-rate", "1.5"}},
		{[]string{"--sim-parallel-tool-calls", "-0.1"}},
		{[]string{"--sim-tool-call-rate", "NaN"}},
		{[]string{"--responses-store-size", "-1"}},
	} {
		_, err := startServe(context.Background(), append([]string{"--host", "127.0.0.1", "--port", "0"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.args[0]) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.args[0])
		}
	}
}

// TestSimulatorCallsToolsUnderAuto: an agent loop can run against the
// simulator: under tool_choice auto it calls one of the tools as often as
// --sim-tool-call-rate says (always, never), with arguments the tool's
// schema allows.
func TestSimulatorCallsToolsUnderAuto(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":400,` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"],"additionalProperties":false}}}]}`
	for _, rate := range []string{"1", "0"} {
		base, _ := serveTest(t, "--sim-time-scale", "0", "--served-model-name", "m", "--sim-tool-call-rate", rate, "--sim-parallel-tool-calls", "0")
		for seed := range 5 {
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(strings.TrimSuffix(body, "}")+`,"seed":`+string(rune('0'+seed))+`}`))
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   *string `json:"content"`
						ToolCalls []struct {
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
				}
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err != nil || len(out.Choices) != 1 {
				t.Fatalf("rate %s: %v %+v", rate, err, out)
			}
			c := out.Choices[0]
			if rate == "0" {
				if c.FinishReason == "tool_calls" || len(c.Message.ToolCalls) > 0 || c.Message.Content == nil || *c.Message.Content == "" {
					t.Errorf("rate 0: %+v", c)
				}
				continue
			}
			if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" {
				t.Fatalf("rate 1, seed %d: %+v", seed, c)
			}
			var args struct{ City *string }
			if err := json.Unmarshal([]byte(c.Message.ToolCalls[0].Function.Arguments), &args); err != nil || args.City == nil || len([]rune(*args.City)) > 12 {
				t.Errorf("rate 1: arguments %s", c.Message.ToolCalls[0].Function.Arguments)
			}
		}
	}
}

// TestAgentSessionsInBenchAndSimulate: agent sessions from flags, sent by
// bench to a server and run by simulate in virtual time: every session
// runs its turns, each prompt the conversation so far, so the prompts grow
// turn by turn and the prefix cache serves most of each; the report shows
// each turn's requests, prompt length, cache hits and TTFT; each turn after
// the first waits out the tool.
func TestAgentSessionsInBenchAndSimulate(t *testing.T) {
	args := []string{"--dataset-name", "agent", "--num-prompts", "4", "--agent-turns", "3", "--agent-system-prompt-len", "200",
		"--agent-input-len", "20", "--agent-output-len", "8", "--agent-tool-latency", "300ms", "--request-rate", "inf", "--metric-percentiles", "50,99", "--seed", "5"}
	check := func(what string, j map[string]any) {
		t.Helper()
		if j["completed"] != 12.0 || j["failed"] != 0.0 {
			t.Fatalf("%s: completed %v, failed %v; want 12, 0", what, j["completed"], j["failed"])
		}
		if d := j["duration"].(float64); d < 0.6 {
			t.Errorf("%s: the run took %.3fs: each session waits out two tool calls of 300ms", what, d)
		}
		turns, _ := j["turns"].([]any)
		if len(turns) != 3 {
			t.Fatalf("%s: turns %v", what, j["turns"])
		}
		prev := 0.0
		for i, x := range turns {
			turn := x.(map[string]any)
			in := turn["total_input_tokens"].(float64) / 4
			hit, _ := turn["prefix_cache_hit_rate"].(float64)
			if turn["turn"] != float64(i+1) || turn["requests"] != 4.0 || in <= prev || turn["mean_ttft_ms"] == nil || turn["p99_ttft_ms"] == nil {
				t.Errorf("%s: turn %d: %v", what, i+1, turn)
			}
			if i > 0 && hit < 0.5 {
				t.Errorf("%s: turn %d: the prefix cache served %.0f%% of the prompts; the conversation so far is most of each", what, i+1, 100*hit)
			}
			prev = in
		}
	}
	base, _ := serveTest(t, "--sim-time-scale", "0", "--served-model-name", "m")
	check("bench", benchJSON(t, append([]string{"--base-url", base}, args...)...))
	path := filepath.Join(t.TempDir(), "sim.json")
	var out strings.Builder
	if err := run(context.Background(), append([]string{"simulate", "--result-filename", path}, args...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Agent sessions by turn") {
		t.Errorf("simulate's summary has no turns:\n%s", out.String())
	}
	check("simulate", resultJSON(t, path))
}

// structuredConfig is inference-perf's structured-output example
// (examples/structured-output/config.yml) with its lengths as
// distribution mappings.
const structuredConfig = `
load:
  type: constant
  stages:
  - {rate: 4, duration: 5}
api:
  type: chat
  streaming: true
  response_format:
    type: json_schema
    name: my_schema
    json_schema:
      type: object
      properties:
        name: {type: string, maxLength: 12}
        age: {type: integer}
      required: [name, age]
server: {type: vllm}
data:
  type: synthetic
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
`

// TestSimulateHonoursResponseFormat: simulate runs an inference-perf
// configuration with api.response_format, each output held to the schema
// (and ending where the grammar does, as glassbox serve answers it); a
// schema glassbox does not build is refused naming the field.
func TestSimulateHonoursResponseFormat(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "so.yaml")
	if err := os.WriteFile(cfg, []byte(structuredConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sim.json")
	if err := run(context.Background(), []string{"simulate", "--config", cfg, "--result-filename", path, "--inference-perf-report", "-"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	j := resultJSON(t, path)
	if j["completed"] != 20.0 || j["failed"] != 0.0 {
		t.Fatalf("completed %v, failed %v", j["completed"], j["failed"])
	}
	// Free outputs would run to max_tokens (ignore_eos): the schema's
	// object ends sooner.
	if out := j["total_output_tokens"].(float64); out <= 0 || out >= 20*50 {
		t.Errorf("%v output tokens: the outputs did not end where the schema does", out)
	}
	bad := strings.Replace(structuredConfig, "age: {type: integer}", "age: {type: integer, multipleOf: 3}", 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"simulate", "--config", cfg, "--inference-perf-report", "-"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "api.response_format") || !strings.Contains(err.Error(), "multipleOf") {
		t.Errorf("an unsupported schema: %v", err)
	}
}

// conversationReplayConfig is inference-perf's conversation_replay quick
// start (docs/conversation_replay.md), scaled down.
const conversationReplayConfig = `
load:
  type: concurrent
  stages:
    - {num_requests: 40, concurrency_level: 4}
api: {type: completion, streaming: true}
server: {type: vllm, ignore_eos: true}
data:
  type: conversation_replay
  conversation_replay:
    seed: 42
    num_conversations: 4
    shared_system_prompt_len: 800
    dynamic_system_prompt_len: {type: normal, min: 50, max: 400, mean: 140, std_dev: 150}
    turns_per_conversation: {type: fixed, mean: 4}
    input_tokens_per_turn: {type: lognormal, min: 16, max: 240, mean: 60, std_dev: 30}
    output_tokens_per_turn: {type: lognormal, min: 8, max: 60, mean: 20, std_dev: 10}
    tool_call_latency_sec: {type: fixed, mean: 1}
`

// TestConversationReplay: inference-perf's conversation_replay runs as its
// closed loop: request k is the next turn of conversation k mod 4, each
// conversation of 4 turns starting over after its last (40 requests: 10
// turns of each slot, so turns 1 and 2 come 3 times, 3 and 4 twice), its
// prompts growing from turn to turn and served mostly from the cache.
func TestConversationReplay(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cr.yaml")
	if err := os.WriteFile(cfg, []byte(conversationReplayConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sim.json")
	if err := run(context.Background(), []string{"simulate", "--config", cfg, "--result-filename", path, "--inference-perf-report", "-"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	j := resultJSON(t, path)
	turns, _ := j["turns"].([]any)
	if j["completed"] != 40.0 || len(turns) != 4 {
		t.Fatalf("completed %v, turns %v", j["completed"], j["turns"])
	}
	prev := 0.0
	for i, want := range []float64{12, 12, 8, 8} {
		turn := turns[i].(map[string]any)
		in := turn["total_input_tokens"].(float64) / want
		if turn["requests"] != want || in <= prev {
			t.Errorf("turn %d: %v", i+1, turn)
		}
		if hit, _ := turn["prefix_cache_hit_rate"].(float64); i > 0 && hit < 0.5 {
			t.Errorf("turn %d: prefix-cache hit rate %v", i+1, turn["prefix_cache_hit_rate"])
		}
		prev = in
	}
}

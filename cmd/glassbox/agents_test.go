package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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

package inferenceperf

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownKeysNameKeyAndLine: a key inference-perf's schema does not
// have is an error naming its path and its line, at any depth (inside a
// distribution given inline as a length, too).
func TestUnknownKeysNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"load:\n  stages:\n  - {rate: 1, duration: 1}\n  bogus: 1\n", "line 4: load.bogus: unknown key"},
		{"load: {stages: [{rate: 1, duration: 1, rat: 2}]}\n", "load.stages[0].rat: unknown key"},
		{"load: {stages: [{rate: 1, duration: 1}]}\ndata:\n  type: shared_prefix\n  shared_prefix:\n    question_len: {mean: 3, sd: 1}\n", "line 5: data.shared_prefix.question_len.sd: unknown key"},
		{"load: {stages: [{rate: 1, duration: 1}]}\nreport: {request_lifecycle: {summary: true, per_stage: true, totals: 1}}\n", "report.request_lifecycle.totals"},
		{"load: {stages: [{rate: 1, duration: 1}]}\nstorage: {local_storage: {path: x, bucket: y}}\n", "storage.local_storage.bucket"},
		{"top: 1\n", "top: unknown key (inference-perf's the top level has"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("load:\n  type: constant\n  stages: []\n"), 0o644)
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path+": check inference-perf config: line 3: load.stages") {
		t.Errorf("file error %v, want the file, the line and the key", err)
	}
}

// TestUnderstoodButRefused: keys glassbox reads but cannot honour are
// refused by name; those that only change where results go are notes.
func TestUnderstoodButRefused(t *testing.T) {
	const stages = "load: {stages: [{rate: 1, duration: 1}]}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"load: {type: trace_session_replay, stages: [{concurrent_sessions: 2}]}", "trace_session_replay"},
		{stages + "api: {type: anthropic_messages}", "anthropic_messages"},
		{stages + "data: {type: random, use_chat_template: true, input_distribution: {}, output_distribution: {}}", "use_chat_template"},
		{stages + "data: {type: cnn_dailymail}", "cnn_dailymail"},
		{stages + "data: {type: mock, multimodal: {image: {}}}", "data.multimodal"},
		{stages + "data: {type: shared_prefix, shared_prefix: {question_len: {mean: 5}, question_distribution: {mean: 5}}}", "both given"},
		{stages + "data: {type: random, input_distribution: {type: skew_normal}, output_distribution: {}}", "skew_normal"},
		{stages + "data: {type: random, input_distribution: {mean: 5000}, output_distribution: {}}", "outside"},
		{stages + "data: {type: random, input_distribution: 'Min(100, Normal(50, 10))', output_distribution: {}}", "expression distribution"},
		{"load: {type: concurrent, stages: [{rate: 1, duration: 1}]}", "num_requests and concurrency_level"},
		{"load: {stages: [{rate: 1, duration: 1, num_requests: 3}]}", "belong to load type concurrent"},
		{"load: {type: trace_replay, stages: [{rate: 1, duration: 1}]}", "load.trace"},
		{"load: {sweep: {type: cubic}}", "linear or geometric"},
		{"load: {stages: [{rate: 1, duration: 1}], lora_traffic_split: [{name: a, split: 0.5}, {name: b, split: 0.4}]}", "add up to 0.9"},
		{"load: {stages: [{rate: 1, duration: 1}], circuit_breakers: [nope]}", "no circuit breaker is named"},
		{stages + "circuit_breakers: [{name: b, metrics: {matches: ['stage_id + `1`']}, triggers: [{type: consecutive, threshold: 2}]}]", "arithmetic"},
		{stages + "metrics: {type: prometheus, prometheus: {scrape_interval: 15}}", "exactly one of url or google_managed"},
		{stages + "report: {goodput: {constraints: {latency: 1}}}", "report.goodput.constraints.latency"},
		{stages + "report: {request_lifecycle: {use_server_output_tokens: false}}", "report.request_lifecycle.use_server_output_tokens: false is not built"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.yaml, err, tc.want)
		}
	}
	c := parse(t, stages+"metrics: {type: prometheus, prometheus: {url: http://p:9090}}\nstorage: {google_cloud_storage: {bucket_name: b}}\n")
	if len(c.Notes) != 2 || !strings.Contains(c.Notes[0]+c.Notes[1], "Prometheus") || !strings.Contains(c.Notes[0]+c.Notes[1], "local storage") {
		t.Errorf("notes %q, want one about Prometheus and one about cloud storage", c.Notes)
	}
	// Keys read but not honoured are never silent: each has its note.
	for key, y := range map[string]string{
		"tokenizer":                 "tokenizer: {pretrained_model_name_or_path: meta-llama/Llama-3.1-8B, trust_remote_code: true}",
		"report.session_lifecycle":  "report: {session_lifecycle: {summary: true}}",
		"metrics.prometheus":        "metrics: {type: prometheus, prometheus: {url: http://p:9090, filters: [a]}}",
		"use_server_output_tokens?": "report: {request_lifecycle: {use_server_output_tokens: true}}",
	} {
		c := parse(t, stages+y)
		if key == "use_server_output_tokens?" { // honoured: glassbox counts with the server's usage
			if len(c.Notes) != 0 {
				t.Errorf("%s: notes %q", y, c.Notes)
			}
			continue
		}
		if len(c.Notes) != 1 || !strings.HasPrefix(c.Notes[0], key+":") {
			t.Errorf("%s: notes %q, want one on %s", y, c.Notes, key)
		}
	}
}

// TestDefaultsAsInferencePerf: what a configuration leaves out takes
// inference-perf's defaults.
func TestDefaultsAsInferencePerf(t *testing.T) {
	c := parse(t, "load: {sweep: {type: linear}}\ndata: {type: shared_prefix, shared_prefix: {question_len: {type: lognormal, mean: 150, std_dev: 60}}}")
	sw := c.Load.Sweep
	if *sw.NumRequests != 2000 || *sw.Timeout != 60 || *sw.NumStages != 5 || *sw.StageDuration != 180 || *sw.SaturationPercentile != 95 {
		t.Errorf("sweep defaults %+v", sw)
	}
	d := c.Data.SharedPrefix.QuestionLen.Dist
	if d == nil || *d.Min != 10 || *d.Max != 1024 || *d.StdDev != 60 {
		t.Errorf("question_len %+v", c.Data.SharedPrefix.QuestionLen)
	}
	if n, ok := c.Data.SharedPrefix.OutputLen.Fixed(); !ok || n != 50 {
		t.Errorf("output_len default %d", n)
	}
	if c.API.Streaming || c.Server.Type != "vllm" || len(c.Report.RequestLifecycle.Percentiles) != 11 {
		t.Errorf("api %+v, server %+v, percentiles %v", c.API, c.Server, c.Report.RequestLifecycle.Percentiles)
	}
	rf := parse(t, "load: {stages: [{rate: 1, duration: 1}]}\napi: {response_format: {json_schema: {type: object}}}").API.ResponseFormatBody()
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "structured_output" || js["schema"] == nil {
		t.Errorf("response_format body %v, want inference-perf's to_api_format", rf)
	}
}

// TestResponseFormatSchemaKeepsOrder: the schema goes out as the file
// writes it, properties in the file's order (the order the server
// generates them in), anchors expanded; YAML with no JSON form, a key
// given twice, a merge key or a billion laughs is refused by line.
func TestResponseFormatSchemaKeepsOrder(t *testing.T) {
	rf := parse(t, `load: {stages: [{rate: 1, duration: 1}]}
api:
  response_format:
    json_schema:
      type: object
      properties:
        zeta: &s {type: string, maxLength: 8}
        name: *s
        age: {type: integer, minimum: 0, enum: [1, 2.5, null, true]}
      required: [zeta, name, age]
`).API.ResponseFormatBody()
	got, err := json.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"json_schema":{"name":"structured_output","schema":{"type":"object","properties":{"zeta":{"type":"string","maxLength":8},"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"enum":[1,2.5,null,true]}},"required":["zeta","name","age"]}},"type":"json_schema"}`
	if string(got) != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'j'; i++ {
		laughs += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	for bad, want := range map[string]string{
		"{type: object, x: .inf}":      ".inf has no JSON form",
		"{[1, 2]: x}":                  "key must be a string",
		"{type: object, type: string}": `key "type" is already defined`,
		"\n      base: &b {type: string}\n      properties: {name: {<<: *b, maxLength: 3}}": "merge keys",
		"\n" + indent(laughs): "too large",
	} {
		_, err := Parse(strings.NewReader("load: {stages: [{rate: 1, duration: 1}]}\napi:\n  response_format:\n    json_schema: " + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("json_schema %.40q: %v; want %q", bad, err, want)
		}
	}
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n      ")
}

// TestBreakerExpressions: the circuit breakers are written in JMESPath,
// as the specification (Python's jmespath, inference-perf's) has it; what
// only JMESPath Community adds, and what does not parse, is refused.
func TestBreakerExpressions(t *testing.T) {
	rec := map[string]any{"stage_id": 1.0, "error": map[string]any{"error_type": "TimeoutError", "error_msg": "x"},
		"info": map[string]any{"input_tokens": 12.0, "output_token_times": []any{1.0, 1.5, 4.0}}}
	for expr, want := range map[string]bool{
		"error.error_type == 'TimeoutError'":                   true,
		"error.error_type == `\"HTTP Error 500\"`":             false,
		"error && info.input_tokens > `10`":                    true,
		"!error || stage_id == `0`":                            false,
		"(info.input_tokens >= `12`) && error.error_msg != ''": true,
		"missing.field":                                         false,
		"info.input_tokens < 'a'":                               false,
		"length(info.output_token_times) > `2`":                 true,
		"info.output_token_times[-1] > `3`":                     true,
		"info.output_token_times[?@ > `5`]":                     false,
		"starts_with(error.error_type, 'Time')":                 true,
		"max(info.output_token_times) == `4`":                   true,
		"contains(keys(error), 'error_msg') && stage_id == `1`": true,
	} {
		e, err := compileJMES(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := truthy(e.eval(rec)); got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
	for _, bad := range []string{"a ==", "'open", "a.b |", "stage_id + `1`", "let $x = stage_id in $x", "$.stage_id", "lower(error.error_type)", "nope(a)"} {
		if _, err := compileJMES(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

func FuzzCompileJMES(f *testing.F) {
	f.Add("error.error_type == 'TimeoutError'")
	f.Add("!(a && `1` < b.c) || \"q\"")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := compileJMES(s)
		if err == nil {
			e.eval(map[string]any{"a": map[string]any{"b": 1.0}})
		}
	})
}

// campaignExp16 is the BLIS campaign's inference-perf profile for exp 16
// as its values.yaml writes it (reference/calibration/README.md §A).
const campaignExp16 = `
load:
  type: constant
  stages:
  - {rate: 8.0, duration: 600}
  - {rate: 20.0, duration: 600}
api: {type: completion, streaming: true}
server: {type: vllm, model_name: meta-llama/Llama-3.1-8B-Instruct, base_url: http://0.0.0.0:8000, ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: meta-llama/Llama-3.1-8B-Instruct}
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 9
    num_users_per_system_prompt: 5
    system_prompt_len: 100
    question_len: 447
    output_len: 248
    enable_multi_turn_chat: true
report: {request_lifecycle: {summary: true, per_stage: true, per_request: true}}
storage: {local_storage: {path: /tmp/out}}
`

func parse(t *testing.T, y string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseInferencePerfCampaign(t *testing.T) {
	c := parse(t, campaignExp16)
	sp := c.Data.SharedPrefix
	if *sp.NumGroups != 9 || *sp.NumPromptsPerGroup != 5 || sp.QuestionLen.Value != 447 || !sp.EnableMultiTurnChat {
		t.Errorf("shared_prefix = %d groups × %d, question %d, multi-turn %v; want 9 × 5, 447, true",
			*sp.NumGroups, *sp.NumPromptsPerGroup, sp.QuestionLen.Value, sp.EnableMultiTurnChat)
	}
	if c.Load.Type != "constant" || len(c.Load.Stages) != 2 || c.API.Type != "completion" {
		t.Errorf("load %s with %d stages, api %s", c.Load.Type, len(c.Load.Stages), c.API.Type)
	}
}

func TestParseInferencePerfRejects(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown key":        {"load: {stages: [{rate: 1, duration: 1}], bogus: 1}", "bogus"},
		"alias conflict":     {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2, num_unique_system_prompts: 3}}", "twice"},
		"no stages":          {"load: {type: constant}", "stages is empty"},
		"zero rate":          {"load: {stages: [{rate: 0, duration: 10}]}", "positive"},
		"trace load":         {"load: {type: trace, stages: [{rate: 1, duration: 1}]}", "constant, poisson"},
		"synthetic, no lens": {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: synthetic}", "input_distribution"},
		"random, no lens":    {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random}", "input_distribution"},
		"chat multi-turn":    {"load: {stages: [{rate: 1, duration: 1}]}\napi: {type: chat}\ndata: {type: shared_prefix, shared_prefix: {enable_multi_turn_chat: true}}", "completion"},
		"bad distribution":   {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {min: 9, max: 3}, output_distribution: {}}", "min"},
		"infinite skew":      {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {type: skew_normal, skew: .inf}, output_distribution: {}}", "skew"},
		"negative count":     {"load: {stages: [{rate: 1, duration: 1}]}\ndata: {type: random, input_distribution: {total_count: -5}, output_distribution: {}}", "total_count"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, tc.want)
		}
	}
}

// FuzzParseInferencePerf: any input is a configuration that checks out or
// an error, never a panic, and a checked one has stages that can run.
func FuzzParseInferencePerf(f *testing.F) {
	f.Add(campaignExp16)
	f.Add("load: {type: poisson, stages: [{rate: 2, duration: 3}]}\ndata: {type: random, input_distribution: {mean: 5, std_dev: 1}, output_distribution: {type: fixed, mean: 3}}")
	f.Add("load: {stages: []}")
	f.Fuzz(func(t *testing.T, y string) {
		c, err := Parse(strings.NewReader(y))
		if err != nil {
			return
		}
		for _, s := range c.Load.Stages {
			if !(s.Rate > 0 && s.Duration > 0) {
				t.Fatalf("accepted stage %+v", s)
			}
		}
		if sp := c.Data.SharedPrefix; sp != nil && (*sp.NumGroups < 1 || *sp.NumPromptsPerGroup < 1) {
			t.Fatalf("accepted shared_prefix %+v", sp)
		}
	})
}

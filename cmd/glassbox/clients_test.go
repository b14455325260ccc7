package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestRealClients runs the clients people use, installed from npm into
// testdata/clients, against glassbox serve: the openai SDK's
// zodResponseFormat with chat.completions.parse (streamed too), its
// zodFunction tools with required and named choices, a streamed call, the
// round trip with the tool's result and a call cut by max_tokens, its
// Responses API (responses.create, responses.stream, function calls with
// previous_response_id, zodTextFormat), its embeddings (base64, decoded
// by the SDK), its Responses store (inputItems.list, delete, background
// responses and cancel) and the API's edges (reasoning and verbosity that
// ask for nothing, malformed tool schemas), the OpenAI Agents SDK (Agents
// without a model, structured output, its tool loop), the Vercel AI SDK's
// generateObject, tool calls and embed over chat completions and through
// its default provider (the Responses API) with an agent loop, and
// LangChain's ChatOpenAI over both APIs.
// Each runs against the simulator and against a GGUF model with random
// weights, GPT-2's real vocabulary and an embedding pooling: the SDKs
// parse and validate every object with zod, and the checks here read what
// they parsed. On the simulator the structured-output corpus's zod shapes
// go through the AI SDK too, and its JSON where a schema leaves a choice
// must look like a model's.
func TestRealClients(t *testing.T) {
	dir := reftest.NodePackages(t, "testdata/clients")
	vocab := reftest.Path(t, "testdata", "tokenizer", "ggml-vocab-gpt-2.gguf")
	model := filepath.Join(t.TempDir(), "random-gpt2.gguf")
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen3", "--shape", "tiny", "--vocab", vocab,
		"--pooling", "last", "-o", model}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	// An Agents SDK Agent without a model asks for the SDK's default
	// model: the servers answer to that name too.
	names := "m," + agentsDefaultModel(t, dir)
	servers := []struct {
		name string
		args []string
		long string // max_output_tokens that keep a background response running until cancelled
	}{
		{"sim", []string{"--sim-time-scale", "0", "--served-model-name", names}, "20000"},
		{"gguf", []string{"--model", model, "--served-model-name", names, "--max-model-len", "2048"}, "1800"},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			base, _ := serveTest(t, srv.args...)
			node := func(script string, out any, env ...string) {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), "node", script)
				cmd.Dir = dir
				cmd.Env = append(cmd.Environ(), "BASE_URL="+base+"/v1", "MODEL=m", "EMBEDDINGS=1", "AI_SDK_LOG_WARNINGS=false")
				cmd.Env = append(cmd.Env, env...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				b, err := cmd.Output()
				if err != nil {
					t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
				}
				if err := json.Unmarshal(b, out); err != nil {
					t.Fatalf("node %s printed %q: %v", script, b, err)
				}
			}
			checkStructured(t, node)
			checkTools(t, node)
			checkEmbeddings(t, node)
			checkAISDK(t, node)
			checkResponses(t, node)
			checkAISDKResponses(t, node)
			checkLangChain(t, node)
			checkStore(t, node, srv.long)
			checkAgents(t, node, srv.name == "sim") // the GGUF of random weights does not end its prose
			if srv.name == "sim" {
				checkSchemaShapes(t, node)
				checkSimJSON(t, node)
			}
		})
	}
}

type city struct {
	Name       string   `json:"name"`
	Population *int     `json:"population"`
	Country    string   `json:"country"`
	Districts  []string `json:"districts"`
	Mayor      *string  `json:"mayor"`
}

func (c *city) check(t *testing.T) {
	t.Helper()
	if utf8.RuneCountInString(c.Name) > 40 || c.Population == nil || *c.Population < 0 || !slices.Contains([]string{"FR", "DE", "JP"}, c.Country) ||
		len(c.Districts) > 3 || (c.Mayor != nil && utf8.RuneCountInString(*c.Mayor) > 30) {
		t.Errorf("parsed city %+v breaks its schema", *c)
	}
}

func checkStructured(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Parsed, Streamed       *city
		Finish, StreamedFinish string
	}
	node("openai-structured.mjs", &r)
	if r.Parsed == nil || r.Streamed == nil || r.Finish != "stop" || r.StreamedFinish != "stop" {
		t.Fatalf("structured: %+v", r)
	}
	r.Parsed.check(t)
	r.Streamed.check(t)
}

type toolSummary struct {
	Finish string
	Calls  []struct {
		ID, Name, Arguments string
		Parsed              map[string]any
	}
}

func checkTools(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Required, Named, Streamed, Cut toolSummary
		FollowUp                       *string
		CutContent                     *string
	}
	node("openai-tools.mjs", &r)
	check := func(what string, s toolSummary, finish string, one bool) {
		if s.Finish != finish || len(s.Calls) == 0 || (one && len(s.Calls) != 1) {
			t.Fatalf("%s: %+v", what, s)
		}
		for _, c := range s.Calls {
			switch {
			case !strings.HasPrefix(c.ID, "call_"):
				t.Errorf("%s: call id %q", what, c.ID)
			case c.Name == "get_weather":
				city, _ := c.Parsed["city"].(string)
				if utf8.RuneCountInString(city) > 20 || (c.Parsed["unit"] != "c" && c.Parsed["unit"] != "f") {
					t.Errorf("%s: arguments %s break the schema", what, c.Arguments)
				}
			case c.Name == "get_time":
				if c.Parsed["zone"] != "UTC" && c.Parsed["zone"] != "CET" {
					t.Errorf("%s: arguments %s break the schema", what, c.Arguments)
				}
			default:
				t.Errorf("%s: unknown function %q", what, c.Name)
			}
		}
	}
	check("required", r.Required, "tool_calls", true)
	check("named", r.Named, "stop", true)
	check("streamed", r.Streamed, "tool_calls", false)
	if r.Named.Calls[0].Name != "get_weather" || r.FollowUp == nil {
		t.Errorf("named call %+v, follow-up %v", r.Named.Calls[0], r.FollowUp)
	}
	// A required call cut by max_tokens is still a call (the case:
	// it came back as text, and the AI SDK raised ToolChoiceViolationError).
	if c := r.Cut; (c.Finish != "length" && c.Finish != "tool_calls") || len(c.Calls) == 0 || c.Calls[0].Name != "get_weather" || (r.CutContent != nil && *r.CutContent != "") {
		t.Errorf("cut by max_tokens: %+v, content %v", c, r.CutContent)
	}
}

func checkEmbeddings(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Count       int
		Dims        []int
		Norm        float64
		SameAsFloat bool
		Usage       int
	}
	node("openai-embeddings.mjs", &r)
	if r.Count != 2 || len(r.Dims) != 2 || r.Dims[0] != r.Dims[1] || r.Dims[0] < 64 || r.Norm < 0.999 || r.Norm > 1.001 || !r.SameAsFloat || r.Usage == 0 {
		t.Errorf("embeddings: %+v", r)
	}
}

func checkAISDK(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Object struct {
			Title  *string
			Year   *int
			Genres []string
		}
		ToolCalls []struct {
			Name  string
			Input struct{ Word *string }
		}
		EmbeddingDims int
	}
	node("ai-sdk.mjs", &r)
	o := r.Object
	if o.Title == nil || utf8.RuneCountInString(*o.Title) > 30 || o.Year == nil || *o.Year < 1900 || *o.Year > 2100 || len(o.Genres) > 2 {
		t.Errorf("generateObject: %+v", o)
	}
	for _, g := range o.Genres {
		if !slices.Contains([]string{"drama", "comedy", "horror"}, g) {
			t.Errorf("genre %q", g)
		}
	}
	if len(r.ToolCalls) == 0 {
		t.Fatal("generateText with a required tool made no call")
	}
	for _, c := range r.ToolCalls {
		if c.Name != "lookup" || c.Input.Word == nil || utf8.RuneCountInString(*c.Input.Word) > 15 {
			t.Errorf("tool call %+v", c)
		}
	}
	if r.EmbeddingDims < 64 {
		t.Errorf("embed: %d dimensions", r.EmbeddingDims)
	}
}

func checkResponses(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Created struct {
			ID, Text, Status string
			Usage            struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			}
		}
		Streamed struct {
			Text, Deltas, Status string
			Events               []string
		}
		Call struct {
			Name, Arguments, CallID string
			Parsed                  *struct{ City *string }
		}
		FollowUp struct {
			Text, Previous string
			InputTokens    int
		}
		Parsed *struct {
			Title *string
			Year  *int
		}
		Cut struct {
			Status, Reason string
			Output         []struct{ Type, Name, Arguments string }
		}
	}
	node("openai-responses.mjs", &r)
	if !strings.HasPrefix(r.Created.ID, "resp_") || r.Created.Text == "" || (r.Created.Status != "completed" && r.Created.Status != "incomplete") || r.Created.Usage.InputTokens == 0 {
		t.Errorf("responses.create: %+v", r.Created)
	}
	wantEvents := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if r.Streamed.Text == "" || r.Streamed.Text != r.Streamed.Deltas || !slices.Equal(r.Streamed.Events, wantEvents) {
		t.Errorf("responses.stream: %+v", r.Streamed)
	}
	if r.Call.Name != "get_weather" || !strings.HasPrefix(r.Call.CallID, "call_") || r.Call.Parsed == nil || r.Call.Parsed.City == nil || utf8.RuneCountInString(*r.Call.Parsed.City) > 20 {
		t.Errorf("function call: %+v", r.Call)
	}
	if !strings.HasPrefix(r.FollowUp.Previous, "resp_") || r.FollowUp.InputTokens == 0 {
		t.Errorf("previous_response_id follow-up: %+v", r.FollowUp)
	}
	if r.Parsed == nil || r.Parsed.Title == nil || utf8.RuneCountInString(*r.Parsed.Title) > 30 || r.Parsed.Year == nil || *r.Parsed.Year < 1900 || *r.Parsed.Year > 2100 {
		t.Errorf("zodTextFormat: %+v", r.Parsed)
	}
	// 40 tokens cut the simulator's call; GPT-2's larger tokens may fit it.
	if c := r.Cut; (c.Status == "incomplete") != (c.Reason == "max_output_tokens") || len(c.Output) == 0 || c.Output[0].Type != "function_call" || c.Output[0].Name != "get_weather" {
		t.Errorf("a call cut by max_output_tokens: %+v", c)
	}
}

func checkAISDKResponses(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Text struct {
			Text, Finish, ResponseID string
			InputTokens              int
		}
		Streamed struct{ Text, Deltas, Finish string }
		Object   struct {
			Title  *string
			Year   *int
			Genres []string
		}
		Agent struct {
			Steps, Executed int
			Finish          string
			Calls           []struct {
				Name  string
				Input struct{ Word *string }
			}
			InputTokens, CallsByStep []int
		}
	}
	node("ai-sdk-responses.mjs", &r)
	if r.Text.Text == "" || !strings.HasPrefix(r.Text.ResponseID, "resp_") || r.Text.InputTokens == 0 {
		t.Errorf("generateText: %+v", r.Text)
	}
	if r.Streamed.Text == "" || r.Streamed.Text != r.Streamed.Deltas {
		t.Errorf("streamText: %+v", r.Streamed)
	}
	if o := r.Object; o.Title == nil || utf8.RuneCountInString(*o.Title) > 30 || o.Year == nil || *o.Year < 1900 || *o.Year > 2100 || len(o.Genres) > 2 {
		t.Errorf("generateObject: %+v", o)
	}
	a := r.Agent
	if a.Steps < 2 || a.Executed == 0 || a.Executed != len(a.Calls) || len(a.InputTokens) != a.Steps {
		t.Fatalf("agent loop: %+v", a)
	}
	for i, n := range a.CallsByStep {
		if n > 1 {
			t.Errorf("agent step %d made %d calls with parallel_tool_calls false", i, n)
		}
	}
	for _, c := range a.Calls {
		if c.Name != "lookup" || c.Input.Word == nil || utf8.RuneCountInString(*c.Input.Word) > 15 {
			t.Errorf("agent call %+v", c)
		}
	}
	for i := 1; i < len(a.InputTokens); i++ {
		if a.InputTokens[i] <= a.InputTokens[i-1] {
			t.Errorf("agent loop: input tokens by step %v do not grow with the conversation", a.InputTokens)
		}
	}
}

func checkLangChain(t *testing.T, node func(string, any, ...string)) {
	var r map[string]struct {
		Invoked, Streamed string
		Structured        *struct {
			Name *string
			Age  *int
		}
		Calls []struct {
			Name string
			Args struct{ Word *string }
		}
	}
	node("langchain.mjs", &r)
	for _, api := range []string{"chat", "responses"} {
		x, ok := r[api]
		if !ok || x.Invoked == "" || x.Streamed == "" {
			t.Errorf("LangChain over %s: %+v", api, x)
			continue
		}
		if s := x.Structured; s == nil || s.Name == nil || utf8.RuneCountInString(*s.Name) > 20 || s.Age == nil || *s.Age < 0 || *s.Age > 120 {
			t.Errorf("LangChain over %s: withStructuredOutput %+v", api, x.Structured)
		}
		if len(x.Calls) != 1 || x.Calls[0].Name != "lookup" || x.Calls[0].Args.Word == nil || utf8.RuneCountInString(*x.Calls[0].Args.Word) > 15 {
			t.Errorf("LangChain over %s: bindTools %+v", api, x.Calls)
		}
	}
}

// checkSchemaShapes sends the corpus's zod shapes through the AI SDK's
// generateObject: each is parsed by zod, or refused by name.
func checkSchemaShapes(t *testing.T, node func(string, any, ...string)) {
	var r map[string]struct {
		Object json.RawMessage
		Error  string
	}
	node("ai-sdk-schemas.mjs", &r)
	refused := map[string]string{"multipleOf": `"param":"response_format"`}
	if len(r) < 30 {
		t.Fatalf("%d shapes", len(r))
	}
	for name, x := range r {
		if want, ok := refused[name]; ok {
			if !strings.Contains(x.Error, want) || !strings.Contains(x.Error, name) {
				t.Errorf("shape %s: %q, want a 400 naming %s", name, x.Error, name)
			}
			continue
		}
		if x.Error != "" || len(x.Object) == 0 {
			t.Errorf("shape %s: %s", name, x.Error)
		}
	}
}

// TestSchemaCorpusIsCurrent: testdata/schemas/corpus.json is what the
// libraries write: testdata/clients/schemas.mjs reruns zod, the AI SDK,
// the openai SDK and LangChain, and testdata/schemas/pydantic_corpus.py
// pydantic where a python3 with pydantic 2 is installed.
func TestSchemaCorpusIsCurrent(t *testing.T) {
	dir := reftest.NodePackages(t, "testdata/clients")
	raw, err := os.ReadFile(filepath.Join(dir, "..", "schemas", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var committed []json.RawMessage
	if err := json.Unmarshal(raw, &committed); err != nil {
		t.Fatal(err)
	}
	generated := corpusPart(t, exec.CommandContext(t.Context(), "node", "schemas.mjs"), dir)
	if py, err := exec.LookPath("python3"); err == nil && exec.Command(py, "-c", "import pydantic; assert pydantic.VERSION.startswith('2.')").Run() == nil {
		generated = append(generated, corpusPart(t, exec.CommandContext(t.Context(), py, filepath.Join("..", "schemas", "pydantic_corpus.py")), dir)...)
	} else {
		t.Log("python3 with pydantic 2 is not installed: the corpus's pydantic part is not regenerated")
		for _, e := range committed {
			if strings.Contains(string(e), `"generator": "pydantic"`) {
				generated = append(generated, compactJSON(t, e))
			}
		}
	}
	if len(generated) != len(committed) {
		t.Fatalf("the libraries wrote %d schemas, the corpus holds %d: regenerate testdata/schemas/corpus.json", len(generated), len(committed))
	}
	for i := range committed {
		if got, want := string(generated[i]), string(compactJSON(t, committed[i])); got != want {
			t.Errorf("corpus entry %d differs from what the libraries write now:\n got %s\nwant %s", i, got, want)
		}
	}
}

// corpusPart runs a corpus generator and returns its entries, compact.
func corpusPart(t *testing.T, cmd *exec.Cmd, dir string) []json.RawMessage {
	t.Helper()
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.String())
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(out, &entries); err != nil {
		t.Fatalf("%v printed %.200q: %v", cmd.Args, out, err)
	}
	for i := range entries {
		entries[i] = compactJSON(t, entries[i])
	}
	return entries
}

func compactJSON(t *testing.T, raw []byte) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// agentsDefaultModel is the model an Agents SDK Agent without one asks for.
func agentsDefaultModel(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "node", "--input-type=module", "-e", `import { getDefaultModel } from "@openai/agents"; console.log(getDefaultModel());`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Agents SDK's default model: %v", err)
	}
	return strings.TrimSpace(string(out))
}

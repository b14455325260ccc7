package main

import (
	"context"
	"encoding/json"
	"io"
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
// zodFunction tools with required and named choices, a streamed call and
// the round trip with the tool's result, its embeddings (base64, decoded
// by the SDK), and the Vercel AI SDK's generateObject, tool calls and
// embed. Each runs against the simulator and against a GGUF model with
// random weights, GPT-2's real vocabulary and an embedding pooling: the
// SDKs parse and validate every object with zod, and the checks here read
// what they parsed.
func TestRealClients(t *testing.T) {
	dir := reftest.NodePackages(t, "testdata/clients")
	vocab := reftest.Path(t, "testdata", "tokenizer", "ggml-vocab-gpt-2.gguf")
	model := filepath.Join(t.TempDir(), "random-gpt2.gguf")
	if err := run(context.Background(), []string{"model", "random", "--arch", "qwen3", "--shape", "tiny", "--vocab", vocab,
		"--pooling", "last", "-o", model}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	servers := []struct {
		name string
		args []string
	}{
		{"sim", []string{"--sim-time-scale", "0", "--served-model-name", "m"}},
		{"gguf", []string{"--model", model, "--served-model-name", "m", "--max-model-len", "2048"}},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			base, _ := serveTest(t, srv.args...)
			node := func(script string, out any) {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), "node", script)
				cmd.Dir = dir
				cmd.Env = append(cmd.Environ(), "BASE_URL="+base+"/v1", "MODEL=m", "EMBEDDINGS=1", "AI_SDK_LOG_WARNINGS=false")
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

func checkStructured(t *testing.T, node func(string, any)) {
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

func checkTools(t *testing.T, node func(string, any)) {
	var r struct {
		Required, Named, Streamed toolSummary
		FollowUp                  *string
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
}

func checkEmbeddings(t *testing.T, node func(string, any)) {
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

func checkAISDK(t *testing.T, node func(string, any)) {
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

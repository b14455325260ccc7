package jinja

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// sharedDir is ../shared/testdata/tokenizer.
func sharedDir(t testing.TB) string { t.Helper(); return reftest.Path(t, "testdata", "tokenizer") }

type chatCase struct {
	Name                string `json:"name"`
	Messages            []struct{ Role, Content string }
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Variables           json.RawMessage `json:"variables"`
	Rendered            string          `json:"rendered"`
}

func readJSON(t *testing.T, path string, v any) { readJSONB(t, path, v) }

func readJSONB(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestHFChatCases renders every expected rendering in hf/ (made with
// @huggingface/jinja and checked against Python Jinja2 with transformers'
// environment) two ways: through Render with exactly the variables the
// reference passed, and through RenderChat with the options they map to.
func TestHFChatCases(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "hf")
	for _, model := range []string{"llama3", "qwen3"} {
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		readJSON(t, filepath.Join(dir, model, "tokenizer_config.json"), &cfg)
		tmpl, err := Parse(cfg.ChatTemplate)
		if err != nil {
			t.Fatalf("%s: parse: %v", model, err)
		}
		var cases []chatCase
		readJSON(t, filepath.Join(dir, model, "chat_cases.json"), &cases)
		if len(cases) == 0 {
			t.Fatalf("%s: no chat cases", model)
		}
		for _, c := range cases {
			t.Run(model+"/"+c.Name, func(t *testing.T) {
				vars, err := FromJSON(c.Variables)
				if err != nil {
					t.Fatal(err)
				}
				msgs := make([]Message, len(c.Messages))
				msgVals := make([]any, len(c.Messages))
				for i, m := range c.Messages {
					msgs[i] = Message{Role: m.Role, Content: m.Content}
					msgVals[i] = map[string]any{"role": m.Role, "content": m.Content}
				}
				d := vars.(*Dict)
				plain := map[string]any{"messages": msgVals}
				for _, k := range d.Keys() {
					plain[k], _ = d.Get(k)
				}
				got, err := tmpl.Render(plain)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.Rendered, got); diff != "" {
					t.Errorf("Render (-want +got):\n%s", diff)
				}

				opts := ChatOptions{AddGenerationPrompt: c.AddGenerationPrompt, Vars: map[string]any{}}
				for _, k := range d.Keys() {
					v, _ := d.Get(k)
					switch k {
					case "bos_token":
						opts.BOS = v.(string)
					case "eos_token":
						opts.EOS = v.(string)
					case "add_generation_prompt":
					default:
						opts.Vars[k] = v
					}
				}
				got, err = RenderChat(cfg.ChatTemplate, msgs, opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.Rendered, got); diff != "" {
					t.Errorf("RenderChat (-want +got):\n%s", diff)
				}
			})
		}
	}
}

type convCase struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Variables json.RawMessage `json:"variables"`
	Want      *string         `json:"want"`
	PyError   string          `json:"python_error"`
}

// chatTemplateFrom loads a template named in chat_cases.json: hf/<model>
// from its tokenizer_config.json, anything else from the GGUF file's
// tokenizer.chat_template.
func chatTemplateFrom(t *testing.T, dir, source string) string {
	t.Helper()
	if model, ok := strings.CutPrefix(source, "hf/"); ok {
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		readJSON(t, filepath.Join(dir, "hf", model, "tokenizer_config.json"), &cfg)
		return cfg.ChatTemplate
	}
	f, err := gguf.Open(filepath.Join(dir, source))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, ok := f.String("tokenizer.chat_template")
	if !ok {
		t.Fatalf("%s has no tokenizer.chat_template", source)
	}
	return s
}

// TestChatConversations renders conversations with tools, tool calls,
// tool results and reasoning through RenderChat, against Python Jinja2's
// output for the same templates (testdata/gen_chat.py).
func TestChatConversations(t *testing.T) {
	dir := sharedDir(t)
	var cases []convCase
	readJSON(t, "testdata/chat_cases.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		t.Run(c.Template+"/"+c.Name, func(t *testing.T) {
			src := chatTemplateFrom(t, dir, c.Template)
			v, err := FromJSON(c.Variables)
			if err != nil {
				t.Fatal(err)
			}
			vars := v.(*Dict)
			opts := ChatOptions{Vars: map[string]any{}}
			for _, k := range vars.Keys() {
				val, _ := vars.Get(k)
				switch k {
				case "add_generation_prompt":
					opts.AddGenerationPrompt = val.(bool)
				case "bos_token":
					opts.BOS = val.(string)
				case "eos_token":
					opts.EOS = val.(string)
				case "tools":
					opts.Tools = val.([]any)
				default:
					opts.Vars[k] = val
				}
			}
			var msgs []Message
			for _, m := range c.Messages {
				msg := Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
				for _, tc := range m.ToolCalls {
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
				}
				msgs = append(msgs, msg)
			}
			got, err := RenderChat(src, msgs, opts)
			if c.Want == nil {
				if err == nil {
					t.Fatalf("rendered %q; Jinja2 raised %s", got, c.PyError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*c.Want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatML(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}
	tests := []struct {
		gen  bool
		want string
	}{
		{true, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{false, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"},
	}
	for _, tt := range tests {
		if got := ChatML(msgs, tt.gen); got != tt.want {
			t.Errorf("ChatML(gen=%v) = %q, want %q", tt.gen, got, tt.want)
		}
	}
}

// TestChatMLMatchesQwenTemplate checks the fallback against the template
// it imitates, for the messages both handle alike.
func TestChatMLMatchesQwenTemplate(t *testing.T) {
	src := chatTemplateFrom(t, sharedDir(t), "hf/qwen3")
	msgs := []Message{{Role: "system", Content: "Be kind."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "Bye"}}
	for _, gen := range []bool{true, false} {
		want, err := RenderChat(src, msgs, ChatOptions{AddGenerationPrompt: gen})
		if err != nil {
			t.Fatal(err)
		}
		if got := ChatML(msgs, gen); got != want {
			t.Errorf("gen=%v: ChatML %q, Qwen3 template %q", gen, got, want)
		}
	}
}

func TestChatFallback(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "Hi"}}
	tests := []struct {
		name     string
		src      string
		want     string
		wantErr  bool
		fallback bool
		warns    int
	}{
		{name: "good", src: "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}", want: "[user:Hi]"},
		{name: "no template", src: "", want: ChatML(msgs, true), fallback: true, warns: 1},
		{name: "syntax error", src: "{% for m in messages %}", want: ChatML(msgs, true), fallback: true, warns: 1},
		{name: "runtime error", src: "{{ nope.attr }}", want: ChatML(msgs, true), warns: 1},
		{name: "raise_exception is the request's fault", src: "{{ raise_exception('no users here') }}", wantErr: true},
		{name: "limit is the request's fault", src: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			c := NewChat(tt.src, slog.New(slog.NewTextHandler(&logs, nil)))
			if c.Fallback() != tt.fallback {
				t.Errorf("Fallback() = %v, want %v", c.Fallback(), tt.fallback)
			}
			got, err := c.Render(msgs, ChatOptions{AddGenerationPrompt: true, Limits: Limits{MaxSteps: 1_000_000}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != tt.warns {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.warns, logs.String())
			}
		})
	}
	var exc *ExceptionError
	_, err := NewChat("{{ raise_exception('roles must alternate') }}", nil).Render(msgs, ChatOptions{})
	if !errors.As(err, &exc) || exc.Msg != "roles must alternate" {
		t.Errorf("err = %v, want ExceptionError 'roles must alternate'", err)
	}
}

func TestStrftimeNowUsesClock(t *testing.T) {
	got, err := RenderChat("{{ strftime_now('%d %B %Y') }}", nil, ChatOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if want := "09 July 2024"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMessageFieldsOnlyWhenSet(t *testing.T) {
	const src = "{% for m in messages %}{{ m.name is defined }}{{ m.tool_call_id is defined }}{{ m.tool_calls is defined }}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments is mapping }}{{ m.tool_calls[0].function.arguments|tojson }}{% endif %};{% endfor %}"
	msgs := []Message{
		{Role: "user", Content: "a"},
		{Role: "assistant", Name: "bot", ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: `{"z": 1, "a": [true]}`}}},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: `not json`}}},
		{Role: "tool", ToolCallID: "1", Content: "r"},
	}
	got, err := RenderChat(src, msgs, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `FalseFalseFalse;TrueFalseTrueTrue{"z": 1, "a": [true]};FalseFalseTrueFalse"not json";FalseTrueFalse;`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

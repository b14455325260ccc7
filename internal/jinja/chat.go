package jinja

import (
	"errors"
	"log/slog"
	"strings"
	"time"
)

// Message is one chat message as a template sees it.
type Message struct {
	Role    string
	Content string
	// Name, ToolCallID and ToolCalls are left out of the template's view
	// when empty, so "message.tool_calls is defined" works as with
	// transformers.
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is a function call an assistant message made.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text the model produced. As vLLM does, a
	// valid JSON object is handed to the template decoded (templates
	// write it with tojson or iterate its items); anything else stays
	// a string.
	Arguments string
}

// ChatOptions are the variables transformers' apply_chat_template passes
// besides the messages.
type ChatOptions struct {
	AddGenerationPrompt bool
	// BOS and EOS become bos_token and eos_token; an empty one is left
	// undefined, as transformers leaves a token the model does not set.
	BOS, EOS string
	// Tools are the request's tool definitions (FromJSON keeps their key
	// order); nil leaves "tools" undefined.
	Tools []any
	// Vars are further template variables (enable_thinking, …); they
	// cannot replace messages or the variables above.
	Vars map[string]any
	// Now is strftime_now's clock; nil means time.Now.
	Now    func() time.Time
	Limits Limits
}

// RenderChat parses tmpl and renders messages with it.
func RenderChat(tmpl string, messages []Message, opts ChatOptions) (string, error) {
	t, err := Parse(tmpl)
	if err != nil {
		return "", err
	}
	return t.RenderChat(messages, opts)
}

// RenderChat renders messages with a parsed chat template.
func (t *Template) RenderChat(messages []Message, opts ChatOptions) (string, error) {
	vars := make(map[string]any, len(opts.Vars)+5)
	for k, v := range opts.Vars {
		vars[k] = v
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = messageValue(m)
	}
	vars["messages"] = msgs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt
	if opts.BOS != "" {
		vars["bos_token"] = opts.BOS
	}
	if opts.EOS != "" {
		vars["eos_token"] = opts.EOS
	}
	if opts.Tools != nil {
		vars["tools"] = opts.Tools
	}
	return t.RenderOptions(vars, Options{Limits: opts.Limits, Now: opts.Now})
}

func messageValue(m Message) *Dict {
	d := NewDict()
	d.Set("role", m.Role)
	d.Set("content", m.Content)
	if m.Name != "" {
		d.Set("name", m.Name)
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", m.ToolCallID)
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			fn := NewDict()
			fn.Set("name", c.Name)
			var args any = c.Arguments
			if v, err := FromJSON([]byte(c.Arguments)); err == nil {
				if obj, ok := v.(*Dict); ok {
					args = obj
				}
			}
			fn.Set("arguments", args)
			call := NewDict()
			if c.ID != "" {
				call.Set("id", c.ID)
			}
			call.Set("type", "function")
			call.Set("function", fn)
			calls[i] = call
		}
		d.Set("tool_calls", calls)
	}
	return d
}

// ChatML renders messages in the ChatML format (Qwen's and many others'),
// the format a model without a usable template gets. With
// addGenerationPrompt it opens the assistant's turn.
func ChatML(messages []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	for _, m := range messages {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

// ChatMLTools is ChatML with tools, in the Hermes format Qwen's templates
// use: the tools in a system message, an assistant's calls as
// <tool_call> blocks, tool results as <tool_response> in a user turn. A
// model without a usable template gets it, and glassbox's hermes parser
// reads what it asks for.
func ChatMLTools(messages []Message, tools []any, addGenerationPrompt bool) string {
	var b strings.Builder
	rest := messages
	b.WriteString("<|im_start|>system\n")
	if len(rest) > 0 && rest[0].Role == "system" {
		b.WriteString(rest[0].Content)
		b.WriteString("\n\n")
		rest = rest[1:]
	}
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		b.WriteByte('\n')
		b.WriteString(toJSON(t))
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within " +
		"<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	for i, m := range rest {
		switch {
		case m.Role == "tool":
			if i == 0 || rest[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n")
			b.WriteString(m.Content)
			b.WriteString("\n</tool_response>")
			if i == len(rest)-1 || rest[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		default:
			b.WriteString("<|im_start|>")
			b.WriteString(m.Role)
			b.WriteByte('\n')
			b.WriteString(m.Content)
			for j, c := range m.ToolCalls {
				if m.Content != "" || j > 0 {
					b.WriteByte('\n')
				}
				b.WriteString("<tool_call>\n{\"name\": ")
				b.WriteString(toJSON(c.Name))
				b.WriteString(", \"arguments\": ")
				var args any = c.Arguments // as the templates see it: decoded when an object
				if v, err := FromJSON([]byte(c.Arguments)); err == nil {
					if obj, ok := v.(*Dict); ok {
						args = obj
					}
				}
				b.WriteString(toJSON(args))
				b.WriteString("}\n</tool_call>")
			}
			b.WriteString("<|im_end|>\n")
		}
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

// toJSON writes a template value as tojson does.
func toJSON(v any) string {
	var b strings.Builder
	budget := 1 << 20
	o := newJSONOpts()
	o.maxLen = 1 << 24
	if o.write(&b, v, 0, &budget) != nil {
		return "null"
	}
	return b.String()
}

// Chat is one model's chat template, ready to render requests. A template
// that does not parse, or fails on a request for a reason other than the
// template refusing it, falls back to ChatML with a warning in the log.
type Chat struct {
	tmpl *Template
	src  string
	log  *slog.Logger
}

// NewChat parses src once; an empty src means the model has no template
// and every request gets ChatML. log may be nil.
func NewChat(src string, log *slog.Logger) *Chat {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Chat{log: log}
	if src == "" {
		log.Warn("model has no chat template; using ChatML")
		return c
	}
	t, err := Parse(src)
	if err != nil {
		log.Warn("chat template does not parse; using ChatML", "err", err)
		return c
	}
	c.tmpl, c.src = t, src
	return c
}

// Fallback reports whether every request gets ChatML.
func (c *Chat) Fallback() bool { return c.tmpl == nil }

// Render renders one request's messages. An error is the request's
// fault: the template raised an exception (roles that do not alternate,
// say) or the request made it exceed its limits.
func (c *Chat) Render(messages []Message, opts ChatOptions) (string, error) {
	if c.tmpl == nil {
		return chatML(messages, opts), nil
	}
	s, err := c.tmpl.RenderChat(messages, opts)
	if err == nil {
		return s, nil
	}
	var exc *ExceptionError
	if errors.As(err, &exc) || errors.Is(err, ErrLimit) {
		return "", err
	}
	c.log.Warn("chat template did not render; using ChatML for this request", "err", err)
	return chatML(messages, opts), nil
}

// chatML is the fallback: ChatML, with tools when the request has some.
func chatML(messages []Message, opts ChatOptions) string {
	if opts.Tools != nil {
		return ChatMLTools(messages, opts.Tools, opts.AddGenerationPrompt)
	}
	return ChatML(messages, opts.AddGenerationPrompt)
}

// Source is the template's text, "" when every request gets ChatML.
func (c *Chat) Source() string {
	if c.tmpl == nil {
		return ""
	}
	return c.src
}

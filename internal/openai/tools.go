package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// Tool is one entry of a chat request's tools.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef is a tool's function. Parameters is its arguments' JSON
// Schema, kept as sent (key order matters to the template and to
// generation).
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoice is tool_choice: "none", "auto", "required", or a named
// function ({"type":"function","function":{"name":…}}, or the Responses
// API's {"type":"function","name":…}).
type ToolChoice struct {
	Mode string // none, auto, required, or "function" with Name
	Name string
}

// UnmarshalJSON accepts the string and the object forms.
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	switch jsonKind(data) {
	case "string":
		return json.Unmarshal(data, &c.Mode)
	case "object":
		var wire struct {
			Type     string `json:"type"`
			Name     string `json:"name"` // the Responses API's flat form
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(data, &wire); err != nil {
			return err
		}
		if wire.Type != "function" {
			return BadRequest("tool_choice", "tool_choice object must have type \"function\", got %q", wire.Type)
		}
		c.Mode, c.Name = "function", wire.Function.Name
		if c.Name == "" {
			c.Name = wire.Name
		}
		return nil
	}
	return typeError[ToolChoice](data)
}

// ToolCall is one call of an assistant message, in requests and responses.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function and its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is a streamed piece of a call: the first of each call has
// its id, type and name; arguments follow, possibly in pieces.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is a streamed piece of a call's function.
type FunctionCallDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Tools is a validated request's tool calling: which tools the template
// shows, how the output is read, and the tools' names and schemas.
type Tools struct {
	Defs     []any // the tools as the template sees them (key order kept)
	Mode     string
	Name     string // Mode "function": the named tool
	Parallel bool
	List     []toolcall.Tool
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolDefs checks a request's tools: their names and schemas, and the
// definitions as the chat template sees them (key order kept).
func toolDefs(tools []Tool) ([]toolcall.Tool, []any, error) {
	var list []toolcall.Tool
	var defs []any
	seen := map[string]bool{}
	for i, tool := range tools {
		fn := tool.Function
		param := fmt.Sprintf("tools[%d]", i)
		switch {
		case tool.Type != "function":
			return nil, nil, BadRequest("tools", "%s.type must be \"function\", got %q", param, tool.Type)
		case !functionName.MatchString(fn.Name):
			return nil, nil, BadRequest("tools", "%s.function.name must be 1 to 64 letters, digits, _ or -, got %q", param, fn.Name)
		case seen[fn.Name]:
			return nil, nil, BadRequest("tools", "%s.function.name %q is used twice", param, fn.Name)
		}
		seen[fn.Name] = true
		params := bytes.TrimSpace(fn.Parameters)
		if len(params) > 0 && jsonKind(params) != "object" && jsonKind(params) != "null" {
			return nil, nil, BadRequest("tools", "%s.function.parameters must be a JSON Schema object", param)
		}
		if jsonKind(params) == "null" {
			params = nil
		}
		// Checked whatever tool_choice says: auto's and none's schemas are
		// not compiled, and a malformed one would be served unchecked
		// (the model shown a tool no call can satisfy).
		if params != nil {
			if err := grammar.CheckSchema(params); err != nil {
				return nil, nil, BadRequest("tools", "%s.function.parameters is not a valid JSON Schema: %v", param, err)
			}
		}
		list = append(list, toolcall.Tool{Name: fn.Name, Parameters: string(params)})
		raw, err := json.Marshal(tool)
		if err != nil {
			return nil, nil, fmt.Errorf("encode %s: %w", param, err)
		}
		def, err := jinja.FromJSON(raw)
		if err != nil {
			return nil, nil, BadRequest("tools", "%s: %v", param, err)
		}
		defs = append(defs, def)
	}
	return list, defs, nil
}

// ToolDefs checks tools and returns them as the chat template sees them
// (for /tokenize).
func ToolDefs(tools []Tool) ([]any, error) {
	_, defs, err := toolDefs(tools)
	return defs, err
}

// tools checks tools, tool_choice and parallel_tool_calls, and for a
// required or named choice sets the grammar that holds the output to the
// tools' schemas.
func (r *ChatCompletionRequest) tools(g *Generation) error {
	mode := "none" // parallel_tool_calls without tools asks for nothing

	if len(r.Tools) > 0 {
		mode = "auto" // OpenAI's default with tools
	}
	name := ""
	if r.ToolChoice != nil {
		mode, name = r.ToolChoice.Mode, r.ToolChoice.Name
	}
	switch mode {
	case "none", "auto", "required", "function":
	default:
		return BadRequest("tool_choice", "tool_choice must be none, auto, required or a named function, got %q", mode)
	}
	if len(r.Tools) == 0 {
		if mode != "none" {
			return BadRequest("tool_choice", "tool_choice %q needs `tools`", mode)
		}
		return nil
	}
	t := &Tools{Mode: mode, Name: name, Parallel: r.ParallelToolCalls == nil || *r.ParallelToolCalls}
	var err error
	if t.List, t.Defs, err = toolDefs(r.Tools); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, tool := range t.List {
		seen[tool.Name] = true
	}
	if mode == "function" && !seen[name] {
		return BadRequest("tool_choice", "tool_choice names %q, which is not one of the tools", name)
	}
	if mode == "required" || mode == "function" {
		if g.Constraint != nil {
			return BadRequest("tool_choice", "tool_choice %q cannot be combined with `%s`: both constrain the output", mode, g.ConstraintParam)
		}
		schema := toolcall.RequiredSchema(t.List, t.Parallel)
		if mode == "function" {
			for _, tool := range t.List {
				if tool.Name == name {
					schema = toolcall.NamedSchema(tool)
				}
			}
		}
		g.Constraint, g.ConstraintParam = &grammar.Spec{Kind: grammar.KindJSON, Text: schema}, "tools"
	}
	g.Tools = t
	return nil
}

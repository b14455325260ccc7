package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ResponsesRequest is the body of POST /v1/responses, in vLLM's shape:
// OpenAI's fields and vLLM's sampling extensions. It is served as a chat
// completion of the conversation its input (and previous_response_id)
// makes: Chat translates it.
type ResponsesRequest struct {
	Model              string             `json:"model"`
	Input              ResponseInput      `json:"input"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	TopK               *int               `json:"top_k"`
	RepetitionPenalty  *float64           `json:"repetition_penalty"`
	Seed               *int64             `json:"seed"`
	Stop               StopList           `json:"stop"`
	IgnoreEOS          bool               `json:"ignore_eos"`
	IncludeStopStr     bool               `json:"include_stop_str_in_output"`
	Tools              []ResponseTool     `json:"tools"`
	ToolChoice         *ToolChoice        `json:"tool_choice"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	Text               *ResponseText      `json:"text"`
	StructuredOutputs  *StructuredOutputs `json:"structured_outputs"`
	Stream             bool               `json:"stream"`
	Background         bool               `json:"background"`
	Store              *bool              `json:"store"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Include            []string           `json:"include"`
	TopLogprobs        *int               `json:"top_logprobs"`
	Metadata           map[string]string  `json:"metadata"`
	User               *string            `json:"user"`
}

// ResponseTool is one of a Responses request's tools: a function, flat.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseText is the text block: the output's format.
type ResponseText struct {
	Format    *ResponseTextFormat `json:"format,omitempty"`
	Verbosity *string             `json:"verbosity,omitempty"`
}

// ResponseTextFormat is text.format: text, json_object, or json_schema
// with the schema beside its name (flat, unlike chat's response_format).
type ResponseTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseInput is input: a string (one user message) or a list of items.
type ResponseInput struct {
	Text  *string
	Items []InputItem
}

// UnmarshalJSON accepts the two shapes.
func (in *ResponseInput) UnmarshalJSON(data []byte) error {
	*in = ResponseInput{}
	switch jsonKind(data) {
	case "string":
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		in.Text = &s
		return nil
	case "array":
		return json.Unmarshal(data, &in.Items)
	case "null":
		return nil
	}
	return typeError[ResponseInput](data)
}

// InputItem is one item of input: a message (type "message" or none), a
// function call the model made, its output, or a reference to an item
// the server stored.
type InputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   responseContent `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    responseContent `json:"output"`
	ID        string          `json:"id"`
}

// responseContent is a message's content or a call's output: a string, or
// text parts (input_text, output_text, text).
type responseContent string

// UnmarshalJSON joins text parts; any other part is a 400.
func (c *responseContent) UnmarshalJSON(data []byte) error {
	switch jsonKind(data) {
	case "null":
		*c = ""
		return nil
	case "string":
		var s string
		err := json.Unmarshal(data, &s)
		*c = responseContent(s)
		return err
	case "array":
	default:
		return typeError[responseContent](data)
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(data, &parts); err != nil {
		return typeError[responseContent](data)
	}
	var b strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		default:
			return BadRequest("input", "content part %d has type %q: only text parts (input_text, output_text) are supported", i, p.Type)
		}
	}
	*c = responseContent(b.String())
	return nil
}

// DecodeResponsesRequest reads a Responses request body.
func DecodeResponsesRequest(r io.Reader) (*ResponsesRequest, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, decodeError(err)
	}
	var req ResponsesRequest
	if err := decode(bytes.NewReader(data), &req); err != nil {
		return nil, err
	}
	if err := checkRefused(data, endpointResponses); err != nil {
		return nil, err
	}
	return &req, req.check()
}

// check refuses by name what the request asks for and glassbox does not
// serve: tools other than functions, include values other than the
// output's logprobs; text.verbosity is one of its values.
func (r *ResponsesRequest) check() error {
	if r.Input.Text == nil && len(r.Input.Items) == 0 {
		return BadRequest("input", "`input` is required: a string or a non-empty list of items")
	}
	for i, t := range r.Tools {
		if t.Type != "function" {
			return BadRequest("tools", "tools[%d] has type %q: only function tools are served (built-in tools such as web_search, file_search or code_interpreter are not)", i, t.Type)
		}
	}
	for _, inc := range r.Include {
		if inc != "message.output_text.logprobs" {
			return BadRequest("include", "include %q is not supported: only message.output_text.logprobs", inc)
		}
	}
	if r.Text != nil {
		if err := CheckVerbosity("text.verbosity", r.Text.Verbosity); err != nil {
			return err
		}
	}
	if r.Background && r.Store != nil && !*r.Store {
		return BadRequest("background", "background can only be used when `store` is true")
	}
	if r.Background && r.Stream {
		return BadRequest("background", "a background response is read with GET /v1/responses/{id}: streaming one is not supported")
	}
	if r.StructuredOutputs != nil && r.Text != nil && r.Text.Format != nil && r.Text.Format.Type != "text" {
		return BadRequest("text.format", "give `text.format` or `structured_outputs`, not both")
	}
	return nil
}

// Logprobs reports whether the output's logprobs were asked for.
func (r *ResponsesRequest) Logprobs() bool {
	return slices.Contains(r.Include, "message.output_text.logprobs")
}

// Conversation is the chat the request continues: its instructions as the
// system message, the previous response's conversation (without its
// system message: instructions do not carry over, as OpenAI and vLLM
// read them), then the input items. resolve finds an item_reference's
// stored item.
func (r *ResponsesRequest) Conversation(previous []ChatMessage, resolve func(id string) (InputItem, bool)) ([]ChatMessage, error) {
	var msgs []ChatMessage
	if r.Instructions != nil && *r.Instructions != "" {
		msgs = append(msgs, ChatMessage{Role: "system", Content: *r.Instructions})
	}
	for _, m := range previous {
		if m.Role != "system" {
			msgs = append(msgs, m)
		}
	}
	if r.Input.Text != nil {
		return append(msgs, ChatMessage{Role: "user", Content: *r.Input.Text}), nil
	}
	for i, it := range r.Input.Items {
		if it.Type == "item_reference" {
			ref, ok := resolve(it.ID)
			if !ok {
				return nil, BadRequest("input", "input[%d] refers to item %q, which this server has not stored (store: false, evicted, or never served here)", i, it.ID)
			}
			it = ref
		}
		var err error
		if msgs, err = appendItem(msgs, it, i); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// AppendOutput adds a response's output items to the conversation it
// answered, as the next turn sees them.
func AppendOutput(msgs []ChatMessage, items []ResponseItem) []ChatMessage {
	msgs = append(make([]ChatMessage, 0, len(msgs)+len(items)), msgs...)
	for i, it := range items {
		msgs, _ = appendItem(msgs, it.Input(), i) // an output item is always a message or a call
	}
	return msgs
}

// appendItem adds one input item to the chat: a message as it is; a
// function call to the assistant message before it (or a new one), as
// vLLM merges them; its output as a tool message.
func appendItem(msgs []ChatMessage, it InputItem, i int) ([]ChatMessage, error) {
	switch it.Type {
	case "message", "":
		switch it.Role {
		case "user", "system", "developer", "assistant":
		default:
			return nil, BadRequest("input", "input[%d].role must be user, system, developer or assistant, got %q", i, it.Role)
		}
		return append(msgs, ChatMessage{Role: it.Role, Content: string(it.Content)}), nil
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return nil, BadRequest("input", "input[%d] (function_call) needs call_id and name", i)
		}
		call := ToolCall{ID: it.CallID, Type: "function", Function: FunctionCall{Name: it.Name, Arguments: it.Arguments}}
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			return msgs, nil
		}
		return append(msgs, ChatMessage{Role: "assistant", ToolCalls: []ToolCall{call}}), nil
	case "function_call_output":
		if it.CallID == "" {
			return nil, BadRequest("input", "input[%d] (function_call_output) needs call_id", i)
		}
		return append(msgs, ChatMessage{Role: "tool", ToolCallID: it.CallID, Content: string(it.Output)}), nil
	}
	return nil, BadRequest("input", "input[%d] has type %q: glassbox serves message, function_call, function_call_output and item_reference items", i, it.Type)
}

// Chat is the chat completion request that serves r over msgs.
func (r *ResponsesRequest) Chat(msgs []ChatMessage) (*ChatCompletionRequest, error) {
	c := &ChatCompletionRequest{
		SamplingFields: SamplingFields{
			Model: r.Model, MaxTokens: r.MaxOutputTokens, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK,
			RepetitionPenalty: r.RepetitionPenalty, Seed: r.Seed, Stop: r.Stop, IgnoreEOS: r.IgnoreEOS,
			Stream: r.Stream, IncludeStopStrInOutput: r.IncludeStopStr,
		},
		Messages: msgs, ToolChoice: r.ToolChoice, ParallelToolCalls: r.ParallelToolCalls,
		Logprobs: r.Logprobs(),
	}
	if r.Logprobs() {
		c.TopLogprobs = r.TopLogprobs
	}
	c.StructuredOutputs = r.StructuredOutputs
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, Tool{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	if r.Text != nil && r.Text.Format != nil {
		f := r.Text.Format
		switch f.Type {
		case "text", "":
		case "json_object":
			c.ResponseFormat = &ResponseFormat{Type: "json_object"}
		case "json_schema":
			c.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}
		default:
			return nil, BadRequest("text.format", "text.format type must be text, json_object or json_schema, got %q", f.Type)
		}
	}
	return c, nil
}

// ResponsesError points an error found in the chat request that serves a
// Responses request at the Responses field the client sent.
func ResponsesError(err error) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	if e.Param == "tools" { // the Responses API's tools are flat
		c := *e
		c.Message = strings.ReplaceAll(c.Message, "].function.", "].")
		return &c
	}
	rename := map[string]string{"messages": "input", "max_tokens": "max_output_tokens", "response_format": "text.format",
		"max_completion_tokens": "max_output_tokens"}
	if to, ok := rename[e.Param]; ok {
		c := *e
		c.Param = to
		c.Message = strings.ReplaceAll(c.Message, "`"+e.Param+"`", "`"+to+"`")
		if e.Param == "max_tokens" {
			c.Message = strings.ReplaceAll(c.Message, "max_tokens", "max_output_tokens")
		}
		return &c
	}
	return err
}

// ResponseNotFound is the 404 for a response id the server does not hold,
// worded as vLLM's.
func ResponseNotFound(param, id string) *Error {
	return &Error{Status: 404, Type: TypeNotFound, Param: param, Message: fmt.Sprintf("Response with id '%s' not found.", id)}
}

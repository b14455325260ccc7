package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The fields below take more than one JSON shape. Their decoders report a
// shape they do not accept as *json.UnmarshalTypeError, so that
// encoding/json adds the field path and decode turns it into a 400 naming
// the field.

// Prompt is a completions prompt: a string, an array of strings, an array of
// token ids or an array of token-id arrays. Exactly one of Texts and Tokens
// is set after decoding; each element is one prompt.
type Prompt struct {
	Texts  []string
	Tokens [][]int
}

// Len is the number of prompts.
func (p *Prompt) Len() int { return len(p.Texts) + len(p.Tokens) }

// MarshalJSON writes the prompt in its most compact shape.
func (p Prompt) MarshalJSON() ([]byte, error) {
	switch {
	case len(p.Texts) == 1:
		return json.Marshal(p.Texts[0])
	case len(p.Texts) > 1:
		return json.Marshal(p.Texts)
	case len(p.Tokens) == 1:
		return json.Marshal(p.Tokens[0])
	case len(p.Tokens) > 1:
		return json.Marshal(p.Tokens)
	}
	return []byte("null"), nil
}

// UnmarshalJSON accepts the four shapes OpenAI documents.
func (p *Prompt) UnmarshalJSON(data []byte) error {
	*p = Prompt{}
	switch jsonKind(data) {
	case "null":
		return nil
	case "string":
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		p.Texts = []string{s}
		return nil
	case "array":
	default:
		return typeError[Prompt](data)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return err
	}
	if len(elems) == 0 {
		return nil // reported as a missing prompt by Validate
	}
	first := jsonKind(elems[0])
	for _, e := range elems {
		if jsonKind(e) != first {
			return typeError[Prompt](data)
		}
	}
	switch first {
	case "string":
		return json.Unmarshal(data, &p.Texts)
	case "number":
		var ids []int
		if err := json.Unmarshal(data, &ids); err != nil {
			return typeError[Prompt](data)
		}
		p.Tokens = [][]int{ids}
		return nil
	case "array":
		if err := json.Unmarshal(data, &p.Tokens); err != nil {
			return typeError[Prompt](data)
		}
		return nil
	}
	return typeError[Prompt](data)
}

// StopList is the stop parameter: a string or an array of strings.
type StopList []string

// UnmarshalJSON accepts null, a string or an array of strings.
func (s *StopList) UnmarshalJSON(data []byte) error {
	switch jsonKind(data) {
	case "null":
		*s = nil
		return nil
	case "string":
		var one string
		if err := json.Unmarshal(data, &one); err != nil {
			return err
		}
		*s = StopList{one}
		return nil
	case "array":
		var many []string
		if err := json.Unmarshal(data, &many); err != nil {
			return typeError[StopList](data)
		}
		*s = many
		return nil
	}
	return typeError[StopList](data)
}

// ChatMessage is one message of a conversation. Content arrays of text parts
// are joined into Content when decoding, so chat templates see plain text.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// MarshalJSON writes content as null when a message has only tool calls,
// as OpenAI does.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	type plain ChatMessage
	if m.Content != "" || len(m.ToolCalls) == 0 {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Content *string `json:"content"`
	}{plain: plain(m)})
}

// messageContent is the content field: a string, null, or an array of parts.
type messageContent string

// contentPart is one element of a content array. Only text parts are
// served: the models glassbox runs read text only.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// UnmarshalJSON joins text parts; any other part type is a 400.
func (c *messageContent) UnmarshalJSON(data []byte) error {
	switch jsonKind(data) {
	case "null":
		*c = ""
		return nil
	case "string":
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = messageContent(s)
		return nil
	case "array":
	default:
		return typeError[messageContent](data)
	}
	var parts []contentPart
	if err := json.Unmarshal(data, &parts); err != nil {
		return typeError[messageContent](data)
	}
	var b strings.Builder
	for i, part := range parts {
		if part.Type != "text" {
			return BadRequest("messages", "content part %d has type %q: only \"text\" parts are supported", i, part.Type)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(part.Text)
	}
	*c = messageContent(b.String())
	return nil
}

// UnmarshalJSON decodes a message whose content may be a string or parts.
func (m *ChatMessage) UnmarshalJSON(data []byte) error {
	var wire struct {
		Role       string         `json:"role"`
		Content    messageContent `json:"content"`
		Name       string         `json:"name"`
		ToolCallID string         `json:"tool_call_id"`
		ToolCalls  []ToolCall     `json:"tool_calls"`
	}
	if jsonKind(data) != "object" {
		return typeError[ChatMessage](data)
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*m = ChatMessage{Role: wire.Role, Content: string(wire.Content), Name: wire.Name, ToolCallID: wire.ToolCallID, ToolCalls: wire.ToolCalls}
	return nil
}

// jsonKind names the JSON value type data starts with.
func jsonKind(data []byte) string {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return ""
	}
	switch c := data[0]; {
	case c == '"':
		return "string"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	}
	return ""
}

func typeError[T any](data []byte) error {
	return &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[T]()}
}

// expected describes, for error messages, what a field of type t accepts.
func expected(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Prompt]():
		return "a string, an array of strings, an array of token ids or an array of token-id arrays"
	case reflect.TypeFor[StopList]():
		return "a string or an array of strings"
	case reflect.TypeFor[messageContent]():
		return "a string or an array of content parts"
	case reflect.TypeFor[ChatMessage]():
		return "a message object"
	case reflect.TypeFor[ToolChoice]():
		return `"none", "auto", "required" or {"type":"function","function":{"name":…}}`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(expected(t.Elem()), "an "), "a ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return expected(t.Elem())
	}
	return fmt.Sprint(t)
}

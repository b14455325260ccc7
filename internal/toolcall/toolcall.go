// Package toolcall owns tool calling's text side: the formats model
// families write tool calls in (vLLM's tool parsers: hermes, llama3_json,
// mistral, pythonic), choosing one from a chat template, splitting a
// finished output into content and calls, doing the same incrementally
// for streams, and the JSON Schema that holds a required or named tool
// choice's output to the tools' parameters.
//
// It is pure text processing: no goroutines, no I/O. It must not import
// net/http, the engine or an executor.
package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Call is one parsed tool call.
type Call struct {
	Name      string
	Arguments string // JSON text of an object
}

// Parser names, as vLLM's --tool-call-parser.
const (
	Hermes     = "hermes"      // <tool_call>{"name":…,"arguments":…}</tool_call> (Qwen2.5, Qwen3, Hermes)
	Llama3JSON = "llama3_json" // {"name":…,"parameters":…}; … (Llama 3.1, 3.2, 3.3)
	Mistral    = "mistral"     // [TOOL_CALLS][{"name":…,"arguments":…}]
	Pythonic   = "pythonic"    // [get_weather(city="Paris"), …] (Llama 3.2 small, Llama 4)
)

// Parsers lists the parser names known.
func Parsers() []string { return []string{Hermes, Llama3JSON, Mistral, Pythonic} }

// Check reports an unknown parser name.
func Check(name string) error {
	if !slices.Contains(Parsers(), name) {
		return fmt.Errorf("unknown tool-call parser %q (known: %s)", name, strings.Join(Parsers(), ", "))
	}
	return nil
}

// Detect picks the parser a chat template's tool format calls for, or ""
// when it shows none.
func Detect(template string) string {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return Hermes
	case strings.Contains(template, "[TOOL_CALLS]"):
		return Mistral
	case strings.Contains(template, "<|python_tag|>") || strings.Contains(template, `"parameters": dictionary of argument name`):
		return Llama3JSON
	case strings.Contains(template, "[func_name1(") || strings.Contains(template, "func_name1(params_name1=params_value1"):
		return Pythonic
	}
	return ""
}

// Parse splits a finished output into its content and its tool calls. An
// output that does not hold well-formed calls is all content, as vLLM's
// parsers leave it.
func Parse(parser, text string) (content string, calls []Call) {
	switch parser {
	case Hermes:
		return parseHermes(text)
	case Llama3JSON:
		if calls, ok := parseLlama3(text); ok {
			return "", calls
		}
	case Mistral:
		if calls, ok := parseMistral(text); ok {
			return "", calls
		}
	case Pythonic:
		if calls, ok := parsePythonic(strings.TrimSpace(text)); ok {
			return "", calls
		}
	}
	return text, nil
}

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

// parseHermes takes every <tool_call> block; text outside them is content.
func parseHermes(text string) (string, []Call) {
	var content strings.Builder
	var calls []Call
	rest := text
	for {
		i := strings.Index(rest, hermesOpen)
		if i < 0 {
			content.WriteString(rest)
			break
		}
		body := rest[i+len(hermesOpen):]
		j := strings.Index(body, hermesClose)
		end := len(body)
		if j >= 0 {
			end = j
		}
		c, ok := callObject(body[:end], "arguments")
		switch {
		case ok:
			content.WriteString(rest[:i])
			calls = append(calls, c)
		case j < 0:
			content.WriteString(rest) // a malformed block stays text
		default:
			content.WriteString(rest[:i+len(hermesOpen)+j+len(hermesClose)])
		}
		if j < 0 {
			break
		}
		rest = body[j+len(hermesClose):]
	}
	if len(calls) == 0 {
		return text, nil
	}
	return strings.TrimSpace(content.String()), calls
}

// callObject reads {"name": …, "<argsKey>": {…}} (arguments may also be a
// string holding the JSON, as some models write).
func callObject(s, argsKey string) (Call, bool) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &raw); err != nil {
		return Call{}, false
	}
	var name string
	if err := json.Unmarshal(raw["name"], &name); err != nil || name == "" {
		return Call{}, false
	}
	args, ok := raw[argsKey]
	if !ok && argsKey == "parameters" {
		args, ok = raw["arguments"]
	}
	if !ok {
		return Call{Name: name, Arguments: "{}"}, true
	}
	var asString string
	if json.Unmarshal(args, &asString) == nil {
		args = json.RawMessage(asString)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return Call{}, false
	}
	return Call{Name: name, Arguments: compactJSON(args)}, true
}

// compactJSON is raw without insignificant whitespace, keys in order.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// parseLlama3 reads Llama 3's JSON calls: one object, or several
// separated by ";", optionally after <|python_tag|>.
func parseLlama3(text string) ([]Call, bool) {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>"))
	if !strings.HasPrefix(s, "{") {
		return nil, false
	}
	var calls []Call
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		c, ok := callObject(string(raw), "parameters")
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		rest := strings.TrimSpace(s[dec.InputOffset():])
		if rest == "" {
			return calls, true
		}
		if !strings.HasPrefix(rest, ";") {
			return nil, false
		}
		s = strings.TrimSpace(rest[1:])
		if s == "" {
			return calls, true
		}
		dec = json.NewDecoder(strings.NewReader(s))
	}
}

// parseMistral reads [TOOL_CALLS] and a JSON array of calls (the marker
// is a control token the detokenizer may have dropped).
func parseMistral(text string) ([]Call, bool) {
	s := strings.TrimSpace(text)
	s = strings.TrimSpace(strings.TrimPrefix(s, "[TOOL_CALLS]"))
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(s), &list); err != nil || len(list) == 0 {
		return nil, false
	}
	calls := make([]Call, 0, len(list))
	for _, raw := range list {
		c, ok := callObject(string(raw), "arguments")
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

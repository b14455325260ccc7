// A recorded call's messages and answer: the text inference-perf compares
// them by (its otel_trace_utils reconstruction: content, tool calls as
// <|tool_call|>name<|tool_args|>arguments<|end|>, tool results as
// <tool_result: id>…</tool_result>) and the OpenAI message sent for each.

package inferenceperf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// readMessage reads one input message, in any of the shapes recorded
// traces carry: content as a string, a list of parts or null; OpenAI
// tool_calls and tool_call_id; the GenAI conventions' parts.
func readMessage(m map[string]any) (otelMessage, error) {
	role, ok := m["role"].(string)
	if !ok {
		return otelMessage{}, errors.New("no role")
	}
	if role == "developer" {
		role = "system" // as inference-perf normalises it
	}
	content, hasContent := m["content"]
	switch content.(type) {
	case nil, string, []any:
	default:
		return otelMessage{}, errors.New("content is neither text, a list of parts nor null")
	}
	if hasContent && m["tool_calls"] != nil {
		// Content beside tool calls: inference-perf reads it as parts.
		var parts []any
		switch c := content.(type) {
		case string:
			if c != "" {
				parts = append(parts, map[string]any{"type": "text", "content": c})
			}
		case []any:
			parts = append(parts, c...)
		}
		tcs, _ := m["tool_calls"].([]any)
		for _, x := range tcs {
			tc, ok := x.(map[string]any)
			if !ok {
				continue
			}
			if fn, ok := tc["function"].(map[string]any); ok {
				parts = append(parts, map[string]any{"type": "tool_call", "id": tc["id"], "name": fn["name"], "arguments": fn["arguments"]})
			} else if _, ok := tc["name"]; ok {
				parts = append(parts, map[string]any{"type": "tool_call", "id": tc["id"], "name": tc["name"], "arguments": tc["arguments"]})
			}
		}
		m = map[string]any{"role": role, "parts": parts}
	}
	text, err := inputText(m)
	if err != nil {
		return otelMessage{}, err
	}
	msg := otelMessage{role: role, text: text, toolIDs: messageToolIDs(m)}
	if msg.wire, err = wireMessage(m, role, text); err != nil {
		return otelMessage{}, err
	}
	return msg, nil
}

// inputText is inference-perf's reconstruct_llm_input of a message.
func inputText(m map[string]any) (string, error) {
	switch c := m["content"].(type) {
	case string:
		return c, nil
	case []any:
		return listText(c)
	}
	if parts, ok := m["parts"].([]any); ok {
		return partsText(parts)
	}
	if _, ok := m["tool_calls"]; ok {
		var out []string
		for _, tc := range toolCalls(m) {
			out = append(out, formatToolCall(tc))
		}
		return strings.Join(out, "\n"), nil
	}
	return "", nil
}

// partsText is the text of the GenAI conventions' parts.
func partsText(parts []any) (string, error) {
	var out []string
	for _, x := range parts {
		p, ok := x.(map[string]any)
		if !ok {
			continue
		}
		switch p["type"] {
		case "text":
			t, ok := p["text"]
			if !ok {
				t, ok = p["content"]
			}
			if ok {
				s, isText := t.(string)
				if !isText {
					return "", errors.New("a text part's text is not text")
				}
				out = append(out, s)
			}
		case "tool_call", "tool_use":
			out = append(out, formatToolCall(p))
		case "tool_result", "tool_call_response":
			out = append(out, formatToolResult(p))
		}
	}
	return strings.Join(out, "\n"), nil
}

// listText is the text of a content list.
func listText(items []any) (string, error) {
	var out []string
	for _, x := range items {
		switch it := x.(type) {
		case string:
			out = append(out, it)
		case map[string]any:
			switch it["type"] {
			case "text":
				if t, ok := it["text"]; ok {
					out = append(out, pyStr(t))
				} else if t, ok := it["content"]; ok {
					out = append(out, pyStr(t))
				}
				continue
			case "tool_result", "tool_call_response":
				out = append(out, formatToolResult(it))
				continue
			case "tool_use":
				out = append(out, formatToolCall(it))
				continue
			}
			if t, ok := it["text"]; ok {
				out = append(out, pyStr(t))
			} else if t, ok := it["content"]; ok {
				out = append(out, pyStr(t))
			}
		}
	}
	return strings.Join(out, "\n"), nil
}

// pyStr is a JSON value as text: a string as it is, anything else as JSON.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "None"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// toolCalls are a message's OpenAI tool calls as {id, name, arguments}.
func toolCalls(m map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := m["tool_calls"].([]any)
	for _, x := range list {
		tc, ok := x.(map[string]any)
		if !ok {
			continue
		}
		if fn, ok := tc["function"].(map[string]any); ok {
			out = append(out, map[string]any{"id": tc["id"], "name": fn["name"], "arguments": fn["arguments"]})
		} else if _, ok := tc["name"]; ok {
			out = append(out, tc)
		}
	}
	return out
}

// formatToolCall is a tool call as inference-perf writes it for matching.
func formatToolCall(tc map[string]any) string {
	name := "unknown_tool"
	if n, ok := tc["name"]; ok {
		name = pyStr(n)
	}
	args := tc["arguments"]
	if !pyTruthy(args) {
		args = tc["input"]
		if _, ok := tc["input"]; !ok {
			args = "{}"
		}
	}
	return "<|tool_call|>" + name + "<|tool_args|>" + pyStr(args) + "<|end|>"
}

// formatToolResult is a tool result as inference-perf writes it.
func formatToolResult(tr map[string]any) string {
	id := tr["tool_use_id"]
	if !pyTruthy(id) {
		id = "unknown"
		if v, ok := tr["id"]; ok {
			id = v
		}
	}
	result := tr["content"]
	if !pyTruthy(result) {
		result = ""
		if v, ok := tr["result"]; ok {
			result = v
		}
	}
	mark := ""
	if pyTruthy(tr["is_error"]) {
		mark = " [ERROR]"
	}
	return "<tool_result: " + pyStr(id) + mark + ">\n" + pyStr(result) + "\n</tool_result>"
}

// messageToolIDs are the tool call ids an input message carries.
func messageToolIDs(m map[string]any) []string {
	var out []string
	if list, ok := m["tool_calls"].([]any); ok {
		for _, x := range list {
			if tc, ok := x.(map[string]any); ok && pyTruthy(tc["id"]) {
				out = append(out, pyStr(tc["id"]))
			}
		}
		return out
	}
	if parts, ok := m["parts"].([]any); ok {
		for _, x := range parts {
			if p, ok := x.(map[string]any); ok && p["type"] == "tool_call" && pyTruthy(p["id"]) {
				out = append(out, pyStr(p["id"]))
			}
		}
	}
	return out
}

// wireMessage is what inference-perf sends for a recorded message: its
// text content, its tool calls (each with an id: a call with none cannot
// be answered, so the trace is refused), a tool result's tool_call_id.
func wireMessage(m map[string]any, role, text string) (workload.Message, error) {
	w := workload.Message{Role: role}
	if parts, ok := m["parts"].([]any); ok {
		var texts []string
		var first map[string]any
		for _, x := range parts {
			p, ok := x.(map[string]any)
			if !ok {
				continue
			}
			switch p["type"] {
			case "text":
				texts = append(texts, coerceText(p["content"]))
			case "tool_call":
				tc, err := wireToolCall(p, p["name"], p["arguments"])
				if err != nil {
					return w, err
				}
				w.ToolCalls = append(w.ToolCalls, tc)
			case "tool_call_response":
				if first == nil {
					first = p // one message answers one call: the first
				}
			}
		}
		if first != nil {
			w.Role = "tool"
			if pyTruthy(first["id"]) {
				w.ToolCallID = pyStr(first["id"])
			}
			texts = append(texts, coerceText(first["result"]))
		}
		w.Content = strings.Join(texts, "")
		return w, nil
	}
	content := m["content"]
	if list, ok := content.([]any); ok {
		for _, x := range list {
			if p, ok := x.(map[string]any); ok && p["type"] == "tool_call_response" {
				w.Role = "tool"
				if pyTruthy(p["id"]) {
					w.ToolCallID = pyStr(p["id"])
				}
				w.Content = coerceText(p["result"])
				return w, nil
			}
		}
	}
	if m["tool_calls"] != nil {
		for _, tc := range toolCalls(m) {
			c, err := wireToolCall(tc, tc["name"], tc["arguments"])
			if err != nil {
				return w, err
			}
			w.ToolCalls = append(w.ToolCalls, c)
		}
	}
	if role == "tool" && m["tool_call_id"] != nil {
		w.ToolCallID = pyStr(m["tool_call_id"])
	}
	switch {
	case content != nil:
		w.Content = coerceText(content)
	case m["tool_calls"] == nil:
		w.Content = text
	}
	return w, nil
}

func wireToolCall(tc map[string]any, name, args any) (workload.ToolCall, error) {
	if tc["id"] == nil {
		return workload.ToolCall{}, fmt.Errorf("a tool call (%v) has no id: its result cannot name it", name)
	}
	c := workload.ToolCall{ID: pyStr(tc["id"]), Name: pyStr(name)}
	switch a := args.(type) {
	case nil:
	case string:
		c.Arguments = a
	default:
		b, _ := json.Marshal(a) // a parsed object, sent as the JSON text the API wants
		c.Arguments = string(b)
	}
	return c, nil
}

// coerceText flattens a text value that may be a list of blocks.
func coerceText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case []any:
		var b strings.Builder
		for _, x := range t {
			if blk, ok := x.(map[string]any); ok {
				if s, ok := blk["text"]; ok {
					b.WriteString(coerceText(s))
				} else {
					b.WriteString(coerceText(blk["content"]))
				}
				continue
			}
			b.WriteString(pyStr(x))
		}
		return b.String()
	}
	return pyStr(v)
}

// readOutput is a span's recorded answer: gen_ai.output.text (or
// gen_ai.completion, gen_ai.output) as plain text, else the one message of
// gen_ai.output.messages; nil when it records none.
func readOutput(a map[string]any) (*otelOutput, error) {
	for _, k := range []string{"gen_ai.output.text", "gen_ai.completion", "gen_ai.output"} {
		if s, ok := a[k].(string); ok {
			return &otelOutput{text: s}, nil
		}
	}
	raw := a["gen_ai.output.messages"]
	if s, ok := raw.(string); ok {
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return nil, fmt.Errorf("gen_ai.output.messages is not JSON: %w", err)
		}
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, nil
	}
	if len(list) == 0 {
		return nil, errors.New("gen_ai.output.messages is empty")
	}
	m, ok := list[0].(map[string]any)
	if !ok {
		return nil, nil
	}
	if len(list) > 1 {
		return nil, fmt.Errorf("gen_ai.output.messages has %d messages: want the answer's one", len(list))
	}
	out := &otelOutput{}
	var err error
	if out.text, err = outputText(m); err != nil {
		return nil, err
	}
	if parts, ok := m["parts"].([]any); ok {
		out.hasParts = true
		for _, x := range parts {
			p, ok := x.(map[string]any)
			if !ok {
				return nil, errors.New("gen_ai.output.messages: a part is not an object")
			}
			typ, _ := p["type"].(string)
			if typ == "" {
				return nil, errors.New("gen_ai.output.messages: a part has no type")
			}
			op := otelPart{typ: typ}
			if pyTruthy(p["id"]) {
				op.id = pyStr(p["id"])
			}
			if typ == "tool_call" {
				op.text = formatToolCall(p)
				if pyTruthy(p["name"]) {
					out.names = append(out.names, pyStr(p["name"]))
				}
			} else {
				t, ok := p["content"]
				if !ok {
					return nil, fmt.Errorf("gen_ai.output.messages: a %s part has no content", typ)
				}
				op.text = pyStr(t)
			}
			out.parts = append(out.parts, op)
		}
	}
	if len(out.names) == 0 {
		for _, tc := range toolCalls(m) {
			if pyTruthy(tc["name"]) {
				out.names = append(out.names, pyStr(tc["name"]))
			}
		}
	}
	return out, nil
}

// outputText is inference-perf's reconstruct_llm_output of an answer:
// its text, then its tool calls, a line each.
func outputText(m map[string]any) (string, error) {
	msg := m
	if ch, ok := m["choices"].([]any); ok && len(ch) > 0 {
		c, _ := ch[0].(map[string]any)
		if inner, ok := c["message"].(map[string]any); ok {
			msg = inner
		} else {
			msg = c
		}
	} else if inner, ok := m["message"].(map[string]any); ok {
		msg = inner
	}
	if msg == nil {
		return "", nil
	}
	var texts []string
	switch c := msg["content"].(type) {
	case string:
		if c != "" {
			texts = append(texts, c)
		}
	case []any:
		for _, x := range c {
			switch p := x.(type) {
			case string:
				texts = append(texts, p)
			case map[string]any:
				if t, ok := p["text"]; ok {
					texts = append(texts, pyStr(t))
				}
			}
		}
	}
	if parts, ok := msg["parts"].([]any); ok {
		for _, x := range parts {
			if p, ok := x.(map[string]any); ok && p["type"] == "text" {
				if t, ok := p["text"]; ok {
					texts = append(texts, pyStr(t))
				} else if t, ok := p["content"]; ok {
					texts = append(texts, pyStr(t))
				}
			}
		}
	}
	var out []string
	if t := strings.Join(texts, "\n"); t != "" {
		out = append(out, t)
	}
	for _, tc := range toolCalls(msg) {
		out = append(out, formatToolCall(tc))
	}
	if parts, ok := msg["parts"].([]any); ok {
		for _, x := range parts {
			if p, ok := x.(map[string]any); ok && p["type"] == "tool_call" {
				out = append(out, formatToolCall(p))
			}
		}
	}
	if fc, ok := msg["function_call"].(map[string]any); ok {
		out = append(out, formatToolCall(map[string]any{"name": fc["name"], "arguments": fc["arguments"]}))
	}
	return strings.Join(out, "\n"), nil
}

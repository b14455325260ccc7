package simulate

import (
	"encoding/json"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// responseFormat is the grammar spec of a load's response_format
// (inference-perf's api.response_format, as requests carry it), or nil:
// each request's output is held to it as glassbox serve holds it, and ends
// where the grammar does (serve refuses ignore_eos beside a structured
// output, so the request's ignore_eos does not apply).
func responseFormat(rf map[string]any) (*grammar.Spec, error) {
	if rf == nil {
		return nil, nil
	}
	switch rf["type"] {
	case "json_object":
		return &grammar.Spec{Kind: grammar.KindJSONObject}, nil
	case "json_schema":
		js, _ := rf["json_schema"].(map[string]any)
		schema, err := json.Marshal(js["schema"])
		if err != nil || js["schema"] == nil {
			return nil, fmt.Errorf("simulate: api.response_format needs a json_schema")
		}
		s := &grammar.Spec{Kind: grammar.KindJSON, Text: string(schema)}
		if _, err := grammar.Parse(*s); err != nil {
			return nil, fmt.Errorf("simulate: api.response_format: %w", err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("simulate: api.response_format type %v: want json_schema or json_object", rf["type"])
}

// toolFormat is the grammar spec of a request's forced tool call (a
// replayed trace's tool_choice required or a named function), as glassbox
// serve builds it: its output is the call, as long as the model writes it;
// nil when the request forces none.
func toolFormat(t *workload.ToolUse) *grammar.Spec {
	if t == nil || t.Choice == nil {
		return nil
	}
	var list []toolcall.Tool
	for _, x := range t.Tools {
		m, _ := x.(map[string]any)
		fn, _ := m["function"].(map[string]any)
		name, _ := fn["name"].(string)
		tool := toolcall.Tool{Name: name}
		if p := fn["parameters"]; p != nil {
			b, _ := json.Marshal(p)
			tool.Parameters = string(b)
		}
		list = append(list, tool)
	}
	schema := toolcall.RequiredSchema(list, true)
	if c, ok := t.Choice.(map[string]any); ok {
		fn, _ := c["function"].(map[string]any)
		for _, tool := range list {
			if tool.Name == fn["name"] {
				schema = toolcall.NamedSchema(tool)
			}
		}
	}
	return &grammar.Spec{Kind: grammar.KindJSON, Text: schema}
}

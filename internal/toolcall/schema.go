package toolcall

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Tool is what a tool choice holds output to: a function's name and its
// parameters' JSON Schema (its JSON text; empty for none).
type Tool struct {
	Name       string
	Parameters string
}

func (t Tool) params() string {
	if strings.TrimSpace(t.Parameters) == "" {
		return `{"type":"object","properties":{}}`
	}
	return t.Parameters
}

// NamedSchema is the schema of a named tool choice's output: the
// function's arguments object.
func NamedSchema(t Tool) string { return t.params() }

var localRef = regexp.MustCompile(`("\$ref"\s*:\s*")#`)

// RequiredSchema is the schema of a required tool choice's output, as vLLM
// writes it: a JSON array of {"name": …, "parameters": {…}}, one or more
// (exactly one without parallel calls), each with one tool's name and
// arguments valid against that tool's parameters. Each parameters schema
// moves under $defs, its local references following it.
func RequiredSchema(tools []Tool, parallel bool) string {
	alts, defs := callSchemas(tools, "parameters")
	limit := ""
	if !parallel {
		limit = `,"maxItems":1`
	}
	return fmt.Sprintf(`{"type":"array","minItems":1%s,"items":{"anyOf":[%s]},"$defs":{%s}}`, limit, alts, defs)
}

// HermesCall is the constraint of tool_choice auto's calls in the hermes
// format: lazy, from <tool_call> on, the body {"name": …, "arguments":
// {…}} of one of the tools, then </tool_call>.
func HermesCall(tools []Tool) (schema, trigger, suffix string) {
	alts, defs := callSchemas(tools, "arguments")
	return fmt.Sprintf(`{"anyOf":[%s],"$defs":{%s}}`, alts, defs), hermesOpen, hermesClose
}

// callSchemas are the call objects' alternatives, one per tool with its
// arguments under argsKey, and the $defs their parameters move to.
func callSchemas(tools []Tool, argsKey string) (alts, defs string) {
	var as, ds []string
	for i, t := range tools {
		name, _ := json.Marshal(t.Name)
		def := fmt.Sprintf("tool%d", i)
		as = append(as, fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},%q:{"$ref":"#/$defs/%s"}},"required":["name",%q],"additionalProperties":false}`, name, argsKey, def, argsKey))
		ds = append(ds, fmt.Sprintf(`"%s":%s`, def, localRef.ReplaceAllString(t.params(), `${1}#/$$defs/`+def)))
	}
	return strings.Join(as, ","), strings.Join(ds, ",")
}

// ParseRequired reads a required tool choice's output.
func ParseRequired(text string) ([]Call, bool) {
	var list []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil || len(list) == 0 {
		return nil, false
	}
	calls := make([]Call, len(list))
	for i, c := range list {
		calls[i] = Call{Name: c.Name, Arguments: compactJSON(c.Parameters)}
	}
	return calls, true
}

package openai

import (
	"bytes"
	"encoding/json"

	"github.com/glassbox-llm/glassbox/internal/grammar"
)

// StructuredFields are the ways a request constrains its output: OpenAI's
// response_format, vLLM's structured_outputs and its older guided_*
// spellings. At most one may be given.
type StructuredFields struct {
	ResponseFormat    *ResponseFormat    `json:"response_format"`
	StructuredOutputs *StructuredOutputs `json:"structured_outputs"`
	GuidedJSON        json.RawMessage    `json:"guided_json"`
	GuidedRegex       *string            `json:"guided_regex"`
	GuidedChoice      []string           `json:"guided_choice"`
	GuidedGrammar     *string            `json:"guided_grammar"`
}

// ResponseFormat is OpenAI's response_format.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema"`
}

// JSONSchema is response_format's json_schema. Strict or not, the output
// is held to the schema.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// StructuredOutputs is vLLM's structured_outputs (StructuredOutputsParams).
type StructuredOutputs struct {
	JSON       json.RawMessage `json:"json"` // a schema, or a string holding one
	Regex      *string         `json:"regex"`
	Choice     []string        `json:"choice"`
	Grammar    *string         `json:"grammar"`
	JSONObject *bool           `json:"json_object"`

	DisableFallback             *bool   `json:"disable_fallback"`              // there is no fallback: accepted
	DisableAdditionalProperties *bool   `json:"disable_additional_properties"` // only listed properties are generated anyway
	DisableAnyWhitespace        *bool   `json:"disable_any_whitespace"`
	WhitespacePattern           *string `json:"whitespace_pattern"`
	StructuralTag               *string `json:"structural_tag"`
}

// Constraint resolves the structured-output fields into one grammar spec
// (nil when the output is free) and the field it came from, for errors.
func (f *StructuredFields) Constraint() (*grammar.Spec, string, error) {
	var specs []*grammar.Spec
	var params []string
	add := func(param string, s *grammar.Spec) {
		specs = append(specs, s)
		params = append(params, param)
	}
	if rf := f.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "":
		case "json_object":
			add("response_format", &grammar.Spec{Kind: grammar.KindJSONObject})
		case "json_schema":
			if rf.JSONSchema == nil || isNull(rf.JSONSchema.Schema) {
				return nil, "response_format", BadRequest("response_format", "response_format json_schema needs `json_schema.schema`")
			}
			add("response_format", &grammar.Spec{Kind: grammar.KindJSON, Text: string(rf.JSONSchema.Schema)})
		case "structural_tag":
			return nil, "response_format", BadRequest("response_format", "response_format type \"structural_tag\" is not supported by glassbox")
		default:
			return nil, "response_format", BadRequest("response_format", "response_format type must be text, json_object or json_schema, got %q", rf.Type)
		}
	}
	if so := f.StructuredOutputs; so != nil {
		s, err := so.spec()
		if err != nil {
			return nil, "structured_outputs", err
		}
		if s != nil {
			add("structured_outputs", s)
		}
	}
	if !isNull(f.GuidedJSON) {
		s, err := schemaSpec("guided_json", f.GuidedJSON)
		if err != nil {
			return nil, "guided_json", err
		}
		add("guided_json", s)
	}
	if f.GuidedRegex != nil {
		add("guided_regex", &grammar.Spec{Kind: grammar.KindRegex, Text: *f.GuidedRegex})
	}
	if f.GuidedChoice != nil {
		add("guided_choice", &grammar.Spec{Kind: grammar.KindChoice, Choices: f.GuidedChoice})
	}
	if f.GuidedGrammar != nil {
		add("guided_grammar", &grammar.Spec{Kind: grammar.KindGrammar, Text: *f.GuidedGrammar})
	}
	switch len(specs) {
	case 0:
		return nil, "", nil
	case 1:
		return specs[0], params[0], nil
	}
	return nil, params[1], BadRequest(params[1], "only one kind of structured output may be given, got `%s` and `%s`", params[0], params[1])
}

func (so *StructuredOutputs) spec() (*grammar.Spec, error) {
	const param = "structured_outputs"
	switch {
	case so.DisableAnyWhitespace != nil && *so.DisableAnyWhitespace:
		return nil, BadRequest(param, "structured_outputs.disable_any_whitespace is not supported by glassbox (whitespace is bounded: at most a space, or a newline and 20 blanks, between tokens)")
	case so.WhitespacePattern != nil:
		return nil, BadRequest(param, "structured_outputs.whitespace_pattern is not supported by glassbox")
	case so.StructuralTag != nil:
		return nil, BadRequest(param, "structured_outputs.structural_tag is not supported by glassbox")
	}
	var specs []*grammar.Spec
	if !isNull(so.JSON) {
		s, err := schemaSpec(param, so.JSON)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if so.Regex != nil {
		specs = append(specs, &grammar.Spec{Kind: grammar.KindRegex, Text: *so.Regex})
	}
	if so.Choice != nil {
		specs = append(specs, &grammar.Spec{Kind: grammar.KindChoice, Choices: so.Choice})
	}
	if so.Grammar != nil {
		specs = append(specs, &grammar.Spec{Kind: grammar.KindGrammar, Text: *so.Grammar})
	}
	if so.JSONObject != nil && *so.JSONObject {
		specs = append(specs, &grammar.Spec{Kind: grammar.KindJSONObject})
	}
	switch len(specs) {
	case 0:
		return nil, nil
	case 1:
		return specs[0], nil
	}
	return nil, BadRequest(param, "structured_outputs must give exactly one of json, regex, choice, grammar and json_object")
}

// schemaSpec reads a schema given as a JSON object or as a string holding
// one (vLLM takes both).
func schemaSpec(param string, raw json.RawMessage) (*grammar.Spec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest(param, "`%s` must be a JSON schema or a string holding one", param)
		}
		raw = json.RawMessage(s)
	}
	if !json.Valid(raw) {
		return nil, BadRequest(param, "`%s` is not valid JSON", param)
	}
	return &grammar.Spec{Kind: grammar.KindJSON, Text: string(raw)}, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

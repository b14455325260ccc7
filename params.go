package glassbox

import (
	"errors"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// SamplingParams are one call's generation settings, named after vLLM's
// SamplingParams. The zero value decodes greedily up to 16 tokens; a zero
// field means its neutral value (TopP 1, TopK off, RepetitionPenalty 1).
// Note that Temperature 0 is greedy, where vLLM's unset temperature is 1.
type SamplingParams struct {
	// N is the number of completions per prompt; 0 means 1.
	N int
	// MaxTokens bounds each completion's tokens; 0 means 16 (vLLM's
	// default). The prompt plus MaxTokens must fit in the context.
	MaxTokens int
	// MinTokens are generated before EOS or a stop token may end a
	// completion.
	MinTokens int

	Temperature       float64 // in [0, 2]; 0 is greedy
	TopP              float64 // in (0, 1]; 0 means 1
	TopK              int     // 0 or -1: off
	MinP              float64 // in [0, 1]
	PresencePenalty   float64 // in [-2, 2]
	FrequencyPenalty  float64 // in [-2, 2]
	RepetitionPenalty float64 // in (0, 2]; 0 means 1

	// Seed makes sampling reproducible: completion k of a prompt uses
	// Seed+k, as glassbox serve and vLLM do. nil draws a seed per request.
	// Greedy decoding needs none.
	Seed *int64

	// Stop are strings that end a completion; the text stops before them
	// unless IncludeStopStrInOutput.
	Stop                   []string
	IncludeStopStrInOutput bool
	// StopTokenIDs are token ids that end a completion, besides EOS.
	StopTokenIDs []int
	// IgnoreEOS keeps generating past the model's end-of-sequence tokens.
	IgnoreEOS bool

	// StructuredOutputs, when set, constrains every completion's text
	// (vLLM's structured_outputs): the model can only sample what keeps
	// it valid, and it ends where the grammar does.
	StructuredOutputs *StructuredOutputs
}

// StructuredOutputs constrains the text of a completion, as vLLM's
// StructuredOutputsParams; set exactly one field. Every completion that
// ends with FinishStop is valid; one cut short by MaxTokens (FinishLength)
// is a valid beginning.
type StructuredOutputs struct {
	// JSON is a JSON Schema, as its JSON text: the completion is JSON
	// valid against it. Keywords that are not supported (multipleOf,
	// patternProperties, …) are an error naming them.
	JSON string
	// JSONObject asks for any JSON object.
	JSONObject bool
	// Regex is a regular expression the whole completion matches.
	Regex string
	// Choice is a list of texts the completion is exactly one of.
	Choice []string
	// Grammar is a GBNF grammar (llama.cpp's format, rule root).
	Grammar string
}

// spec is the grammar the structured outputs ask for.
func (s *StructuredOutputs) spec() (*grammar.Spec, error) {
	var specs []grammar.Spec
	if s.JSON != "" {
		specs = append(specs, grammar.Spec{Kind: grammar.KindJSON, Text: s.JSON})
	}
	if s.JSONObject {
		specs = append(specs, grammar.Spec{Kind: grammar.KindJSONObject})
	}
	if s.Regex != "" {
		specs = append(specs, grammar.Spec{Kind: grammar.KindRegex, Text: s.Regex})
	}
	if s.Choice != nil {
		specs = append(specs, grammar.Spec{Kind: grammar.KindChoice, Choices: s.Choice})
	}
	if s.Grammar != "" {
		specs = append(specs, grammar.Spec{Kind: grammar.KindGrammar, Text: s.Grammar})
	}
	if len(specs) != 1 {
		return nil, fmt.Errorf("SamplingParams.StructuredOutputs must set exactly one of JSON, JSONObject, Regex, Choice and Grammar, got %d", len(specs))
	}
	return &specs[0], nil
}

// request is a validated call: the engine's parameters and the rest.
type request struct {
	n           int
	params      sampling.Params
	stop        []string
	includeStop bool
	constraint  *grammar.Spec // nil: free text
	grammar     *grammar.Compiled
}

// validate resolves the defaults and checks every field with the ranges
// glassbox serve applies (sampling.Params.Validate); the context is
// checked per prompt, once it is tokenized.
func (p *SamplingParams) validate() (request, error) {
	if p.N < 0 || p.N > openai.MaxN {
		return request{}, fmt.Errorf("SamplingParams.N must be between 1 and %d (0 means 1), got %d", openai.MaxN, p.N)
	}
	sp := sampling.Params{
		Temperature: p.Temperature, TopP: p.TopP, TopK: p.TopK, MinP: p.MinP,
		PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty, RepetitionPenalty: p.RepetitionPenalty,
		MaxTokens: p.MaxTokens, MinTokens: p.MinTokens, IgnoreEOS: p.IgnoreEOS, StopTokenIDs: p.StopTokenIDs,
		Logprobs: -1,
	}
	if sp.TopP == 0 {
		sp.TopP = 1
	}
	if sp.TopK == -1 {
		sp.TopK = 0 // vLLM's "off", as is sampling's 0
	}
	if sp.RepetitionPenalty == 0 {
		sp.RepetitionPenalty = 1
	}
	if sp.MaxTokens == 0 {
		sp.MaxTokens = 16
	}
	if p.Seed != nil {
		sp.Seed, sp.HasSeed = *p.Seed, true
	}
	if err := sp.Validate(); err != nil {
		var pe *sampling.ParamError
		if errors.As(err, &pe) {
			return request{}, fmt.Errorf("SamplingParams.%s: %s", fieldNames[pe.Param], pe.Msg)
		}
		return request{}, err
	}
	req := request{n: max(p.N, 1), params: sp, stop: p.Stop, includeStop: p.IncludeStopStrInOutput}
	if p.StructuredOutputs != nil {
		spec, err := p.StructuredOutputs.spec()
		if err != nil {
			return request{}, err
		}
		switch {
		case p.IgnoreEOS:
			return request{}, errors.New("SamplingParams.IgnoreEOS cannot be combined with StructuredOutputs: the output ends where the grammar does")
		case p.MinTokens > 0:
			return request{}, errors.New("SamplingParams.MinTokens cannot be combined with StructuredOutputs: the output ends where the grammar does")
		}
		req.constraint = spec
	}
	return req, nil
}

// fieldNames maps sampling's (vLLM's) parameter names to the fields above.
var fieldNames = map[string]string{
	"temperature": "Temperature", "top_p": "TopP", "top_k": "TopK", "min_p": "MinP",
	"presence_penalty": "PresencePenalty", "frequency_penalty": "FrequencyPenalty",
	"repetition_penalty": "RepetitionPenalty", "max_tokens": "MaxTokens", "min_tokens": "MinTokens",
	"stop_token_ids": "StopTokenIDs", "logprobs": "Logprobs",
}

package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// SamplingFields are the generation parameters that completions and chat
// completions share, named as OpenAI and vLLM's extensions name them.
// Pointers tell "absent" from zero.
type SamplingFields struct {
	Model             string         `json:"model"`
	MaxTokens         *int           `json:"max_tokens"`
	Temperature       *float64       `json:"temperature"`
	TopP              *float64       `json:"top_p"`
	TopK              *int           `json:"top_k"` // -1 or 0 disables
	MinP              *float64       `json:"min_p"`
	PresencePenalty   *float64       `json:"presence_penalty"`
	FrequencyPenalty  *float64       `json:"frequency_penalty"`
	RepetitionPenalty *float64       `json:"repetition_penalty"`
	Seed              *int64         `json:"seed"`
	Stop              StopList       `json:"stop"`
	StopTokenIDs      []int          `json:"stop_token_ids"`
	N                 *int           `json:"n"`
	IgnoreEOS         bool           `json:"ignore_eos"`
	MinTokens         int            `json:"min_tokens"`
	User              string         `json:"user"`
	Stream            bool           `json:"stream"`
	StreamOptions     *StreamOptions `json:"stream_options"`

	// IncludeStopStrInOutput is vLLM's extension: keep the matched stop
	// string at the end of the text.
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output"`

	StructuredFields
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	SamplingFields
	Prompt   Prompt `json:"prompt"`
	Logprobs *int   `json:"logprobs"` // top alternatives per token, 0..20
	Echo     bool   `json:"echo"`
	// AddSpecialTokens (vLLM's, default true) adds the model's BOS to
	// text prompts.
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// ChatCompletionRequest is the body of POST /v1/chat/completions.
type ChatCompletionRequest struct {
	SamplingFields
	Messages            []ChatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"` // wins over max_tokens
	Logprobs            bool          `json:"logprobs"`
	TopLogprobs         *int          `json:"top_logprobs"` // 0..20, needs logprobs

	Tools             []Tool      `json:"tools"`
	ToolChoice        *ToolChoice `json:"tool_choice"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls"`
	// Verbosity is accepted and changes nothing, as vLLM accepts it:
	// see CheckVerbosity.
	Verbosity *string `json:"verbosity"`
}

// TokenizeRequest is the body of POST /tokenize: either a prompt or the
// messages of a chat, with the tools the template shows them, as vLLM
// accepts.
type TokenizeRequest struct {
	Model           string        `json:"model"`
	Prompt          *string       `json:"prompt"`
	Messages        []ChatMessage `json:"messages"`
	Tools           []Tool        `json:"tools"`
	ReturnTokenStrs bool          `json:"return_token_strs"`
	// AddSpecialTokens (vLLM's, default true) adds the model's BOS to a
	// prompt; chat messages follow the template either way.
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// TokenizeResponse is vLLM's answer to /tokenize.
type TokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs,omitempty"`
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string `json:"model"`
	Tokens []int  `json:"tokens"`
}

// DetokenizeResponse is vLLM's answer to /detokenize.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}

// DecodeCompletionRequest reads a completions request body.
func DecodeCompletionRequest(r io.Reader) (*CompletionRequest, error) {
	var req CompletionRequest
	if err := decodeChecked(r, &req, endpointCompletion); err != nil {
		return nil, err
	}
	return &req, nil
}

// DecodeChatRequest reads a chat completions request body.
func DecodeChatRequest(r io.Reader) (*ChatCompletionRequest, error) {
	var req ChatCompletionRequest
	if err := decodeChecked(r, &req, endpointChat); err != nil {
		return nil, err
	}
	return &req, nil
}

// decodeChecked is decode, then the refusal of every field of endpoint's
// that glassbox does not honour.
func decodeChecked(r io.Reader, v any, endpoint string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return decodeError(err)
	}
	if err := decode(bytes.NewReader(data), v); err != nil {
		return err
	}
	return checkRefused(data, endpoint)
}

// DecodeTokenizeRequest reads and checks a /tokenize body.
func DecodeTokenizeRequest(r io.Reader) (*TokenizeRequest, error) {
	var req TokenizeRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if (req.Prompt == nil) == (req.Messages == nil) {
		return nil, BadRequest("prompt", "give exactly one of `prompt` and `messages`")
	}
	if req.Tools != nil && req.Prompt != nil {
		return nil, BadRequest("tools", "`tools` are rendered with `messages` by the chat template: give `messages`, not `prompt`")
	}
	return &req, checkMessages(req.Messages, true)
}

// DecodeDetokenizeRequest reads and checks a /detokenize body.
func DecodeDetokenizeRequest(r io.Reader) (*DetokenizeRequest, error) {
	var req DetokenizeRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return &req, checkTokenIDs("tokens", req.Tokens)
}

// decode reads exactly one JSON object into v and turns every decoding
// failure into a 400 a client can act on. Unknown fields are ignored, as
// vLLM and OpenAI do.
func decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil && !isSyntax(err) {
			return decodeError(err)
		}
		return BadRequest("", "malformed JSON: unexpected data after the request object")
	}
	return nil
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF)
}

func decodeError(err error) error {
	var (
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
		api *Error
	)
	switch {
	case errors.As(err, &api):
		return api
	case errors.Is(err, io.EOF):
		return BadRequest("", "request body is empty: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("", "malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &se):
		return &Error{Status: 400, Type: TypeBadRequest, Err: err,
			Message: fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))}
	case errors.As(err, &te):
		// encoding/json names the embedded struct in the path; clients
		// know only the JSON field.
		te.Field = strings.TrimPrefix(strings.TrimPrefix(te.Field, "SamplingFields."), "StructuredFields.")
		if te.Field == "" {
			return BadRequest("", "the request body must be a JSON object, got %s", te.Value)
		}
		return &Error{Status: 400, Type: TypeBadRequest, Param: te.Field, Err: err,
			Message: fmt.Sprintf("invalid type for `%s`: expected %s, got %s", te.Field, expected(te.Type), te.Value)}
	}
	// Reading the body itself failed (too large, connection lost).
	return fmt.Errorf("read request body: %w", err)
}

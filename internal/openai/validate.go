package openai

import (
	"errors"
	"slices"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// MaxN is the most choices one request may ask for.
const MaxN = 128

// defaultCompletionMaxTokens is OpenAI's (and vLLM's) max_tokens for a
// completions request that gives none. Chat requests default to the room
// left in the context instead.
const defaultCompletionMaxTokens = 16

// Generation is a validated request's generation settings. The sampling
// parameters are complete except max_tokens, which depends on the prompt
// length: Params resolves it once the prompt is tokenized.
type Generation struct {
	Model        string // the served name the client asked for
	N            int
	Stream       bool
	IncludeUsage bool
	Echo         bool     // completions: prepend the prompt to each choice
	Logprobs     bool     // return logprobs
	Stop         []string // stop strings, for the text sink
	IncludeStop  bool
	// Constraint is the structured output asked for, or nil;
	// ConstraintParam the field it came from, for errors about it.
	Constraint      *grammar.Spec
	ConstraintParam string
	// Tools is the request's tool calling, or nil (chat only).
	Tools *Tools

	params     sampling.Params
	maxTokens  *int   // as requested
	defaultMax int    // when not requested; 0 means all the room left
	maxParam   string // the field max_tokens came from, for errors
	promptName string // "prompt" or "messages", for errors
	chat       bool
}

// Validate checks a completions request against the served model names.
func (r *CompletionRequest) Validate(served []string) (*Generation, error) {
	g, err := r.SamplingFields.generation(served)
	if err != nil {
		return nil, err
	}
	g.Echo = r.Echo
	g.maxTokens, g.maxParam, g.defaultMax, g.promptName = r.MaxTokens, "max_tokens", defaultCompletionMaxTokens, "prompt"
	if r.Logprobs != nil {
		if *r.Logprobs < 0 {
			return nil, BadRequest("logprobs", "logprobs must be between 0 and %d, got %d", sampling.MaxLogprobs, *r.Logprobs)
		}
		g.params.Logprobs = *r.Logprobs
		g.Logprobs = true
	}
	if r.Prompt.Len() == 0 {
		return nil, BadRequest("prompt", "`prompt` is required and must not be empty")
	}
	for _, ids := range r.Prompt.Tokens {
		if err := checkTokenIDs("prompt", ids); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Validate checks a chat completions request against the served model names.
func (r *ChatCompletionRequest) Validate(served []string) (*Generation, error) {
	g, err := r.SamplingFields.generation(served)
	if err != nil {
		return nil, err
	}
	g.chat, g.promptName = true, "messages"
	g.maxTokens, g.maxParam = r.MaxTokens, "max_tokens"
	if r.MaxCompletionTokens != nil {
		g.maxTokens, g.maxParam = r.MaxCompletionTokens, "max_completion_tokens"
	}
	switch {
	case r.TopLogprobs != nil && !r.Logprobs:
		return nil, BadRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true")
	case r.Logprobs:
		g.Logprobs = true
		g.params.Logprobs = 0
		if r.TopLogprobs != nil {
			g.params.Logprobs = *r.TopLogprobs
		}
	}
	if err := checkMessages(r.Messages, false); err != nil {
		return nil, err
	}
	if err := CheckVerbosity("verbosity", r.Verbosity); err != nil {
		return nil, err
	}
	if err := r.tools(g); err != nil {
		return nil, err
	}
	return g, nil
}

// generation checks the shared fields and maps them onto sampling.Params.
func (f *SamplingFields) generation(served []string) (*Generation, error) {
	g := &Generation{Model: f.Model, N: 1, Stream: f.Stream, Stop: f.Stop, IncludeStop: f.IncludeStopStrInOutput}
	if g.Model == "" && len(served) > 0 {
		g.Model = served[0] // vLLM serves the first name to a request without one
	}
	if !slices.Contains(served, g.Model) {
		return nil, ModelNotFound(f.Model)
	}
	if f.N != nil {
		g.N = *f.N
	}
	if g.N < 1 || g.N > MaxN {
		return nil, BadRequest("n", "n must be between 1 and %d, got %d", MaxN, g.N)
	}
	if f.StreamOptions != nil {
		if !f.Stream {
			return nil, BadRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.IncludeUsage = f.StreamOptions.IncludeUsage
	}
	p := sampling.Defaults()
	setIf(&p.Temperature, f.Temperature)
	setIf(&p.TopP, f.TopP)
	setIf(&p.MinP, f.MinP)
	setIf(&p.PresencePenalty, f.PresencePenalty)
	setIf(&p.FrequencyPenalty, f.FrequencyPenalty)
	setIf(&p.RepetitionPenalty, f.RepetitionPenalty)
	if f.TopK != nil && *f.TopK != -1 {
		p.TopK = *f.TopK // -1 is vLLM's "off", as is sampling's 0
	}
	if f.Seed != nil {
		p.Seed, p.HasSeed = *f.Seed, true
	}
	p.IgnoreEOS = f.IgnoreEOS
	p.MinTokens = f.MinTokens
	p.StopTokenIDs = f.StopTokenIDs
	g.params = p
	spec, param, err := f.StructuredFields.Constraint()
	if err != nil {
		return nil, err
	}
	if spec != nil {
		// The grammar decides where the output ends: EOS must stay
		// possible there, and nothing but EOS may follow.
		switch {
		case f.IgnoreEOS:
			return nil, BadRequest("ignore_eos", "ignore_eos cannot be combined with `%s`: the output ends where the grammar does", param)
		case f.MinTokens > 0:
			return nil, BadRequest("min_tokens", "min_tokens cannot be combined with `%s`: the output ends where the grammar does", param)
		}
	}
	g.Constraint, g.ConstraintParam = spec, param
	return g, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// PromptParam names the request field that holds the prompt, for errors
// about it: "prompt" or "messages".
func (g *Generation) PromptParam() string { return g.promptName }

// Params resolves the request for one tokenized prompt of promptLen
// tokens on a model with a context of maxModelLen tokens: the one place a
// request's prompt and parameters are checked. Without max_tokens, a chat
// request may use all the room left and a completions request 16 tokens of
// it; either way the prompt must leave room for at least one token.
func (g *Generation) Params(promptLen, maxModelLen int) (sampling.Params, error) {
	if promptLen == 0 {
		return sampling.Params{}, BadRequest(g.promptName, "the prompt is empty")
	}
	p := g.params
	room := maxModelLen - promptLen
	switch {
	case g.maxTokens != nil:
		p.MaxTokens = *g.maxTokens
	case room < 1:
		return sampling.Params{}, BadRequest(g.promptName,
			"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			maxModelLen, promptLen)
	default:
		p.MaxTokens = room
		if g.defaultMax > 0 {
			p.MaxTokens = min(room, g.defaultMax)
		}
	}
	if err := g.rename(p.Validate()); err != nil {
		return sampling.Params{}, err
	}
	if p.MaxTokens > room {
		return sampling.Params{}, BadRequest(g.maxParam,
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			maxModelLen, promptLen+p.MaxTokens, promptLen, p.MaxTokens)
	}
	return p, nil
}

// rename points a sampling error at the field the client actually used.
func (g *Generation) rename(err error) error {
	var pe *sampling.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	param := pe.Param
	switch {
	case param == "max_tokens":
		param = g.maxParam
	case param == "logprobs" && g.chat:
		param = "top_logprobs"
	}
	return BadRequest(param, "%s", pe.Msg)
}

func checkMessages(msgs []ChatMessage, allowEmpty bool) error {
	if len(msgs) == 0 && !allowEmpty {
		return BadRequest("messages", "`messages` is required and must not be empty")
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return BadRequest("messages", "messages[%d].role must be one of system, user, assistant, developer or tool, got %q", i, m.Role)
		}
	}
	return nil
}

func checkTokenIDs(param string, ids []int) error {
	for _, id := range ids {
		if id < 0 {
			return BadRequest(param, "token ids must be non-negative, got %d", id)
		}
	}
	return nil
}

// CheckVerbosity accepts OpenAI's verbosity values (chat's verbosity, the
// Responses API's text.verbosity). It is a preference that models trained
// for it (GPT-5) read; the models glassbox serves have no such training
// and no chat template takes it, so, as vLLM, glassbox accepts it and it
// changes nothing: max_tokens bounds an answer's length. Refusing it would
// refuse every GPT-5.x default of the Agents SDK, which sends "low".
func CheckVerbosity(param string, v *string) error {
	if v == nil || slices.Contains([]string{"low", "medium", "high"}, *v) {
		return nil
	}
	return BadRequest(param, "`%s` must be low, medium or high, got %q", param, *v)
}

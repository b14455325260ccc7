// Package sampling owns per-request sampling parameters and the samplers that
// turn a logits vector into a token (greedy, temperature, top-k, top-p, min-p,
// penalties, seeded randomness, logprobs).
//
// It is pure: no goroutines, no I/O, no clock. It must not import net/http,
// Prometheus, OpenTelemetry or any server/metrics/executor package.
package sampling

import (
	"fmt"
	"math"
)

// MaxLogprobs is the most top_logprobs a request may ask for (OpenAI's limit).
const MaxLogprobs = 20

// Params are the knobs of one sequence's generation, named as vLLM's
// SamplingParams. The zero value is not valid: use Defaults.
type Params struct {
	Temperature       float64 // 0 means greedy
	TopP              float64 // 1 disables
	TopK              int     // 0 disables
	MinP              float64 // 0 disables
	PresencePenalty   float64
	FrequencyPenalty  float64
	RepetitionPenalty float64 // 1 disables

	Seed    int64
	HasSeed bool

	MaxTokens    int   // output tokens at most; >= 1
	MinTokens    int   // EOS and stop tokens are ignored before this many outputs
	IgnoreEOS    bool  // keep generating past EOS
	StopTokenIDs []int // extra token ids that end generation

	// Logprobs is the number of top alternatives to return per output token,
	// or -1 for no logprobs at all. 0 returns only the chosen token's logprob.
	Logprobs int
}

// Defaults returns the parameters OpenAI documents for an empty request.
func Defaults() Params {
	return Params{Temperature: 1, TopP: 1, RepetitionPenalty: 1, MaxTokens: 16, Logprobs: -1}
}

// Greedy reports whether sampling reduces to argmax.
func (p *Params) Greedy() bool { return p.Temperature == 0 || p.TopK == 1 }

// ParamError names the request parameter that is out of range.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Msg }

func errorf(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every field against the ranges vLLM accepts.
func (p *Params) Validate() error {
	switch {
	case math.IsNaN(p.Temperature) || p.Temperature < 0 || p.Temperature > 2:
		return errorf("temperature", "temperature must be in [0, 2], got %v", p.Temperature)
	case math.IsNaN(p.TopP) || p.TopP <= 0 || p.TopP > 1:
		return errorf("top_p", "top_p must be in (0, 1], got %v", p.TopP)
	case p.TopK < 0:
		return errorf("top_k", "top_k must be -1 (disable) or at least 1, got %d", p.TopK)
	case math.IsNaN(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return errorf("min_p", "min_p must be in [0, 1], got %v", p.MinP)
	case math.IsNaN(p.PresencePenalty) || p.PresencePenalty < -2 || p.PresencePenalty > 2:
		return errorf("presence_penalty", "presence_penalty must be in [-2, 2], got %v", p.PresencePenalty)
	case math.IsNaN(p.FrequencyPenalty) || p.FrequencyPenalty < -2 || p.FrequencyPenalty > 2:
		return errorf("frequency_penalty", "frequency_penalty must be in [-2, 2], got %v", p.FrequencyPenalty)
	case math.IsNaN(p.RepetitionPenalty) || p.RepetitionPenalty <= 0 || p.RepetitionPenalty > 2:
		return errorf("repetition_penalty", "repetition_penalty must be in (0, 2], got %v", p.RepetitionPenalty)
	case p.MaxTokens < 1:
		return errorf("max_tokens", "max_tokens must be at least 1, got %d", p.MaxTokens)
	case p.MinTokens < 0:
		return errorf("min_tokens", "min_tokens must be at least 0, got %d", p.MinTokens)
	case p.MinTokens > p.MaxTokens:
		return errorf("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d", p.MaxTokens, p.MinTokens)
	case p.Logprobs < -1 || p.Logprobs > MaxLogprobs:
		return errorf("logprobs", "logprobs must be between 0 and %d, got %d", MaxLogprobs, p.Logprobs)
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 {
			return errorf("stop_token_ids", "stop_token_ids must be non-negative, got %d", id)
		}
	}
	return nil
}

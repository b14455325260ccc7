// Package workload is what load glassbox puts on a server, described once
// and run two ways: sent over HTTP by glassbox bench, or run in virtual time
// by glassbox simulate. It owns the datasets of vLLM's bench serve (random
// prompts of exact lengths, ShareGPT, prefix repetition, custom files), the
// arrival schedules (Poisson or gamma-bursty rates, ramps), agent sessions
// (turn by turn, or a recorded agent's call graph: graph sessions),
// request traces (Azure LLM inference, BurstGPT) and replays of a bench
// run's requests, and the Plan that holds a load: its prompts and stages,
// sessions, caps and timeouts, a saturation sweep, LoRA traffic, circuit
// breakers. One Schedule runs a plan on whatever clock its caller keeps, as
// inference-perf's client and vLLM's bench run theirs. inference-perf's
// configuration files are internal/inferenceperf's, which builds Plans.
//
// It talks to no server itself: a Tokenizer (the server's /tokenize and
// /detokenize, or a local vocabulary) counts and converts tokens. It must
// not import the engine side, bench, simulate or inferenceperf.
package workload

import "context"

// Tokenizer counts the served model's tokens in a text.
type Tokenizer interface {
	Count(ctx context.Context, text string) (int, error)
	// ID names the tokenizer for a result's tokenizer_id.
	ID() string
}

// IDTokenizer also turns text into token ids and back, which prompts of an
// exact length need: random ids are decoded, re-encoded and adjusted until
// the text has the target length, as vLLM's bench serve does.
type IDTokenizer interface {
	Tokenizer
	Encode(ctx context.Context, text string) ([]int, error) // without special tokens
	Decode(ctx context.Context, ids []int) (string, error)
	// VocabSize bounds the random ids; SpecialTokens is how many tokens
	// (a BOS) the server adds to a completion prompt.
	VocabSize() int
	SpecialTokens() int
}

// Sample is one request of a dataset.
type Sample struct {
	Prompt    string
	PromptIDs []int // the prompt's tokens when the dataset made them (special tokens excluded), else nil
	PromptLen int   // tokens, as the tokenizer counted them (the server adds its specials)
	OutputLen int   // max_tokens sent
	// Messages, when set, is a chat's conversation, sent as it is (the
	// Prompt then joins their contents, for counting).
	Messages []Message
	// Tools, when set, are a chat request's tools (a replayed trace's).
	Tools *ToolUse
}

// Message is one turn of a chat prompt: an assistant's may carry tool
// calls, a tool's result names the call it answers.
type Message struct {
	Role, Content string
	ToolCalls     []ToolCall
	ToolCallID    string
}

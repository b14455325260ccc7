package openai

import "math"

// Object names of the response types.
const (
	ObjectCompletion = "text_completion"
	ObjectChat       = "chat.completion"
	ObjectChatChunk  = "chat.completion.chunk"
)

// Usage counts the tokens of a request. For n > 1 the prompt is counted
// once and the completion tokens of every choice are summed, as OpenAI does.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails says how much of the prompt the prefix cache served.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionResponse is both the full answer of /v1/completions and, with
// one choice's delta at a time, each streamed chunk (OpenAI uses the same
// object for both). The last chunk of a stream with include_usage has no
// choices and carries Usage.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one generated sequence, or a delta of it.
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs is the legacy completions logprobs object: parallel
// arrays, one entry per token, with the top alternatives as a map from token
// text to logprob.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Add appends one token. top holds the alternatives (token text and
// logprob); offset is where the token's text starts in the choice's text.
func (l *CompletionLogprobs) Add(token string, logprob float32, top []TopLogprob, offset int) {
	l.Tokens = append(l.Tokens, token)
	l.TokenLogprobs = append(l.TokenLogprobs, Logprob(logprob))
	m := make(map[string]float64, len(top)+1)
	for _, t := range top {
		if _, ok := m[t.Token]; !ok {
			m[t.Token] = Logprob(t.Logprob)
		}
	}
	if _, ok := m[token]; !ok {
		m[token] = Logprob(logprob) // vLLM always lists the chosen token
	}
	l.TopLogprobs = append(l.TopLogprobs, m)
	l.TextOffset = append(l.TextOffset, offset)
}

// TopLogprob is one alternative token, before formatting.
type TopLogprob struct {
	Token   string
	Bytes   []byte
	Logprob float32
}

// ChatCompletionResponse is the full answer of /v1/chat/completions.
type ChatCompletionResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// ChatChoice is one generated message.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChatMessage   `json:"message"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// ChatCompletionChunk is one streamed event of /v1/chat/completions.
type ChatCompletionChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []ChatChunkChoice `json:"choices"`
	Usage   *Usage            `json:"usage,omitempty"`
}

// ChatChunkChoice is one choice's delta.
type ChatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        ChatDelta     `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// ChatDelta is the new part of the assistant's message. The first chunk of
// each choice carries the role.
type ChatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ChatLogprobs is the chat logprobs object.
type ChatLogprobs struct {
	Content []ChatTokenLogprob `json:"content"`
}

// ChatTokenLogprob is one generated token with its alternatives.
type ChatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []ChatTopLogprob `json:"top_logprobs"`
}

// ChatTopLogprob is one alternative token.
type ChatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Add appends one token and its alternatives.
func (l *ChatLogprobs) Add(token TopLogprob, top []TopLogprob) {
	e := ChatTokenLogprob{Token: token.Token, Logprob: Logprob(token.Logprob), Bytes: byteList(token.Bytes),
		TopLogprobs: make([]ChatTopLogprob, 0, len(top))}
	for _, t := range top {
		e.TopLogprobs = append(e.TopLogprobs, ChatTopLogprob{Token: t.Token, Logprob: Logprob(t.Logprob), Bytes: byteList(t.Bytes)})
	}
	l.Content = append(l.Content, e)
}

// byteList spells bytes as a JSON array of integers, as OpenAI does (a
// []byte would marshal as base64).
func byteList(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// Logprob converts a log-probability for JSON, which has no infinities:
// like vLLM, an impossible token gets -9999.
func Logprob(lp float32) float64 {
	if math.IsInf(float64(lp), -1) || math.IsNaN(float64(lp)) {
		return -9999
	}
	return float64(lp)
}

// ModelList is the answer of /v1/models.
type ModelList struct {
	Object string      `json:"object"` // "list"
	Data   []ModelCard `json:"data"`
}

// ModelCard describes one served model name, with vLLM's extra fields.
type ModelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"` // "model"
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len"`
}

// Version is the answer of /version.
type Version struct {
	Version string `json:"version"`
}

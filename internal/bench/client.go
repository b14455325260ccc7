package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Output is what one request measured: vLLM's RequestFuncOutput.
type Output struct {
	Success       bool
	Status        int // the HTTP status of the answer; 0 when none came
	Error         string
	PromptLen     int // the server's usage.prompt_tokens when it reports them, else the dataset's count
	OutputTokens  int // the server's usage.completion_tokens; 0 when it reports none
	GeneratedText string
	Start         time.Time       // when the request was sent
	TTFT          time.Duration   // to the first chunk with a choices entry
	ITL           []time.Duration // every gap between consecutive choices chunks
	Latency       time.Duration   // to the last choices chunk
	QueueTime     time.Duration   // from when it was due to when it was sent: waiting on --max-concurrency, or on the user's previous round
	Stage         int             // the inference-perf stage it belongs to (0 otherwise; a sweep's probe is -1)
	Turn          int             // its turn in its agent session, from 0 (0 without agent sessions)
	// Session is its session's user (an agent session's, or a multi-turn
	// chat's), -1 without sessions; Tool is the tool's time before this
	// turn, from the previous answer (workload.Request's).
	Session int
	Tool    time.Duration
	// SessionID and Round are its session's name and its round in it,
	// as inference-perf names them (workload.Request's); empty and 0
	// where the plan names none.
	SessionID string
	Round     int
	// Call is its graph session's call (workload.Request's), and
	// ToolCalls the tool calls its answer made.
	Call      int
	ToolCalls []workload.ToolCall
	// Unary is a request that did not stream (inference-perf's
	// api.streaming false): its one answer is its first token and its last,
	// so it has no TTFT, TPOT or ITL of its own.
	Unary bool
	// ErrorType classifies a failure as inference-perf does: "HTTP Error
	// 503", "TimeoutError", "ClientError".
	ErrorType string
	Model     string        // the model (LoRA adapter) it was sent to, when not the run's
	Due       time.Duration // when the schedule had it due, from the pass's start
	End       time.Time     // when it finished, answered or failed
	// RequestBytes is the request body's size; ErrorBody the server's
	// answer to a failed request (inference-perf reports both).
	RequestBytes int
	ErrorBody    string
	// CachedTokens is the server's usage.prompt_tokens_details.cached_tokens,
	// nil when it reports none.
	CachedTokens *int
}

// streamer sends streamed requests to one endpoint.
type streamer struct {
	client        *http.Client
	url, model    string
	chat          bool
	unary         bool // ask for the whole answer at once (inference-perf's streaming: false)
	ignoreEOS     bool
	temperature   *float64
	authorization string
	timeout       time.Duration
	now           func() time.Time
	extra         map[string]any    // more request fields (response_format)
	headers       map[string]string // more request headers (inference-perf's api.headers)
	sessionHeader string            // the header naming a session round's user
	tokenHeader   string            // the response header whose token a session's next round echoes
	tokens        sync.Map          // session → its token
}

func newStreamer(cfg *Config) *streamer {
	s := &streamer{client: cfg.HTTPClient, url: cfg.BaseURL + cfg.Endpoint, model: cfg.Model,
		chat: cfg.Backend == "openai-chat", ignoreEOS: cfg.IgnoreEOS, temperature: cfg.Temperature,
		authorization: bearer(cfg.APIKey), timeout: cfg.RequestTimeout, now: cfg.Now, extra: map[string]any{}, headers: cfg.Headers,
		sessionHeader: cfg.SessionHeader, tokenHeader: cfg.SessionTokenHeader}
	if cfg.ResponseFormat != nil {
		s.extra["response_format"] = cfg.ResponseFormat
	}
	return s
}

// body is the JSON of one request, as vLLM's request functions build it.
func (s *streamer) body(rq workload.Request) []byte {
	sm := rq.Sample
	model := s.model
	if rq.Model != "" {
		model = rq.Model
	}
	b := map[string]any{"model": model, "stream": !s.unary}
	if !s.unary {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	if s.chat {
		msgs := []map[string]any{{"role": "user", "content": sm.Prompt}}
		if sm.Messages != nil {
			msgs = msgs[:0]
			for _, m := range sm.Messages {
				msgs = append(msgs, wireMessage(m))
			}
		}
		b["messages"] = msgs
		b["max_completion_tokens"] = sm.OutputLen
	} else {
		b["prompt"] = sm.Prompt
		b["max_tokens"] = sm.OutputLen
	}
	if s.ignoreEOS {
		b["ignore_eos"] = true
	}
	if t := sm.Tools; t != nil && s.chat {
		b["tools"] = t.Tools
		if t.Choice != nil {
			b["tool_choice"] = t.Choice
		}
		if t.MaxTokens > 0 {
			// A forced tool call stops when its call is written.
			b["max_completion_tokens"] = t.MaxTokens
			delete(b, "ignore_eos")
		}
	}
	if s.temperature != nil {
		b["temperature"] = *s.temperature
	}
	for k, v := range s.extra {
		b[k] = v
	}
	out, _ := json.Marshal(b)
	return out
}

// wireMessage is a chat message as the API takes it: an assistant's tool
// calls (its content only when it has some), a tool result's call id.
func wireMessage(m workload.Message) map[string]any {
	w := map[string]any{"role": m.Role}
	if m.ToolCallID != "" {
		w["tool_call_id"] = m.ToolCallID
	}
	if len(m.ToolCalls) == 0 {
		w["content"] = m.Content
		return w
	}
	var calls []map[string]any
	for _, tc := range m.ToolCalls {
		calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
	}
	w["tool_calls"] = calls
	if m.Content != "" {
		w["content"] = m.Content
	}
	return w
}

// do sends one request and times its chunks. The clock starts just before
// the request is written; every data event with a non-empty choices list is
// a token chunk (even with empty text, as vLLM counts it); the trailing
// usage event gives the token counts and does not move the end time. A
// unary request's one answer is its only chunk.
func (s *streamer) do(ctx context.Context, rq workload.Request) (out Output) {
	out = Output{PromptLen: rq.Sample.PromptLen, Unary: s.unary, Model: rq.Model, Due: rq.Due}
	defer func() { out.End = s.now() }()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	body := s.body(rq)
	out.RequestBytes = len(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	if !s.unary {
		req.Header.Set("Accept", "text/event-stream")
	}
	if s.authorization != "" {
		req.Header.Set("Authorization", s.authorization)
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	session := sessionOf(rq)
	if session != "" {
		if s.sessionHeader != "" {
			req.Header.Set(s.sessionHeader, session)
		}
		if tok, ok := s.tokens.Load(session); ok && s.tokenHeader != "" {
			req.Header.Set(s.tokenHeader, tok.(string))
		}
	}
	out.Start = s.now()
	resp, err := s.client.Do(req)
	if err != nil {
		s.fail(ctx, &out, err)
		return out
	}
	defer resp.Body.Close()
	out.Status = resp.StatusCode
	if tok := resp.Header.Get(s.tokenHeader); s.tokenHeader != "" && tok != "" && session != "" {
		s.tokens.Store(session, tok)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		out.Error = fmt.Sprintf("status %s: %s", resp.Status, bytes.TrimSpace(msg[:min(len(msg), 512)]))
		out.ErrorType, out.ErrorBody = fmt.Sprintf("HTTP Error %d", resp.StatusCode), string(msg)
		return out
	}
	if s.unary {
		err = s.readWhole(resp.Body, &out)
	} else {
		err = s.read(resp.Body, &out)
	}
	if err != nil {
		s.fail(ctx, &out, err)
	}
	return out
}

// sessionOf is the session a request's headers name, as inference-perf's
// client names it: the plan's name for it (a recycled conversation is a
// session of its own, with a token of its own), else user_session_N.
func sessionOf(rq workload.Request) string {
	switch {
	case rq.SessionID != "":
		return rq.SessionID
	case rq.User >= 0:
		return fmt.Sprintf("user_session_%d", rq.User)
	}
	return ""
}

// fail records a transport failure, named as inference-perf names it: a
// timeout, or a client error; a cancelled request says why.
func (s *streamer) fail(ctx context.Context, out *Output, err error) {
	out.Success = false
	out.Error, out.ErrorType = err.Error(), "ClientError"
	if cause := context.Cause(ctx); cause != nil {
		out.Error = cause.Error()
		if errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, errRequestTimeout) {
			out.Error, out.ErrorType = "request timed out", "TimeoutError"
		} else {
			out.ErrorType = "CancelledError"
		}
	}
}

// errRequestTimeout is the cause of a request the schedule abandoned at
// its timeout.
var errRequestTimeout = errors.New("request timed out")

// readWhole reads a unary answer: its text and usage, all at once.
func (s *streamer) readWhole(body io.Reader, out *Output) error {
	var r struct {
		Choices []struct {
			Text    *string `json:"text"`
			Message *struct {
				Content   *string    `json:"content"`
				ToolCalls []toolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *usage `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 64<<20)).Decode(&r); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	end := s.now()
	if len(r.Choices) == 0 {
		return errors.New("the answer has no choices")
	}
	switch c := r.Choices[0]; {
	case c.Text != nil:
		out.GeneratedText = *c.Text
	case c.Message != nil && c.Message.Content != nil:
		out.GeneratedText = *c.Message.Content
	}
	if c := r.Choices[0]; c.Message != nil {
		for _, tc := range c.Message.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, workload.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	r.Usage.record(out)
	out.Latency = end.Sub(out.Start)
	out.TTFT = out.Latency
	out.Success = true
	return nil
}

// chunk is the part of a streamed completion or chat chunk bench reads.
type chunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content          *string    `json:"content"`
			ReasoningContent *string    `json:"reasoning_content"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// toolCall is a tool call of an answer, or a streamed piece of one (its
// index says which; the pieces of its arguments add up).
type toolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// addToolCall adds a streamed piece of a tool call to the answer's calls.
func addToolCall(out *Output, tc toolCall) {
	if tc.Index < 0 || tc.Index > 1024 {
		return
	}
	for len(out.ToolCalls) <= tc.Index {
		out.ToolCalls = append(out.ToolCalls, workload.ToolCall{})
	}
	c := &out.ToolCalls[tc.Index]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	c.Name += tc.Function.Name
	c.Arguments += tc.Function.Arguments
}

// usage is the token counts a server reports.
type usage struct {
	PromptTokens        *int `json:"prompt_tokens"`
	CompletionTokens    *int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// record copies the counts the server reported into out.
func (u *usage) record(out *Output) {
	if u == nil {
		return
	}
	if u.CompletionTokens != nil {
		out.OutputTokens = *u.CompletionTokens
	}
	if u.PromptTokens != nil {
		out.PromptLen = *u.PromptTokens
	}
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		out.CachedTokens = d.CachedTokens
	}
}

// read consumes the event stream. Each SSE "data:" line is one event; the
// timestamp is taken as soon as its line has arrived.
func (s *streamer) read(body io.Reader, out *Output) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var text strings.Builder
	last := out.Start
	first := true
	for {
		line, err := br.ReadBytes('\n')
		ts := s.now()
		if len(line) > 0 {
			done, perr := s.event(bytes.TrimSpace(line), ts, &last, &first, &text, out)
			if perr != nil {
				return perr
			}
			if done {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read stream: %w", err)
		}
	}
	out.GeneratedText = text.String()
	if first {
		return errors.New("never received a chunk with a choices entry")
	}
	out.Success = true
	out.Latency = last.Sub(out.Start)
	return nil
}

// event handles one line; done is true at [DONE].
func (s *streamer) event(line []byte, ts time.Time, last *time.Time, first *bool, text *strings.Builder, out *Output) (done bool, err error) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return false, nil // blank separators, comments (": ping"), event: and id: fields
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		return true, nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, fmt.Errorf("decode stream chunk: %w", err)
	}
	if c.Error != nil {
		return false, fmt.Errorf("server error mid-stream: %s", c.Error.Message)
	}
	if len(c.Choices) > 0 {
		if *first {
			*first = false
			out.TTFT = ts.Sub(out.Start)
		} else {
			out.ITL = append(out.ITL, ts.Sub(*last))
		}
		*last = ts
		ch := c.Choices[0]
		switch {
		case ch.Text != nil:
			text.WriteString(*ch.Text)
		case ch.Delta != nil && ch.Delta.Content != nil:
			text.WriteString(*ch.Delta.Content)
		}
		if ch.Delta != nil {
			for _, tc := range ch.Delta.ToolCalls {
				addToolCall(out, tc)
			}
		}
	}
	// vLLM sends usage in a chunk of its own; llama.cpp's server puts it in
	// the last chunk with choices. Read it wherever it comes.
	c.Usage.record(out)
	return false, nil
}

// firstModel asks GET /v1/models for the first model, as vLLM does when no
// --model is given.
func firstModel(ctx context.Context, cfg *Config) (string, error) {
	models, err := listModels(ctx, cfg)
	if err != nil {
		return "", err
	}
	if len(models) == 0 {
		return "", errors.New("list models: the server has none")
	}
	return models[0], nil
}

// listModels is GET /v1/models: the names the server serves (LoRA adapters
// among them).
func listModels(ctx context.Context, cfg *Config) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/v1/models", nil)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if k := bearer(cfg.APIKey); k != "" {
		req.Header.Set("Authorization", k)
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list models: status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode model list: %w", err)
	}
	var out []string
	for _, m := range list.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

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
	Stage         int             // the inference-perf stage it belongs to (0 otherwise)
}

// streamer sends streamed requests to one endpoint.
type streamer struct {
	client        *http.Client
	url, model    string
	chat          bool
	ignoreEOS     bool
	temperature   *float64
	authorization string
	timeout       time.Duration
	now           func() time.Time
}

func newStreamer(cfg *Config) *streamer {
	return &streamer{client: cfg.HTTPClient, url: cfg.BaseURL + cfg.Endpoint, model: cfg.Model,
		chat: cfg.Backend == "openai-chat", ignoreEOS: cfg.IgnoreEOS, temperature: cfg.Temperature,
		authorization: bearer(cfg.APIKey), timeout: cfg.RequestTimeout, now: cfg.Now}
}

// body is the JSON of one request, as vLLM's request functions build it.
func (s *streamer) body(sm workload.Sample) []byte {
	b := map[string]any{"model": s.model, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	if s.chat {
		b["messages"] = []map[string]any{{"role": "user", "content": sm.Prompt}}
		b["max_completion_tokens"] = sm.OutputLen
	} else {
		b["prompt"] = sm.Prompt
		b["max_tokens"] = sm.OutputLen
	}
	if s.ignoreEOS {
		b["ignore_eos"] = true
	}
	if s.temperature != nil {
		b["temperature"] = *s.temperature
	}
	out, _ := json.Marshal(b)
	return out
}

// do sends one request and times its chunks. The clock starts just before
// the request is written; every data event with a non-empty choices list is
// a token chunk (even with empty text, as vLLM counts it); the trailing
// usage event gives the token counts and does not move the end time.
func (s *streamer) do(ctx context.Context, sm workload.Sample) Output {
	out := Output{PromptLen: sm.PromptLen}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(s.body(sm)))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if s.authorization != "" {
		req.Header.Set("Authorization", s.authorization)
	}
	out.Start = s.now()
	resp, err := s.client.Do(req)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer resp.Body.Close()
	out.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		out.Error = fmt.Sprintf("status %s: %s", resp.Status, bytes.TrimSpace(msg))
		return out
	}
	if err := s.read(resp.Body, &out); err != nil {
		out.Error = err.Error()
		return out
	}
	return out
}

// chunk is the part of a streamed completion or chat chunk bench reads.
type chunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int `json:"prompt_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
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
	}
	// vLLM sends usage in a chunk of its own; llama.cpp's server puts it in
	// the last chunk with choices. Read it wherever it comes.
	if c.Usage != nil {
		if c.Usage.CompletionTokens != nil {
			out.OutputTokens = *c.Usage.CompletionTokens
		}
		if c.Usage.PromptTokens != nil {
			out.PromptLen = *c.Usage.PromptTokens
		}
	}
	return false, nil
}

// firstModel asks GET /v1/models for the first model, as vLLM does when no
// --model is given.
func firstModel(ctx context.Context, cfg *Config) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL+"/v1/models", nil)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	if k := bearer(cfg.APIKey); k != "" {
		req.Header.Set("Authorization", k)
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list models: status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return "", fmt.Errorf("decode model list: %w", err)
	}
	if len(list.Data) == 0 {
		return "", errors.New("list models: the server has none")
	}
	return list.Data[0].ID, nil
}

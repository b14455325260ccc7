package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// serverCounter asks the server's /tokenize (vLLM's and glassbox's), so
// lengths are in the served model's own tokens.
type serverCounter struct {
	client        *http.Client
	url, model    string
	authorization string
}

type tokenizeResponse struct {
	Count  *int  `json:"count"`
	Tokens []int `json:"tokens"`
}

func (s *serverCounter) ID() string { return "server:" + s.url }

func (s *serverCounter) Count(ctx context.Context, text string) (int, error) {
	// vLLM and glassbox read "prompt"; llama.cpp's server reads "content".
	body, _ := json.Marshal(map[string]any{"model": s.model, "prompt": text, "content": text, "add_special_tokens": false})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.authorization != "" {
		req.Header.Set("Authorization", s.authorization)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("tokenize: status %s", resp.Status)
	}
	var tr tokenizeResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, fmt.Errorf("decode tokenize response: %w", err)
	}
	n := len(tr.Tokens)
	if tr.Count != nil {
		n = *tr.Count
	}
	if n == 0 && text != "" {
		return 0, errors.New("tokenize: the server counted no tokens in a non-empty text")
	}
	return n, nil
}

// localCounter is the fallback when the server has no /tokenize: the common
// rule of thumb of one token per four bytes of English text, rounded up. It
// is an estimate, documented as such; the result's input totals still use
// the server's usage.prompt_tokens whenever the server reports them.
type localCounter struct{}

func (localCounter) ID() string { return "local-estimate:bytes/4" }

func (localCounter) Count(_ context.Context, text string) (int, error) {
	return estimateTokens(text), nil
}

func estimateTokens(text string) int {
	return (len(text) + 3) / 4
}

// pickCounter uses the server's /tokenize when it answers, else the local
// estimate.
func pickCounter(ctx context.Context, cfg *Config) workload.Tokenizer {
	s := &serverCounter{client: cfg.HTTPClient, url: cfg.BaseURL + "/tokenize", model: cfg.Model, authorization: bearer(cfg.APIKey)}
	if _, err := s.Count(ctx, "hello"); err != nil {
		return localCounter{}
	}
	return s
}

func bearer(key string) string {
	if key == "" {
		return ""
	}
	return "Bearer " + key
}

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
	var tr tokenizeResponse
	if err := s.post(ctx, s.url, map[string]any{"model": s.model, "prompt": text, "content": text, "add_special_tokens": false}, &tr); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
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

// pickCounter uses the server's /tokenize and /detokenize when both
// answer (prompts of exact lengths), its /tokenize alone when that does,
// else the local estimate.
func pickCounter(ctx context.Context, cfg *Config) workload.Tokenizer {
	s := &serverCounter{client: cfg.HTTPClient, url: cfg.BaseURL + "/tokenize", model: cfg.Model, authorization: bearer(cfg.APIKey)}
	if _, err := s.Count(ctx, "hello"); err != nil {
		return localCounter{}
	}
	t := &serverTokenizer{serverCounter: s, detokenize: cfg.BaseURL + "/detokenize"}
	if err := t.probe(ctx); err != nil {
		return s
	}
	return t
}

// serverTokenizer is the server's tokenizer over /tokenize and
// /detokenize (vLLM's and glassbox's endpoints).
type serverTokenizer struct {
	*serverCounter
	detokenize string
	vocab      int // ids below this detokenize
	specials   int // tokens the server adds to a completion prompt
}

var _ workload.IDTokenizer = (*serverTokenizer)(nil)

func (t *serverTokenizer) VocabSize() int     { return t.vocab }
func (t *serverTokenizer) SpecialTokens() int { return t.specials }

// probe finds the vocabulary's size (the largest id that detokenizes, by
// bisection) and how many special tokens the server adds.
func (t *serverTokenizer) probe(ctx context.Context) error {
	if _, err := t.Decode(ctx, []int{0}); err != nil {
		return err
	}
	// An id is in the vocabulary when it detokenizes to some text (a
	// server may answer "" for ids past the end instead of an error).
	known := func(id int) bool { s, err := t.Decode(ctx, []int{id}); return err == nil && s != "" }
	lo, hi := 1, 1<<20 // ids below lo are known; from hi on they are not
	for lo < hi {
		mid := (lo + hi) / 2
		if known(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	t.vocab = lo
	with, err := t.tokenize(ctx, "hello", true)
	if err != nil {
		return err
	}
	without, err := t.tokenize(ctx, "hello", false)
	if err != nil {
		return err
	}
	t.specials = max(len(with)-len(without), 0)
	return nil
}

func (t *serverTokenizer) Encode(ctx context.Context, text string) ([]int, error) {
	return t.tokenize(ctx, text, false)
}

func (t *serverTokenizer) tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	var tr tokenizeResponse
	if err := t.post(ctx, t.url, map[string]any{"model": t.model, "prompt": text, "content": text, "add_special_tokens": special}, &tr); err != nil {
		return nil, fmt.Errorf("tokenize: %w", err)
	}
	return tr.Tokens, nil
}

var _ workload.ChatFormatter = (*serverTokenizer)(nil)

// FormatChat renders a user message through the served model's chat
// template: /tokenize with the message (vLLM's and glassbox's render the
// template, the generation prompt added), then /detokenize.
func (t *serverTokenizer) FormatChat(ctx context.Context, user string) (string, error) {
	var tr tokenizeResponse
	body := map[string]any{"model": t.model, "messages": []map[string]string{{"role": "user", "content": user}}, "add_generation_prompt": true}
	if err := t.post(ctx, t.url, body, &tr); err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return t.Decode(ctx, tr.Tokens)
}

func (t *serverTokenizer) Decode(ctx context.Context, ids []int) (string, error) {
	var dr struct {
		Prompt  *string `json:"prompt"`
		Content *string `json:"content"` // llama.cpp's server
	}
	if err := t.post(ctx, t.detokenize, map[string]any{"model": t.model, "tokens": ids}, &dr); err != nil {
		return "", fmt.Errorf("detokenize: %w", err)
	}
	switch {
	case dr.Prompt != nil:
		return *dr.Prompt, nil
	case dr.Content != nil:
		return *dr.Content, nil
	}
	return "", errors.New("detokenize: the answer has no prompt")
}

// post sends body as JSON and decodes a 200 answer into out.
func (s *serverCounter) post(ctx context.Context, url string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.authorization != "" {
		req.Header.Set("Authorization", s.authorization)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func bearer(key string) string {
	if key == "" {
		return ""
	}
	return "Bearer " + key
}

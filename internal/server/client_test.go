package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/glassbox-llm/glassbox/internal/jinja"
)

// TestOfficialClientConcurrentStreams drives the server with OpenAI's own Go
// client: 100 streaming chat requests at once, each of which must parse and
// end with the token count it asked for.
func TestOfficialClientConcurrentStreams(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	client := openai.NewClient(
		option.WithBaseURL(env.url+"/v1/"),
		option.WithAPIKey("unused"),
		option.WithHTTPClient(env.srv.Client()),
		option.WithMaxRetries(0),
	)
	const requests = 100
	errs := make(chan error, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			errs <- streamOne(t, &client, i)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := env.eng.Stats().Running; got != 0 {
		t.Errorf("%d sequences still running after every stream ended", got)
	}
}

// streamOne runs request i, asking for 1 + i%20 tokens.
func streamOne(t *testing.T, client *openai.Client, i int) error {
	maxTokens := 1 + i%20
	user := fmt.Sprintf("request %d", i)
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:               modelName,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(user)},
		MaxCompletionTokens: openai.Int(int64(maxTokens)),
		StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var (
		content string
		finish  string
		usage   openai.CompletionUsage
		chunks  int
	)
	for stream.Next() {
		c := stream.Current()
		chunks++
		for _, ch := range c.Choices {
			content += ch.Delta.Content
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		if len(c.Choices) == 0 {
			usage = c.Usage
		}
	}
	if err := stream.Err(); err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	rendered := jinja.ChatML([]jinja.Message{{Role: "user", Content: user}}, true)
	switch {
	case content != letters('\n', maxTokens):
		return fmt.Errorf("request %d: content %q, want %q", i, content, letters('\n', maxTokens))
	case finish != "length":
		return fmt.Errorf("request %d: finish reason %q, want length", i, finish)
	case usage.CompletionTokens != int64(maxTokens) || usage.PromptTokens != int64(len(rendered)) ||
		usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens:
		return fmt.Errorf("request %d: usage %+v, want %d completion and %d prompt tokens", i, usage, maxTokens, len(rendered))
	case chunks < 3:
		return fmt.Errorf("request %d: only %d chunks", i, chunks)
	}
	return nil
}

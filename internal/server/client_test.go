package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

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

// TestOfficialClientStructuredOutputsAndTools: OpenAI's Go client asks for
// a JSON schema and for a named tool call, and gets what obeys them.
func TestOfficialClientStructuredOutputsAndTools(t *testing.T) {
	env := startExec(t, &randomExec{}, longContext)
	client := openai.NewClient(option.WithBaseURL(env.url+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(env.srv.Client()), option.WithMaxRetries(0))
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string", "maxLength": 8}, "age": map[string]any{"type": "integer", "minimum": 0, "maximum": 99}},
		"required": []string{"name", "age"}, "additionalProperties": false}
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: modelName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("who?")}, MaxTokens: openai.Int(200), Seed: openai.Int(4),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema, Strict: openai.Bool(true)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var person struct {
		Name *string
		Age  *int
	}
	if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &person); err != nil || person.Name == nil || person.Age == nil || *person.Age > 99 {
		t.Fatalf("content %q: %v", resp.Choices[0].Message.Content, err)
	}
	resp, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: modelName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("who?")}, MaxTokens: openai.Int(200), Seed: openai.Int(5),
		Tools:      []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "save", Parameters: schema})},
		ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "save"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "save" || json.Unmarshal([]byte(calls[0].Function.Arguments), &person) != nil || person.Age == nil {
		t.Fatalf("tool calls %+v", calls)
	}
}

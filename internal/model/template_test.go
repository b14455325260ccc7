package model

import (
	"testing"

	"github.com/glassbox-llm/glassbox/internal/jinja"
)

func TestRandomTemplateRenders(t *testing.T) {
	tools, _ := jinja.FromJSON([]byte(`{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`))
	msgs := []jinja.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []jinja.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}}, {Role: "tool", Content: "42", ToolCallID: "c1"}}
	got, err := jinja.RenderChat(chatML, msgs, jinja.ChatOptions{AddGenerationPrompt: true, Tools: []any{tools}})
	if err != nil {
		t.Fatal(err)
	}
	want := jinja.ChatMLTools(msgs, []any{tools}, true)
	if got != want {
		t.Errorf("template:\n%q\nChatMLTools:\n%q", got, want)
	}
	plain, _ := jinja.RenderChat(chatML, msgs[1:2], jinja.ChatOptions{AddGenerationPrompt: true})
	if plain != jinja.ChatML(msgs[1:2], true) {
		t.Errorf("without tools: %q", plain)
	}
}

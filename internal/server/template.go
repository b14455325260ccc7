package server

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// ChatRenderer renders a conversation with a model's chat template and
// opens the assistant's turn. tools are the request's tool definitions as
// the template sees them (nil: none).
type ChatRenderer interface {
	Render(msgs []jinja.Message, tools []any) (string, error)
}

// RenderChat renders msgs with c, or with ChatML (with tools, Hermes
// style) when c is nil, and opens the assistant's turn: the prompt the
// chat API generates from.
func RenderChat(c ChatRenderer, msgs []jinja.Message, tools []any) (string, error) {
	if c == nil {
		if tools != nil {
			return jinja.ChatMLTools(msgs, tools, true), nil
		}
		return jinja.ChatML(msgs, true), nil
	}
	text, err := c.Render(msgs, tools)
	if err != nil {
		return "", fmt.Errorf("apply chat template: %w", err)
	}
	return text, nil
}

// EncodeChat tokenizes a rendered chat prompt, which carries its own BOS
// from the template: without the special tokens a completion prompt gets
// (vLLM's add_special_tokens=False for chat), when m can tell the two apart.
func EncodeChat(m Model, text string) []int {
	if ce, ok := m.(chatEncoder); ok {
		return ce.EncodeChat(text)
	}
	return m.Encode(text)
}

// renderChat applies the configured template (ChatML without one); a
// template that cannot render these messages is the client's problem (a
// role it does not allow, say).
func (s *Server) renderChat(msgs []openai.ChatMessage, tools []any) (string, error) {
	ms := make([]jinja.Message, len(msgs))
	for i, m := range msgs {
		ms[i] = jinja.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			ms[i].ToolCalls = append(ms[i].ToolCalls, jinja.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	text, err := RenderChat(s.cfg.Chat, ms, tools)
	if err != nil {
		return "", openai.BadRequest("messages", "%s", err)
	}
	return text, nil
}

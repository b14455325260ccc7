package server

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// ChatRenderer renders a conversation with a model's chat template and
// opens the assistant's turn.
type ChatRenderer interface {
	Render(msgs []jinja.Message) (string, error)
}

// RenderChat renders msgs with c, or with ChatML when c is nil, and opens
// the assistant's turn: the prompt the chat API generates from.
func RenderChat(c ChatRenderer, msgs []jinja.Message) (string, error) {
	if c == nil {
		return jinja.ChatML(msgs, true), nil
	}
	text, err := c.Render(msgs)
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
func (s *Server) renderChat(msgs []openai.ChatMessage) (string, error) {
	ms := make([]jinja.Message, len(msgs))
	for i, m := range msgs {
		ms[i] = jinja.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	}
	text, err := RenderChat(s.cfg.Chat, ms)
	if err != nil {
		return "", openai.BadRequest("messages", "%s", err)
	}
	return text, nil
}

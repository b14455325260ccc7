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

// renderChat applies the configured template (ChatML without one); a
// template that cannot render these messages is the client's problem (a
// role it does not allow, say).
func (s *Server) renderChat(msgs []openai.ChatMessage) (string, error) {
	ms := make([]jinja.Message, len(msgs))
	for i, m := range msgs {
		ms[i] = jinja.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	}
	if s.cfg.Chat == nil {
		return jinja.ChatML(ms, true), nil
	}
	text, err := s.cfg.Chat.Render(ms)
	if err != nil {
		return "", openai.BadRequest("messages", "%s", fmt.Errorf("apply chat template: %w", err))
	}
	return text, nil
}

package server

import (
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// ChatML renders messages in the ChatML format (Qwen's and many others'
// template) and opens the assistant's turn, as add_generation_prompt does.
// It is the default when the model brings no chat template of its own.
func ChatML(msgs []openai.ChatMessage) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String(), nil
}

// renderChat applies the configured template; a template that cannot render
// these messages is the client's problem (a role it does not allow, say).
func (s *Server) renderChat(msgs []openai.ChatMessage) (string, error) {
	text, err := s.cfg.ChatTemplate(msgs)
	if err != nil {
		return "", openai.BadRequest("messages", "%s", fmt.Errorf("apply chat template: %w", err))
	}
	return text, nil
}

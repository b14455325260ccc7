package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// SSEWriter writes a server-sent event stream the way OpenAI does: one
// `data: {json}` event per chunk, then `data: [DONE]`. Every event is
// flushed at once, so a client sees each token when it is generated.
// Writes block only as long as the connection does.
type SSEWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
}

// NewSSEWriter sends the stream's headers and a 200 status.
func NewSSEWriter(w http.ResponseWriter) *SSEWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // keep nginx-style proxies from buffering the stream
	w.WriteHeader(http.StatusOK)
	return &SSEWriter{w: w, rc: http.NewResponseController(w)}
}

// Send writes v as one event.
func (s *SSEWriter) Send(v any) error {
	s.buf.Reset()
	s.buf.WriteString("data: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	// Encode ends with one newline; an event ends with a blank line.
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

// SendEvent writes v as one event named name (`event: name`), as the
// Responses API streams.
func (s *SSEWriter) SendEvent(name string, v any) error {
	s.buf.Reset()
	s.buf.WriteString("event: ")
	s.buf.WriteString(name)
	s.buf.WriteString("\ndata: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

// SendError writes an error event, for a failure after the stream started
// (the status line is already out), as vLLM does.
func (s *SSEWriter) SendError(err error) error {
	return s.Send(AsError(err).Body())
}

// Done writes the terminating `data: [DONE]` event.
func (s *SSEWriter) Done() error {
	return s.write([]byte("data: [DONE]\n\n"))
}

func (s *SSEWriter) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("flush event: %w", err)
	}
	return nil
}

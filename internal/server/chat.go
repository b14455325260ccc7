package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	serveGeneration(s, w, r, openai.DecodeChatRequest, s.prepareChat, s.streamChat, s.respondChat)
}

// prepareChat validates the request, renders the conversation with the chat
// template and tokenizes it.
func (s *Server) prepareChat(req *openai.ChatCompletionRequest, arrival time.Time) (*job, error) {
	gen, err := req.Validate(s.modelNames())
	if err != nil {
		return nil, err
	}
	var tools []any
	if gen.Tools != nil {
		if gen.Tools.Mode == "auto" && s.cfg.ToolParser == "" {
			return nil, openai.BadRequest("tool_choice", `"auto" tool choice needs a tool-call parser, and this model's chat template shows no tool format glassbox reads: `+
				`start glassbox serve with --tool-call-parser (%s), or ask for tool_choice "required" or a named function`, strings.Join(toolcall.Parsers(), ", "))
		}
		tools = gen.Tools.Defs
		if gen.Tools.Mode == "auto" && s.cfg.ToolParser == toolcall.Hermes && gen.Constraint == nil {
			// The calls, not the prose, are held to the tools' schemas,
			// from <tool_call> on (llama.cpp's lazy grammar; vLLM leaves
			// auto's calls unchecked). The simulated model reads the
			// trigger to decide when it calls a tool.
			schema, trigger, suffix := toolcall.HermesCall(gen.Tools.List)
			gen.Constraint, gen.ConstraintParam = &grammar.Spec{Kind: grammar.KindJSON, Text: schema, Suffix: suffix, Trigger: trigger}, "tools"
		}
	}
	text, err := s.renderChat(req.Messages, tools)
	if err != nil {
		return nil, err
	}
	j := newJob(true, gen, arrival)
	if err := s.compile(j); err != nil {
		return nil, err
	}
	if err := s.addPrompt(j, s.encodeChat(text), text); err != nil {
		return nil, err
	}
	return j, nil
}

// chatChunk is one streamed event for one choice.
func (j *job) chatChunk(index int, delta openai.ChatDelta, lp *openai.ChatLogprobs, finish *string) openai.ChatCompletionChunk {
	return openai.ChatCompletionChunk{
		ID: j.id, Object: openai.ObjectChatChunk, Created: j.created, Model: j.gen.Model,
		Choices: []openai.ChatChunkChoice{{Index: index, Delta: delta, Logprobs: lp, FinishReason: finish}},
	}
}

// streamChat sends each output as a delta as it comes. As vLLM, a choice's
// first chunk carries the assistant role and comes with its first output,
// so a client's time to first token means the first token. With tools,
// content and tool-call deltas come as the choice's tool reader splits
// them.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, j *job) {
	sse := openai.NewSSEWriter(w)
	roleSent := make([]bool, len(j.choices))
	readers := s.toolReaders(j)
	err := s.run(r.Context(), j, func(ev event) error {
		if !roleSent[ev.index] {
			roleSent[ev.index] = true
			if err := sse.Send(j.chatChunk(ev.index, openai.ChatDelta{Role: "assistant"}, nil, nil)); err != nil {
				return err
			}
		}
		content, calls := readers[ev.index].read(ev.out.Text)
		lp := s.chatLogprobs(j, &ev.out)
		finish := finishReason(&ev.out)
		if finish != nil {
			var more string
			var moreCalls []openai.ToolCallDelta
			more, moreCalls, *finish = readers[ev.index].finish(*finish)
			content += more
			calls = append(calls, moreCalls...)
		}
		if content == "" && len(calls) == 0 && finish == nil && lp == nil {
			return nil // everything was held back (a possible stop string or tool call)
		}
		delta := openai.ChatDelta{Content: content, ToolCalls: calls}
		chunk := j.chatChunk(ev.index, delta, lp, finish)
		return sse.Send(timedChatChunk{chunk, j.chunkTiming(&ev)})
	})
	s.endStream(r, sse, j, err)
}

// toolReaders gives each choice its reader of tool calls.
func (s *Server) toolReaders(j *job) []*toolReader {
	readers := make([]*toolReader, len(j.choices))
	for i := range readers {
		readers[i] = newToolReader(j.gen.Tools, s.cfg.ToolParser)
	}
	return readers
}

// respondChat waits for every choice and writes one response.
func (s *Server) respondChat(w http.ResponseWriter, r *http.Request, j *job) {
	texts := make([]strings.Builder, len(j.choices))
	logprobs := make([]*openai.ChatLogprobs, len(j.choices))
	reasons := make([]*string, len(j.choices))
	err := s.run(r.Context(), j, func(ev event) error {
		texts[ev.index].WriteString(ev.out.Text)
		if lp := s.chatLogprobs(j, &ev.out); lp != nil {
			if logprobs[ev.index] == nil {
				logprobs[ev.index] = lp
			} else {
				logprobs[ev.index].Content = append(logprobs[ev.index].Content, lp.Content...)
			}
		}
		reasons[ev.index] = finishReason(&ev.out)
		return nil
	})
	if err != nil {
		s.endResponse(w, r, j, err)
		return
	}
	resp := openai.ChatCompletionResponse{ID: j.id, Object: openai.ObjectChat, Created: j.created,
		Model: j.gen.Model, Choices: make([]openai.ChatChoice, len(j.choices)), Usage: j.usage()}
	readers := s.toolReaders(j)
	for i := range resp.Choices {
		content, deltas := readers[i].read(texts[i].String())
		more, moreDeltas, reason := readers[i].finish(*reasons[i])
		msg := openai.ChatMessage{Role: "assistant", Content: content + more, ToolCalls: compactCalls(mergeCalls(nil, append(deltas, moreDeltas...)))}
		resp.Choices[i] = openai.ChatChoice{Index: i, Message: msg, Logprobs: logprobs[i], FinishReason: &reason}
	}
	s.writeJSON(w, r, timedChat{resp, j.timings()})
}

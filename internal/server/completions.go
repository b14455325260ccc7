package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/openai"
)

// serveGeneration is the shape every generation route shares: decode the
// body, prepare the job (validate, render, tokenize), submit it, then
// stream its outputs or answer them whole. Each failure before the first
// byte is answered once, by s.fail, with OpenAI's error body; after
// submit, stream and respond own the answer (and the group's abort).
func serveGeneration[Req any](s *Server, w http.ResponseWriter, r *http.Request,
	decode func(io.Reader) (Req, error), prepare func(Req, time.Time) (*job, error),
	stream, respond func(http.ResponseWriter, *http.Request, *job)) {
	arrival := time.Now()
	req, err := decode(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := prepare(req, arrival)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j.readHeaders(r)
	if err := s.submit(j); err != nil {
		s.fail(w, r, err)
		return
	}
	if j.gen.Stream {
		stream(w, r, j)
		return
	}
	respond(w, r, j)
}

// handleCompletions serves POST /v1/completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	serveGeneration(s, w, r, openai.DecodeCompletionRequest, s.prepareCompletion, s.streamCompletion, s.respondCompletion)
}

// prepareCompletion validates the request and tokenizes its prompts.
func (s *Server) prepareCompletion(req *openai.CompletionRequest, arrival time.Time) (*job, error) {
	gen, err := req.Validate(s.modelNames())
	if err != nil {
		return nil, err
	}
	j := newJob(false, gen, arrival)
	if err := s.compile(j); err != nil {
		return nil, err
	}
	encode := s.model.Encode
	if req.AddSpecialTokens != nil && !*req.AddSpecialTokens {
		encode = s.encodeChat // as a template writes: no BOS added
	}
	for _, text := range req.Prompt.Texts {
		if err := s.addPrompt(j, encode(text), text); err != nil {
			return nil, err
		}
	}
	for _, ids := range req.Prompt.Tokens {
		if err := s.addPrompt(j, ids, ""); err != nil {
			return nil, err
		}
		if gen.Echo {
			j.prompts[len(j.prompts)-1].text = s.model.Decode(ids)
		}
	}
	return j, nil
}

// completionChunk is one streamed event for one choice.
func (j *job) completionChunk(index int, text string, lp *openai.CompletionLogprobs, finish *string) openai.CompletionResponse {
	return openai.CompletionResponse{
		ID: j.id, Object: openai.ObjectCompletion, Created: j.created, Model: j.gen.Model,
		Choices: []openai.CompletionChoice{{Index: index, Text: text, Logprobs: lp, FinishReason: finish}},
	}
}

// streamCompletion sends each output as an SSE chunk as it comes.
func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, j *job) {
	sse := openai.NewSSEWriter(w)
	if j.gen.Echo {
		for i := range j.choices {
			c := &j.choices[i]
			text := j.prompts[c.prompt].text
			c.offset = len(text)
			if err := sse.Send(j.completionChunk(i, text, nil, nil)); err != nil {
				j.group.Abort()
				return
			}
		}
	}
	err := s.run(r.Context(), j, func(ev event) error {
		c := &j.choices[ev.index]
		lp := s.completionLogprobs(j, c, &ev.out, nil)
		if ev.out.Text == "" && !ev.out.Finished && len(ev.out.Logprobs) == 0 {
			return nil // everything was held back (a possible stop string)
		}
		chunk := j.completionChunk(ev.index, ev.out.Text, lp, finishReason(&ev.out))
		return sse.Send(timedCompletion{chunk, j.chunkTiming(&ev)})
	})
	s.endStream(r, sse, j, err)
}

// endStream sends the usage chunk and [DONE], or the error that ended the
// stream. A client that left gets nothing more.
func (s *Server) endStream(r *http.Request, sse *openai.SSEWriter, j *job, err error) {
	var oe *outputError
	switch {
	case errors.As(err, &oe):
		s.generationFailed(r, j.id, oe.err)
		if sse.SendError(oe.err) != nil {
			return
		}
	case err != nil:
		s.log.DebugContext(r.Context(), "stream ended early", "id", j.id, "err", err)
		return
	case j.gen.IncludeUsage:
		if sse.Send(j.usageChunk()) != nil {
			return
		}
	}
	_ = sse.Done() // nothing more to do if the client left now
}

// usageChunk is the last chunk of a stream with include_usage: no choices,
// the whole request's usage.
func (j *job) usageChunk() any {
	if j.chat {
		return openai.ChatCompletionChunk{ID: j.id, Object: openai.ObjectChatChunk, Created: j.created,
			Model: j.gen.Model, Choices: []openai.ChatChunkChoice{}, Usage: j.usage()}
	}
	return openai.CompletionResponse{ID: j.id, Object: openai.ObjectCompletion, Created: j.created,
		Model: j.gen.Model, Choices: []openai.CompletionChoice{}, Usage: j.usage()}
}

// respondCompletion waits for every choice and writes one response.
func (s *Server) respondCompletion(w http.ResponseWriter, r *http.Request, j *job) {
	texts := make([]strings.Builder, len(j.choices))
	logprobs := make([]*openai.CompletionLogprobs, len(j.choices))
	reasons := make([]*string, len(j.choices))
	for i := range j.choices {
		c := &j.choices[i]
		if j.gen.Echo {
			texts[i].WriteString(j.prompts[c.prompt].text)
			c.offset = texts[i].Len()
		}
	}
	err := s.run(r.Context(), j, func(ev event) error {
		texts[ev.index].WriteString(ev.out.Text)
		logprobs[ev.index] = s.completionLogprobs(j, &j.choices[ev.index], &ev.out, logprobs[ev.index])
		reasons[ev.index] = finishReason(&ev.out)
		return nil
	})
	if err != nil {
		s.endResponse(w, r, j, err)
		return
	}
	resp := openai.CompletionResponse{ID: j.id, Object: openai.ObjectCompletion, Created: j.created,
		Model: j.gen.Model, Choices: make([]openai.CompletionChoice, len(j.choices)), Usage: j.usage()}
	for i := range resp.Choices {
		resp.Choices[i] = openai.CompletionChoice{Index: i, Text: texts[i].String(), Logprobs: logprobs[i], FinishReason: reasons[i]}
	}
	s.writeJSON(w, r, timedCompletion{resp, j.timings()})
}

// endResponse reports a non-streaming request that did not complete: an
// engine failure is a 500; a client that left gets nothing.
func (s *Server) endResponse(w http.ResponseWriter, r *http.Request, j *job, err error) {
	var oe *outputError
	if !errors.As(err, &oe) {
		s.log.DebugContext(r.Context(), "client left", "id", j.id, "err", err)
		return
	}
	s.fail(w, r, oe)
}

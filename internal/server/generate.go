package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// job is one validated generation request: its prompts, and once submitted,
// an engine group of n choices per prompt. Choice i*n+j is sample j of
// prompt i.
type job struct {
	id      string // "cmpl-…" or "chatcmpl-…"; choices are id-<choice>
	chat    bool
	created int64
	arrival time.Time
	gen     *openai.Generation
	grammar *grammar.Compiled // the structured output's, or nil
	prompts []prompt
	group   *engine.Group
	choices []choice

	traceParent, traceState string // W3C trace context of the HTTP request
	wantTiming              bool   // the client asked for the timing breakdown
}

// prompt is one tokenized prompt.
type prompt struct {
	ids    []int
	text   string // for echo
	params sampling.Params
}

// choice is what one engine sequence produced so far.
type choice struct {
	prompt int

	tokens   int // generated so far
	offset   int // bytes of text so far, for completions text_offset
	finished bool
	cached   int           // prompt tokens served by the prefix cache
	timing   engine.Timing // from the final output
}

// event is one output of one choice.
type event struct {
	index int
	out   engine.Output
}

// outputError is an engine failure reported on a stream, as opposed to the
// client going away.
type outputError struct{ err error }

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// compile prepares the request's structured output, if it asked for one:
// a grammar the request cannot have is a 400 naming its field.
func (s *Server) compile(j *job) error {
	if j.gen.Constraint == nil {
		return nil
	}
	if s.cfg.Grammars.Vocab().Size() == 0 {
		if j.gen.Constraint.Trigger != "" {
			j.gen.Constraint = nil // auto's calls unchecked: the vocabulary is unknown
			return nil
		}
		return openai.BadRequest(j.gen.ConstraintParam, "this model's vocabulary is unknown: structured outputs are not available")
	}
	c, err := s.cfg.Grammars.Get(*j.gen.Constraint)
	if err != nil && j.gen.Constraint.Trigger != "" {
		// auto's calls are served unchecked, as vLLM serves them, when
		// their schemas have what the grammar does not build.
		s.log.Debug("tool calls not held to their schemas", "err", err)
		j.gen.Constraint = nil
		return nil
	}
	if err != nil {
		return openai.BadRequest(j.gen.ConstraintParam, "%s", err)
	}
	j.grammar = c
	return nil
}

func newJob(chat bool, gen *openai.Generation, arrival time.Time) *job {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	return &job{id: prefix + hex.EncodeToString(b[:]), chat: chat, created: arrival.Unix(), arrival: arrival, gen: gen}
}

// addPrompt checks one tokenized prompt against the vocabulary and the
// context, and resolves its sampling parameters.
func (s *Server) addPrompt(j *job, ids []int, text string) error {
	if err := s.checkVocab("prompt", ids); err != nil {
		return err
	}
	p, err := j.gen.Params(len(ids), s.maxModelLen)
	if err != nil {
		return err
	}
	j.prompts = append(j.prompts, prompt{ids: ids, text: text, params: p})
	return nil
}

// submit queues the job's choices as one engine group. The server does not
// wait for room: a full queue is a 503 the client may retry, and nothing
// of the job stays queued.
func (s *Server) submit(j *job) error {
	j.group = s.eng.NewGroup(j.id, j.gen.N)
	j.choices = make([]choice, 0, len(j.prompts)*j.gen.N)
	for i, p := range j.prompts {
		base := engine.Request{
			Prompt: p.ids, Params: p.params, Arrival: j.arrival, LoRA: s.adapter(j.gen.Model),
			TraceParent: j.traceParent, TraceState: j.traceState,
		}
		if len(j.prompts) > 1 {
			base.Group = fmt.Sprintf("%s-%d", j.id, i) // one parent request per prompt, as vLLM numbers them
		}
		err := j.group.Add(base, func(_ int, r *engine.Request) {
			r.Sink = tokenizer.NewTextSink(s.model, j.gen.Stop, j.gen.IncludeStop)
			switch {
			case j.grammar == nil:
			case j.gen.Constraint.Trigger != "":
				r.Constraint = j.grammar.NewLazy(j.gen.Constraint.Trigger)
			case j.gen.Tools != nil && j.gen.Tools.Mode == "required":
				r.Constraint = callListMatcher{j.grammar.NewMatcher()}
			default:
				r.Constraint = j.grammar.NewMatcher()
			}
		})
		if err != nil {
			j.group.Abort()
			return fmt.Errorf("submit %s: %w", j.id, err)
		}
		for range j.gen.N {
			j.choices = append(j.choices, choice{prompt: i})
		}
	}
	return nil
}

// run delivers every choice's outputs to emit, in the order they arrive,
// until all choices finished. When ctx ends (the client left) or emit fails,
// it aborts the unfinished choices and returns the error at once: the
// engine frees their blocks whether or not anyone reads their last
// outputs, so a handler never waits out a step. An engine failure on any choice ends the whole request as an
// *outputError. When the client is slow, the engine merges outputs in the
// streams rather than wait.
func (s *Server) run(ctx context.Context, j *job, emit func(event) error) error {
	defer j.group.Abort()
	for left := len(j.choices); left > 0; {
		m, out, ok := j.group.Next(ctx)
		if !ok {
			return ctx.Err()
		}
		c := &j.choices[m]
		c.tokens += len(out.Tokens)
		c.cached = out.CachedTokens
		if out.Finished {
			c.finished = true
			c.timing = out.Timing
			left--
		}
		// A failed output is reported as an error, not as a choice
		// that finished with the reason "error", which clients do not know;
		// the tokens merged into it (a slow reader's) go out first.
		if out.Err != nil {
			if len(out.Tokens) > 0 || out.Text != "" {
				partial := out
				partial.Finished, partial.FinishReason, partial.Err = false, "", nil
				if err := emit(event{index: m, out: partial}); err != nil {
					return err
				}
			}
			return &outputError{out.Err}
		}
		if err := emit(event{index: m, out: out}); err != nil {
			return err
		}
	}
	return nil
}

// usage counts each prompt once and every choice's generated tokens.
func (j *job) usage() *openai.Usage {
	u := &openai.Usage{}
	cached := 0
	for i, p := range j.prompts {
		u.PromptTokens += len(p.ids)
		cached += j.choices[i*j.gen.N].cached
	}
	for _, c := range j.choices {
		u.CompletionTokens += c.tokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: cached}
	return u
}

// finishReason is the wire value for a finished output, or nil.
func finishReason(out *engine.Output) *string {
	if !out.Finished {
		return nil
	}
	r := string(out.FinishReason)
	return &r
}

// top converts a token for the logprobs objects.
func (s *Server) top(id int, lp float32) openai.TopLogprob {
	return openai.TopLogprob{Token: s.model.TokenString(id), Bytes: s.model.TokenBytes(id), Logprob: lp}
}

// chatLogprobs formats the logprobs of one output, or nil.
func (s *Server) chatLogprobs(j *job, out *engine.Output) *openai.ChatLogprobs {
	if !j.gen.Logprobs {
		return nil
	}
	l := &openai.ChatLogprobs{Content: []openai.ChatTokenLogprob{}}
	for _, r := range out.Logprobs {
		alts := make([]openai.TopLogprob, 0, len(r.Top))
		for _, t := range r.Top {
			alts = append(alts, s.top(t.Token, t.Logprob))
		}
		l.Add(s.top(r.Token, r.Logprob), alts)
	}
	return l
}

// completionLogprobs appends the logprobs of one output to l (allocated
// when nil) and advances the choice's text offset.
func (s *Server) completionLogprobs(j *job, c *choice, out *engine.Output, l *openai.CompletionLogprobs) *openai.CompletionLogprobs {
	if !j.gen.Logprobs {
		return nil
	}
	if l == nil {
		l = &openai.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	}
	for _, r := range out.Logprobs {
		alts := make([]openai.TopLogprob, 0, len(r.Top))
		for _, t := range r.Top {
			alts = append(alts, s.top(t.Token, t.Logprob))
		}
		l.Add(s.model.TokenString(r.Token), r.Logprob, alts, c.offset)
		c.offset += len(s.model.TokenBytes(r.Token))
	}
	return l
}

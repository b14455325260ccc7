package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// job is one validated generation request: its prompts, and once submitted,
// one engine request per choice. Choice i*n+j is sample j of prompt i.
type job struct {
	id      string // "cmpl-…" or "chatcmpl-…"; children are id-<choice>
	chat    bool
	created int64
	arrival time.Time
	gen     *openai.Generation
	prompts []prompt
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

// choice is one engine request and what it produced so far.
type choice struct {
	id     string
	prompt int
	stream *engine.Stream

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

// submit queues one engine request per choice. If one is refused, those
// already queued are aborted and the error is returned.
func (s *Server) submit(j *job) error {
	n := j.gen.N
	j.choices = make([]choice, 0, len(j.prompts)*n)
	for i, p := range j.prompts {
		for k := range n {
			params := p.params
			if params.HasSeed {
				// Seeded samples of one prompt must still differ, as in vLLM.
				params.Seed += int64(k)
			}
			req := &engine.Request{
				ID:        fmt.Sprintf("%s-%d", j.id, len(j.choices)),
				Prompt:    p.ids,
				Params:    params,
				Sink:      tokenizer.NewTextSink(s.model, j.gen.Stop, j.gen.IncludeStop),
				Group:     j.id,
				GroupSize: n,
				Arrival:   j.arrival,

				TraceParent: j.traceParent,
				TraceState:  j.traceState,
			}
			st, err := s.eng.Submit(req)
			if err != nil {
				s.abort(j)
				return fmt.Errorf("submit %s: %w", req.ID, err)
			}
			j.choices = append(j.choices, choice{id: req.ID, prompt: i, stream: st})
		}
	}
	return nil
}

// abort ends every unfinished choice at once, freeing their KV blocks.
func (s *Server) abort(j *job) {
	for i := range j.choices {
		if !j.choices[i].finished {
			s.eng.Abort(j.choices[i].id)
		}
	}
}

// run delivers every choice's outputs to emit, in the order they arrive,
// until all choices finished. When ctx ends (the client left) or emit fails,
// it aborts the unfinished choices and returns the error. An engine failure
// on any choice ends the whole request as an *outputError.
//
// One goroutine per choice waits on its stream; they hand events to this
// goroutine, which alone touches the job and writes to the client. When the
// client is slow, the engine merges outputs in the stream rather than wait.
func (s *Server) run(ctx context.Context, j *job, emit func(event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan event)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := range j.choices {
		st := j.choices[i].stream
		wg.Go(func() {
			for {
				out, ok := st.Next(ctx)
				if !ok {
					return
				}
				select {
				case events <- event{index: i, out: out}:
				case <-ctx.Done():
					return
				}
				if out.Finished {
					return
				}
			}
		})
	}
	for left := len(j.choices); left > 0; {
		select {
		case ev := <-events:
			c := &j.choices[ev.index]
			c.tokens += len(ev.out.Tokens)
			c.cached = ev.out.CachedTokens
			if ev.out.Finished {
				c.finished = true
				c.timing = ev.out.Timing
				left--
			}
			// A failed output is reported as an error, not as a choice
			// that finished with the reason "error", which clients do not know.
			var err error
			if ev.out.Err != nil {
				err = &outputError{ev.out.Err}
			} else {
				err = emit(ev)
			}
			if err != nil {
				s.abort(j)
				return err
			}
		case <-ctx.Done():
			s.abort(j)
			return ctx.Err()
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

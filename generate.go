package glassbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// Output is one prompt's result, as vLLM's RequestOutput.
type Output struct {
	// Prompt is the prompt as given, or for Chat the conversation rendered
	// by the chat template; PromptTokenIDs is what the model read.
	Prompt         string
	PromptTokenIDs []int
	// CachedTokens are the prompt tokens whose KV came from the prefix
	// cache (of the first completion).
	CachedTokens int
	// Completions are SamplingParams.N completions, by Index.
	Completions []Completion
}

// Completion is one generated sequence, as vLLM's CompletionOutput. From
// Stream it is a delta: the text and tokens since the previous Completion
// of the same Index, with FinishReason and Timing set on its last.
type Completion struct {
	Index        int // 0 ≤ Index < SamplingParams.N
	Text         string
	TokenIDs     []int
	FinishReason FinishReason // empty until the completion has ended
	Timing       Timing
}

// FinishReason is why a completion ended, with vLLM's values.
type FinishReason string

const (
	FinishStop   FinishReason = "stop"   // EOS, a stop token or a stop string
	FinishLength FinishReason = "length" // MaxTokens or the context reached
)

// Timing is one completion's timeline on the engine's clock. A field is
// zero where the completion never got that far.
type Timing struct {
	Arrival        time.Time // submitted to the engine
	FirstScheduled time.Time // first given a step (the end of its queueing)
	FirstToken     time.Time
	LastToken      time.Time
	Finished       time.Time
	// Preemptions counts the times its KV blocks were taken back for
	// others and later recomputed.
	Preemptions int
}

func timing(t engine.Timing) Timing {
	return Timing{Arrival: t.Arrival, FirstScheduled: t.FirstScheduled, FirstToken: t.FirstToken,
		LastToken: t.LastToken, Finished: t.Finished, Preemptions: t.Preemptions}
}

// Message is one turn of a conversation for Chat.
type Message struct {
	Role    string // system, user, assistant, developer or tool
	Content string
}

// Generate completes every prompt with params: all are submitted to the
// engine at once, which batches them continuously, and Generate returns
// when all have finished, with the outputs in prompt order. Batched
// outputs equal one-by-one ones (greedy, or with a Seed).
//
// Invalid params, an empty prompt or one that leaves no room for MaxTokens
// (ErrPromptTooLong) fail the call before anything is submitted. When ctx
// is done, Generate aborts every unfinished request, frees their KV blocks
// and returns ctx's error (its cause).
func (l *LLM) Generate(ctx context.Context, prompts []string, params SamplingParams) ([]Output, error) {
	if err := l.begin(); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	defer l.running.Done()
	req, err := params.validate()
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	ps := make([]input, len(prompts))
	for i, text := range prompts {
		ps[i] = input{text: text, ids: l.rep.Tokenizer.Encode(text)}
		if err := l.check(&req, ps[i].ids); err != nil {
			return nil, fmt.Errorf("generate: prompt %d: %w", i, err)
		}
	}
	outs, err := l.run(ctx, req, ps)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	return outs, nil
}

// Chat completes every conversation with params as Generate does, each
// rendered by the model's chat template (ChatML on the simulator) with the
// assistant's turn opened, as /v1/chat/completions renders it.
func (l *LLM) Chat(ctx context.Context, conversations [][]Message, params SamplingParams) ([]Output, error) {
	if err := l.begin(); err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	defer l.running.Done()
	req, err := params.validate()
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	ps := make([]input, len(conversations))
	for i, msgs := range conversations {
		if ps[i], err = l.chatPrompt(&req, msgs); err != nil {
			return nil, fmt.Errorf("chat: conversation %d: %w", i, err)
		}
	}
	outs, err := l.run(ctx, req, ps)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	return outs, nil
}

// input is one tokenized prompt.
type input struct {
	text string
	ids  []int
}

// chatPrompt renders and tokenizes one conversation, and checks it.
func (l *LLM) chatPrompt(req *request, msgs []Message) (input, error) {
	if len(msgs) == 0 {
		return input{}, errors.New("the conversation has no messages")
	}
	ms := make([]jinja.Message, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return input{}, fmt.Errorf("message %d: role must be system, user, assistant, developer or tool, got %q", i, m.Role)
		}
		ms[i] = jinja.Message{Role: m.Role, Content: m.Content}
	}
	text, ids, err := l.rep.ChatPrompt(ms)
	if err != nil {
		return input{}, err
	}
	return input{text: text, ids: ids}, l.check(req, ids)
}

// check is the context-length rule: a non-empty prompt with room for
// MaxTokens after it.
func (l *LLM) check(req *request, ids []int) error {
	switch {
	case len(ids) == 0:
		return errors.New("the prompt is empty")
	case req.params.MaxTokens > l.maxModelLen-len(ids): // not len+MaxTokens, which a huge MaxTokens wraps
		return fmt.Errorf("%d prompt tokens plus SamplingParams.MaxTokens=%d exceed the context of %d tokens (Options.MaxModelLen): %w",
			len(ids), req.params.MaxTokens, l.maxModelLen, ErrPromptTooLong)
	}
	return nil
}

// run submits every completion of every prompt, then collects them in
// order. When the engine's queue is full it collects the oldest first, to
// make room, or, with none of its own outstanding, waits for the engine
// to admit other callers' requests.
func (l *LLM) run(ctx context.Context, req request, prompts []input) ([]Output, error) {
	ctx, cancel := l.callContext(ctx)
	defer cancel()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	j := l.newJob(req, prompts)
	outs := make([]Output, len(prompts))
	for i, p := range prompts {
		outs[i] = Output{Prompt: p.text, PromptTokenIDs: p.ids, Completions: make([]Completion, req.n)}
	}
	next := 0 // the first choice not yet collected
	collect := func() error {
		o := &outs[next/req.n]
		c := &o.Completions[next%req.n]
		err := j.collect(ctx, next, c)
		if err == nil && c.Index == 0 {
			o.CachedTokens = j.cached[next]
		}
		next++
		return err
	}
	for c := range len(j.streams) {
		for wait := time.Millisecond; ; {
			err := j.submit(c)
			if err == nil {
				break
			}
			if !errors.Is(err, engine.ErrOverloaded) {
				j.abort()
				return nil, err
			}
			if next < c { // make room by taking this call's oldest
				if err := collect(); err != nil {
					j.abort()
					return nil, err
				}
				continue
			}
			// Other callers fill the queue: wait for the engine to admit theirs.
			select {
			case <-ctx.Done():
				j.abort()
				return nil, context.Cause(ctx)
			case <-time.After(wait):
				wait = min(2*wait, 50*time.Millisecond)
			}
		}
	}
	for next < len(j.streams) {
		if err := collect(); err != nil {
			j.abort()
			return nil, err
		}
	}
	return outs, nil
}

// job is one call's engine requests: choice i*n+k is completion k of
// prompt i. Only the calling goroutine touches it.
type job struct {
	l       *LLM
	id      string
	req     request
	prompts []input
	streams []*engine.Stream // nil until submitted
	done    []bool           // the final output was taken
	cached  []int            // prompt tokens served from the prefix cache
}

func (l *LLM) newJob(req request, prompts []input) *job {
	n := len(prompts) * req.n
	return &job{l: l, id: fmt.Sprintf("lib-%d", l.calls.Add(1)), req: req, prompts: prompts,
		streams: make([]*engine.Stream, n), done: make([]bool, n), cached: make([]int, n)}
}

// submit queues choice c.
func (j *job) submit(c int) error {
	p := j.prompts[c/j.req.n]
	r := &engine.Request{
		ID:        fmt.Sprintf("%s-%d", j.id, c),
		Prompt:    p.ids,
		Params:    j.req.paramsFor(c % j.req.n),
		Sink:      tokenizer.NewTextSink(j.l.rep.Tokenizer, j.req.stop, j.req.includeStop),
		Group:     fmt.Sprintf("%s-p%d", j.id, c/j.req.n),
		GroupSize: j.req.n,
	}
	st, err := j.l.rep.Engine.Submit(r)
	if err != nil {
		return err
	}
	j.streams[c] = st
	return nil
}

// collect takes choice c's outputs until its last, into out.
func (j *job) collect(ctx context.Context, c int, out *Completion) error {
	var text strings.Builder
	for {
		o, ok := j.streams[c].Next(ctx)
		if !ok {
			return cmpErr(context.Cause(ctx), ErrClosed)
		}
		out.TokenIDs = append(out.TokenIDs, o.Tokens...)
		text.WriteString(o.Text)
		if !o.Finished {
			continue
		}
		j.done[c] = true
		if err := j.final(c, &o); err != nil {
			return err
		}
		out.Index, out.Text = c%j.req.n, text.String()
		out.FinishReason, out.Timing = FinishReason(o.FinishReason), timing(o.Timing)
		return nil
	}
}

// final checks choice c's last output: an executor failure fails the
// call, and an abort the caller did not ask for means the engine stopped.
func (j *job) final(c int, o *engine.Output) error {
	j.cached[c] = o.CachedTokens
	switch {
	case o.Err != nil:
		return fmt.Errorf("prompt %d: %w", c/j.req.n, o.Err)
	case o.FinishReason == engine.FinishAbort:
		return ErrClosed
	}
	return nil
}

// abort ends every unfinished choice and waits for its final output, so
// that its KV blocks are free when abort returns. The engine delivers one
// to every submitted request, aborted or shut down.
func (j *job) abort() {
	for c, st := range j.streams {
		if st != nil && !j.done[c] {
			j.l.rep.Engine.Abort(st.ID())
		}
	}
	for c, st := range j.streams {
		if st == nil || j.done[c] {
			continue
		}
		for {
			o, ok := st.Next(context.Background())
			if !ok || o.Finished {
				break
			}
		}
		j.done[c] = true
	}
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

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
	req, err := l.validate(&params)
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
	req, err := l.validate(&params)
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

// validate checks params and compiles their structured outputs.
func (l *LLM) validate(params *SamplingParams) (request, error) {
	req, err := params.validate()
	if err != nil || req.constraint == nil {
		return req, err
	}
	if req.grammar, err = l.rep.Grammars.Get(*req.constraint); err != nil {
		return request{}, fmt.Errorf("SamplingParams.StructuredOutputs: %w", err)
	}
	return req, nil
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

// run submits every completion of every prompt as one engine group, then
// collects them. When the engine's queue is full it waits for room (the
// engine signals when it admits queued requests, its own or other
// callers'); outputs meanwhile wait in the engine's streams.
func (l *LLM) run(ctx context.Context, req request, prompts []input) ([]Output, error) {
	ctx, cancel := l.callContext(ctx)
	defer cancel()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	g := l.newGroup(req)
	defer g.Close()
	for i := range prompts {
		if err := l.add(ctx, g, req, prompts[i], i); err != nil {
			return nil, err
		}
	}
	outs := make([]Output, len(prompts))
	texts := make([]strings.Builder, len(prompts)*req.n)
	for i, p := range prompts {
		outs[i] = Output{Prompt: p.text, PromptTokenIDs: p.ids, Completions: make([]Completion, req.n)}
	}
	for left := g.Len(); left > 0; {
		m, o, ok := g.Next(ctx)
		if !ok {
			return nil, cmpErr(context.Cause(ctx), ErrClosed)
		}
		out := &outs[m/req.n]
		c := &out.Completions[m%req.n]
		c.TokenIDs = append(c.TokenIDs, o.Tokens...)
		texts[m].WriteString(o.Text)
		if !o.Finished {
			continue
		}
		left--
		if err := finalErr(m/req.n, &o); err != nil {
			return nil, err
		}
		c.Index, c.Text = m%req.n, texts[m].String()
		c.FinishReason, c.Timing = FinishReason(o.FinishReason), timing(o.Timing)
		if c.Index == 0 {
			out.CachedTokens = o.CachedTokens
		}
	}
	return outs, nil
}

// newGroup starts one call's engine group.
func (l *LLM) newGroup(req request) *engine.Group {
	return l.rep.Engine.NewGroup(fmt.Sprintf("lib-%d", l.calls.Add(1)), req.n)
}

// add submits the completions of prompt i, waiting for room in the
// engine's queue while it is full.
func (l *LLM) add(ctx context.Context, g *engine.Group, req request, p input, i int) error {
	base := engine.Request{Prompt: p.ids, Params: req.params}
	if i > 0 {
		base.Group = fmt.Sprintf("%s-p%d", g.ID(), i) // one parent request per prompt
	}
	each := req.member(l)
	for {
		err := g.Add(base, each)
		if !errors.Is(err, engine.ErrOverloaded) {
			return err
		}
		if err := l.rep.Engine.AwaitRoom(ctx, req.n); err != nil {
			if errors.Is(err, engine.ErrClosed) {
				return ErrClosed
			}
			return err
		}
	}
}

// member sets up one engine request of the call: its text sink and, for
// structured outputs, its own matcher.
func (req *request) member(l *LLM) func(int, *engine.Request) {
	return func(_ int, r *engine.Request) {
		r.Sink = tokenizer.NewTextSink(l.rep.Tokenizer, req.stop, req.includeStop)
		if req.grammar != nil {
			r.Constraint = req.grammar.NewMatcher()
		}
	}
}

// finalErr checks a completion's last output: an executor failure fails
// the call, and an abort the caller did not ask for means the engine
// stopped.
func finalErr(prompt int, o *engine.Output) error {
	switch {
	case o.Err != nil:
		return fmt.Errorf("prompt %d: %w", prompt, o.Err)
	case o.FinishReason == engine.FinishAbort:
		return ErrClosed
	}
	return nil
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

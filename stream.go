package glassbox

import (
	"context"
	"fmt"
	"iter"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// Stream generates from one prompt token by token. Ranging over the
// sequence submits the prompt (each range submits it anew) and yields
// deltas as the engine produces them: for each of the SamplingParams.N
// completions, in the order they come, Completions whose Text and
// TokenIDs are what is new since the previous one of the same Index, the
// last with FinishReason and Timing set. Concatenated, a completion's
// deltas equal what Generate returns for it.
//
//	for c, err := range llm.Stream(ctx, "Once upon a time", params) {
//		if err != nil {
//			return err
//		}
//		fmt.Print(c.Text)
//	}
//
// An error ends the sequence: it is yielded once, with a zero Completion.
// Breaking out of the loop, or ctx ending, aborts what is unfinished and
// frees its KV blocks before the loop statement returns. A full engine
// queue is ErrOverloaded.
func (l *LLM) Stream(ctx context.Context, prompt string, params SamplingParams) iter.Seq2[Completion, error] {
	return l.stream(ctx, "stream", params, func(req *request) (input, error) {
		p := input{text: prompt, ids: l.rep.Tokenizer.Encode(prompt)}
		return p, l.check(req, p.ids)
	})
}

// StreamChat is Stream for one conversation, rendered as Chat renders it.
func (l *LLM) StreamChat(ctx context.Context, conversation []Message, params SamplingParams) iter.Seq2[Completion, error] {
	return l.stream(ctx, "stream chat", params, func(req *request) (input, error) {
		return l.chatPrompt(req, conversation)
	})
}

func (l *LLM) stream(ctx context.Context, op string, params SamplingParams, tokenize func(*request) (input, error)) iter.Seq2[Completion, error] {
	return func(yield func(Completion, error) bool) {
		if err := l.begin(); err != nil {
			yield(Completion{}, fmt.Errorf("%s: %w", op, err))
			return
		}
		defer l.running.Done()
		if err := l.streamJob(ctx, params, tokenize, yield); err != nil {
			yield(Completion{}, fmt.Errorf("%s: %w", op, err))
		}
	}
}

// streamJob submits the prompt's completions as one engine group and
// yields their outputs; every unfinished completion has been aborted and
// has ended when it returns.
func (l *LLM) streamJob(ctx context.Context, params SamplingParams, tokenize func(*request) (input, error), yield func(Completion, error) bool) (err error) {
	req, err := l.validate(&params)
	if err != nil {
		return err
	}
	p, err := tokenize(&req)
	if err != nil {
		return err
	}
	ctx, cancel := l.callContext(ctx)
	defer cancel()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	g := l.newGroup(req)
	defer g.Close()
	err = g.Add(engine.Request{Prompt: p.ids, Params: req.params}, req.member(l))
	if err != nil {
		return err
	}
	for left := g.Len(); left > 0; {
		m, o, ok := g.Next(ctx)
		if !ok {
			return cmpErr(context.Cause(ctx), ErrClosed)
		}
		delta := Completion{Index: m, Text: o.Text, TokenIDs: o.Tokens}
		if o.Finished {
			left--
			if err := finalErr(0, &o); err != nil {
				return err
			}
			delta.FinishReason, delta.Timing = FinishReason(o.FinishReason), timing(o.Timing)
		} else if o.Text == "" && len(o.Tokens) == 0 {
			continue
		}
		if !yield(delta, nil) {
			return nil
		}
	}
	return nil
}

package glassbox

import (
	"context"
	"fmt"
	"iter"
	"sync"

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

// event is one output of one choice.
type event struct {
	choice int
	out    engine.Output
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

// streamJob submits the prompt's completions and yields their outputs. One
// goroutine per completion waits on its engine stream and hands outputs to
// this one, which alone touches the job and calls yield; all of them have
// ended, and every unfinished completion is aborted, when it returns.
func (l *LLM) streamJob(ctx context.Context, params SamplingParams, tokenize func(*request) (input, error), yield func(Completion, error) bool) (err error) {
	req, err := params.validate()
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
	j := l.newJob(req, []input{p})
	for c := range j.streams {
		if err := j.submit(c); err != nil {
			j.abort()
			return err
		}
	}

	readers, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait() // before abort reads the streams itself
		j.abort()
	}()
	events := make(chan event)
	for c, st := range j.streams {
		wg.Go(func() {
			for {
				out, ok := st.Next(readers)
				if !ok {
					return
				}
				select {
				case events <- event{choice: c, out: out}:
				case <-readers.Done():
					return
				}
				if out.Finished {
					return
				}
			}
		})
	}
	for left := len(j.streams); left > 0; {
		select {
		case ev := <-events:
			o := &ev.out
			delta := Completion{Index: ev.choice, Text: o.Text, TokenIDs: o.Tokens}
			if o.Finished {
				j.done[ev.choice] = true
				left--
				if err := j.final(ev.choice, o); err != nil {
					return err
				}
				delta.FinishReason, delta.Timing = FinishReason(o.FinishReason), timing(o.Timing)
			} else if o.Text == "" && len(o.Tokens) == 0 {
				continue
			}
			if !yield(delta, nil) {
				return nil
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Graph sessions are agent traffic replayed from a trace of what an agent
// did (inference-perf's otel_trace_replay): each session is one recorded
// run, its LLM calls a graph. A call goes once every call it depends on
// has answered and the recorded time after the last of them has passed (a
// tool, the agent's own work): several calls that wait on one answer fan
// out together, and a call that waits on several joins them. Its prompt
// is the recorded conversation with what its predecessors really answered
// in place of what the trace recorded them answering (segments), so
// contexts grow and share prefixes as the agent's did. Each session runs
// on its own clock, as agent sessions do; the Schedule runs them
// (schedule_graph.go) for bench and simulate alike.

// GraphPlan makes a plan's requests the calls of graph sessions. The
// plan's stages each start Stage.Sessions sessions, in order, from where
// the stage before left off, as inference-perf's trace_session_replay
// does: at most the stage's MaxConcurrency at once (0: no cap), a new one
// no sooner than 1/Rate after the one before (Rate 0: no limit), and the
// stage ends when every session it started has (a failed session ends at
// its first failure, and the stage's end cancels what its other branches
// still have in flight), or at Timeout (when positive) with everything
// still in flight cancelled.
type GraphPlan struct {
	Sessions []GraphSession
	// Recorded sends every call's recorded messages as they are, its
	// predecessors' answers not substituted (inference-perf's
	// disable_output_substitution); the calls still wait on them.
	Recorded bool
	// BadToolCalls, when set, replaces a live answer whose tool calls'
	// arguments are not JSON with the recorded message in its successors
	// (bad_tool_call_handling: use_recorded).
	BadToolCalls bool
	// WaitTimeout, when positive, fails a session whose call has waited
	// that long from the session's start for its predecessors
	// (predecessor_wait_timeout_sec).
	WaitTimeout time.Duration
}

// GraphSession is one recorded run.
type GraphSession struct {
	ID     string      // its name in reports and the session header
	Source string      // where it was read from
	Calls  []GraphCall // in the order they started in the trace
}

// GraphCall is one LLM call of a session.
type GraphCall struct {
	ID    string        // the trace's name for it
	After []int         // the calls it waits for, all before it
	Wait  time.Duration // after the last of them answered
	// Messages are the call's recorded conversation; Segments say which
	// of them are a predecessor's (and whose), in order, covering them all.
	Messages []Message
	Segments []Segment
	// Tokens are each recorded message's tokens, IDs their ids when the
	// plan's tokenizer converts ids (else nil).
	Tokens []int
	IDs    [][]int
	// OutputLen is max_tokens: what the call recorded answering.
	OutputLen int
	// Tools are the tools the call offered, ToolText their tokens as text
	// (what the simulator prices for them), and ToolNames the tools the
	// recorded answer called, when it called any.
	Tools     *ToolUse
	ToolText  Sample
	ToolNames []string
	// Depth is the longest chain of calls before it: the turn it is.
	Depth int
}

// Segment is a run of a call's messages.
type Segment struct {
	Kind  SegmentKind
	Count int // messages
	From  int // the predecessor call (Shared and Output)
}

// SegmentKind says where a segment's messages come from.
type SegmentKind int

const (
	// Unique messages are the call's own, sent as recorded.
	Unique SegmentKind = iota
	// Shared messages are the first Count messages From sent.
	Shared
	// Output is one assistant message: what From answered.
	Output
)

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID, Name, Arguments string
}

// ToolUse is a chat request's tools, as its body carries them.
type ToolUse struct {
	Tools  []any // the "tools" list
	Choice any   // tool_choice, nil for the server's default
	// MaxTokens, when positive, is max_tokens in place of the sample's
	// OutputLen, with ignore_eos off: a forced tool call's room.
	MaxTokens int
}

// Check refuses a session the schedule cannot run: a call waiting on
// itself or a later call, segments that do not cover its messages or
// name no predecessor.
func (s *GraphSession) Check() error {
	if len(s.Calls) == 0 {
		return fmt.Errorf("graph session %s: no calls", s.ID)
	}
	for i, c := range s.Calls {
		preds := map[int]bool{}
		for _, j := range c.After {
			if j < 0 || j >= i {
				return fmt.Errorf("graph session %s: call %s waits for call %d, not one before it", s.ID, c.ID, j)
			}
			preds[j] = true
		}
		n := 0
		for _, sg := range c.Segments {
			if sg.Count < 0 || (sg.Kind == Output && sg.Count != 1) {
				return fmt.Errorf("graph session %s: call %s: a segment of %d messages", s.ID, c.ID, sg.Count)
			}
			if sg.Kind != Unique && (sg.From < 0 || sg.From >= i) {
				return fmt.Errorf("graph session %s: call %s: a segment from call %d, not one before it", s.ID, c.ID, sg.From)
			}
			n += sg.Count
		}
		if n != len(c.Messages) || len(c.Tokens) != len(c.Messages) || (c.IDs != nil && len(c.IDs) != len(c.Messages)) {
			return fmt.Errorf("graph session %s: call %s: segments of %d messages for %d", s.ID, c.ID, n, len(c.Messages))
		}
		if c.OutputLen < 1 {
			return fmt.Errorf("graph session %s: call %s: max_tokens %d", s.ID, c.ID, c.OutputLen)
		}
	}
	return nil
}

// SetDepths sets each call's Depth from its predecessors.
func (s *GraphSession) SetDepths() {
	for i := range s.Calls {
		d := 0
		for _, j := range s.Calls[i].After {
			d = max(d, s.Calls[j].Depth+1)
		}
		s.Calls[i].Depth = d
	}
}

// MessageText is a message as text, to count its tokens and to stand for
// it in a prompt the simulator reads: its content, then its tool calls.
func MessageText(m Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tc.Name)
		b.WriteByte(' ')
		b.WriteString(tc.Arguments)
	}
	return b.String()
}

// CountMessages fills c.Tokens (and, with an IDTokenizer, c.IDs) from its
// messages, and ToolText from its tools. memo keeps what a text counted
// (its ids and length), for the many messages calls share.
func (c *GraphCall) CountMessages(ctx context.Context, tk Tokenizer, memo map[string]Sample) error {
	it, ids := tk.(IDTokenizer)
	count := func(text string) (Sample, error) {
		if s, ok := memo[text]; ok {
			return s, nil
		}
		s := Sample{Prompt: text}
		var err error
		if ids {
			s.PromptIDs, err = it.Encode(ctx, text)
			s.PromptLen = len(s.PromptIDs)
		} else {
			s.PromptLen, err = tk.Count(ctx, text)
		}
		if err == nil {
			memo[text] = s
		}
		return s, err
	}
	c.Tokens = make([]int, len(c.Messages))
	c.IDs = nil
	if ids {
		c.IDs = make([][]int, len(c.Messages))
	}
	for i, m := range c.Messages {
		s, err := count(MessageText(m))
		if err != nil {
			return fmt.Errorf("count call %s: %w", c.ID, err)
		}
		c.Tokens[i] = s.PromptLen
		if ids {
			c.IDs[i] = s.PromptIDs
		}
	}
	if c.Tools != nil && len(c.Tools.Tools) > 0 {
		b, err := json.Marshal(c.Tools.Tools)
		if err != nil {
			return fmt.Errorf("count call %s's tools: %w", c.ID, err)
		}
		if c.ToolText, err = count(string(b)); err != nil {
			return fmt.Errorf("count call %s's tools: %w", c.ID, err)
		}
	}
	return nil
}

// GraphCalls is how many calls the plan's graph sessions have (0 without).
func (p *Plan) GraphCalls() int {
	if p.Graph == nil {
		return 0
	}
	n := 0
	for _, s := range p.Graph.Sessions {
		n += len(s.Calls)
	}
	return n
}

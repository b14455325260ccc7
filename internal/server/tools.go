package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/toolcall"
)

// toolReader reads one choice's text as its request's tool choice says:
// "auto" through the model family's parser, "required" as the JSON array
// its grammar holds it to, a named function as that function's arguments,
// "none" (or no tools) as plain content. Streaming and not, it hands out
// the message as content and tool-call deltas as OpenAI streams them: a
// call's first delta has its index, id, type and name, its arguments
// follow. A required choice's calls come out as they are generated, so
// one that completed is never lost when max_tokens cuts the output, and
// the call it cut keeps the arguments it got (finish_reason "length"), as
// OpenAI returns it.
type toolReader struct {
	tools    *openai.Tools
	stream   *toolcall.Stream  // auto
	required *toolcall.Scanner // required
	calls    int               // calls handed out
}

func newToolReader(tools *openai.Tools, parser string) *toolReader {
	r := &toolReader{tools: tools}
	switch {
	case tools == nil:
	case tools.Mode == "auto":
		r.stream = toolcall.NewStream(parser)
	case tools.Mode == "required":
		r.required = toolcall.NewScanner(true, "parameters")
	}
	return r
}

// mode is the tool choice, "none" without tools.
func (r *toolReader) mode() string {
	if r.tools == nil {
		return "none"
	}
	return r.tools.Mode
}

// read takes the choice's next text.
func (r *toolReader) read(text string) (string, []openai.ToolCallDelta) {
	switch r.mode() {
	case "auto":
		content, calls := r.stream.Write(text)
		return content, r.deltas(calls)
	case "required":
		return "", r.pieces(r.required.Write(text))
	case "function":
		var out []openai.ToolCallDelta
		if r.calls == 0 {
			out = r.deltas([]toolcall.Call{{Name: r.tools.Name}})
			out[0].Function.Arguments = text
		} else if text != "" {
			out = []openai.ToolCallDelta{{Index: 0, Function: openai.FunctionCallDelta{Arguments: text}}}
		}
		return "", out
	}
	return text, nil
}

// finish ends the choice: what was held back, and the finish reason as
// tool calling reports it ("tool_calls" when auto or required produced
// calls and the output ended by itself; a named choice stays "stop", as
// OpenAI reports it).
func (r *toolReader) finish(reason string) (string, []openai.ToolCallDelta, string) {
	var content string
	var deltas []openai.ToolCallDelta
	switch r.mode() {
	case "auto":
		var calls []toolcall.Call
		content, calls = r.stream.Close(reason == "length")
		deltas = r.deltas(calls)
	case "function":
		if r.calls == 0 {
			deltas = r.deltas([]toolcall.Call{{Name: r.tools.Name}})
		}
	}
	if r.calls > 0 && reason == "stop" && r.mode() != "function" {
		reason = "tool_calls"
	}
	return content, deltas, reason
}

// deltas numbers new calls and gives them ids; without parallel calls
// only the first is handed out.
func (r *toolReader) deltas(calls []toolcall.Call) []openai.ToolCallDelta {
	var out []openai.ToolCallDelta
	for _, c := range calls {
		if r.calls > 0 && !r.tools.Parallel {
			break
		}
		out = append(out, openai.ToolCallDelta{Index: r.calls, ID: newCallID(), Type: "function",
			Function: openai.FunctionCallDelta{Name: c.Name, Arguments: c.Arguments}})
		r.calls++
	}
	return out
}

// pieces turns a required choice's scanned pieces into deltas: a call's
// first piece gets its index and id; without parallel calls only the
// first call is handed out.
func (r *toolReader) pieces(ps []toolcall.Piece) []openai.ToolCallDelta {
	var out []openai.ToolCallDelta
	for _, p := range ps {
		if p.Call > 0 && !r.tools.Parallel {
			continue
		}
		if p.Name != "" {
			out = append(out, openai.ToolCallDelta{Index: r.calls, ID: newCallID(), Type: "function",
				Function: openai.FunctionCallDelta{Name: p.Name, Arguments: p.Args}})
			r.calls++
			continue
		}
		out = append(out, openai.ToolCallDelta{Index: r.calls - 1, Function: openai.FunctionCallDelta{Arguments: p.Args}})
	}
	return out
}

// compactCalls writes the arguments of a whole answer's calls without
// insignificant whitespace; a call cut short keeps the text it got.
func compactCalls(calls []openai.ToolCall) []openai.ToolCall {
	for i := range calls {
		var b bytes.Buffer
		if json.Compact(&b, []byte(calls[i].Function.Arguments)) == nil {
			calls[i].Function.Arguments = b.String()
		}
	}
	return calls
}

// callListMatcher is a required tool choice's matcher, marked as a list
// of calls for the simulated model, which ends such lists as models do.
type callListMatcher struct{ *grammar.Matcher }

// ToolCallList reports that the output is a list of tool calls.
func (callListMatcher) ToolCallList() bool { return true }

// mergeCalls folds deltas into whole calls, for a non-streaming answer.
func mergeCalls(calls []openai.ToolCall, deltas []openai.ToolCallDelta) []openai.ToolCall {
	for _, d := range deltas {
		if d.ID != "" {
			calls = append(calls, openai.ToolCall{ID: d.ID, Type: d.Type, Function: openai.FunctionCall{Name: d.Function.Name}})
		}
		if n := len(calls); n > 0 {
			calls[n-1].Function.Arguments += d.Function.Arguments
		}
	}
	return calls
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "call_" + hex.EncodeToString(b[:])
}

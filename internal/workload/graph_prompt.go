package workload

import "encoding/json"

// graphSample is call r's request: its recorded messages with its
// predecessors' live answers and sent messages in place of theirs, as
// inference-perf substitutes them, and the tool_call_ids of the tool
// results after a live tool call rewritten to the live calls' ids.
func (s *Schedule) graphSample(r Request) Sample {
	g := s.p.Graph
	sess := &g.Sessions[r.User]
	call := &sess.Calls[r.Call]
	run := s.g.runs[r.User]
	msgs := s.substitute(call, run)
	run.calls[r.Call].sent = msgs
	sm := Sample{OutputLen: call.OutputLen, Tools: call.Tools, Messages: make([]Message, len(msgs)), PromptLen: call.ToolText.PromptLen}
	// The ids, when every part has them (a live answer read as text has
	// none): a fresh slice, as the parts' are shared.
	withIDs := call.ToolText.PromptLen == 0 || call.ToolText.PromptIDs != nil
	ids := append([]int(nil), call.ToolText.PromptIDs...)
	text := []byte(call.ToolText.Prompt)
	for i, m := range msgs {
		sm.Messages[i] = m.Message
		if len(text) > 0 {
			text = append(text, ' ')
		}
		text = append(text, MessageText(m.Message)...)
		sm.PromptLen += m.tokens
		withIDs = withIDs && (m.ids != nil || m.tokens == 0)
		if withIDs {
			if len(ids) > 0 {
				ids = append(ids, s.p.Separator...)
			}
			ids = append(ids, m.ids...)
		}
	}
	sm.Prompt = string(text)
	if withIDs && len(ids) > 0 {
		sm.PromptIDs = ids
	}
	return sm
}

// substitute builds a call's messages from its segments.
func (s *Schedule) substitute(call *GraphCall, run *graphRun) []sentMessage {
	recorded := func(from, n int) []sentMessage {
		out := make([]sentMessage, n)
		for i := range n {
			out[i] = sentMessage{Message: call.Messages[from+i], tokens: call.Tokens[from+i]}
			if call.IDs != nil {
				out[i].ids = call.IDs[from+i]
			}
		}
		return out
	}
	if s.p.Graph.Recorded {
		return recorded(0, len(call.Messages))
	}
	type rewrite struct {
		at    int
		live  []ToolCall
		names []string
	}
	var out []sentMessage
	var rewrites []rewrite
	cursor := 0
	for _, sg := range call.Segments {
		rec := recorded(cursor, sg.Count)
		cursor += sg.Count
		switch sg.Kind {
		case Shared:
			if prev := run.calls[sg.From].sent; len(prev) >= sg.Count {
				rec = prev[:sg.Count]
			}
		case Output:
			live := run.calls[sg.From].answer
			if s.p.Graph.BadToolCalls && badArguments(live.ToolCalls) {
				break // the recorded message, whose ids its tool results name
			}
			if len(live.ToolCalls) > 0 {
				var names []string
				for _, tc := range rec[0].ToolCalls {
					names = append(names, tc.Name)
				}
				rewrites = append(rewrites, rewrite{len(out), live.ToolCalls, names})
			}
			rec = []sentMessage{live}
		}
		out = append(out, rec...)
	}
	for _, rw := range rewrites {
		bound := len(rw.names)
		if bound == 0 {
			bound = len(rw.live)
		}
		used := make([]bool, len(rw.live))
		k := 0
		for i := rw.at + 1; i < len(out) && k < bound; i++ {
			if out[i].Role != "tool" {
				continue
			}
			match := -1
			if len(rw.names) == 0 {
				match = k
			} else {
				for j, tc := range rw.live {
					if !used[j] && tc.Name == rw.names[k] {
						match = j
						break
					}
				}
			}
			if match >= 0 {
				used[match] = true
				if id := rw.live[match].ID; id != "" {
					out[i].ToolCallID = id // out[i] is a copy: the sent message changes, not the recording
				}
			}
			k++
		}
	}
	return out
}

// badArguments reports whether a tool call's arguments are not JSON.
func badArguments(calls []ToolCall) bool {
	for _, tc := range calls {
		if !json.Valid([]byte(tc.Arguments)) {
			return true
		}
	}
	return false
}

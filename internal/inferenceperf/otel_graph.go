// A trace's calls as a graph, as inference-perf's build_graph infers it:
// a call depends on an earlier call whose recorded answer its messages
// carry (causal: the text, the tool call ids, or the answer's parts spread
// over several messages), and on the closest earlier call that had ended
// when it started (temporal); it waits, after the last of them, the time
// the trace shows between them. Its messages split into segments: the
// prefix it shares with an ancestor, the ancestors' answers, its own.

package inferenceperf

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

type depKind int

const (
	noDep depKind = iota
	causalDep
	temporalDep
)

// otelGraph is a trace's dependency graph: each call's predecessors and
// segments, and its wait in ms.
type otelGraph struct {
	preds [][]int
	waits []int64
	segs  [][]workload.Segment
}

// buildOTelGraph infers the graph of calls, sorted by start.
func buildOTelGraph(calls []otelCall) *otelGraph {
	n := len(calls)
	kinds := make([]map[int]depKind, n)
	for i := range kinds {
		kinds[i] = map[int]depKind{}
	}
	// causalAncestors are j's ancestors by causal edges only.
	causalAncestors := func(j int) map[int]bool {
		seen := map[int]bool{}
		stack := []int{}
		for p, k := range kinds[j] {
			if k == causalDep {
				stack = append(stack, p)
			}
		}
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[a] {
				continue
			}
			seen[a] = true
			for p, k := range kinds[a] {
				if k == causalDep {
					stack = append(stack, p)
				}
			}
		}
		return seen
	}
	for i := 1; i < n; i++ {
		transitive := map[int]bool{}
		for j := i - 1; j >= 0; j-- {
			if transitive[j] || !causal(&calls[j], &calls[i]) {
				continue
			}
			kinds[i][j] = causalDep
			for a := range causalAncestors(j) {
				transitive[a] = true
			}
		}
		// The closest earlier call that had ended when this one started.
		for j := i - 1; j >= 0; j-- {
			if calls[i].start >= calls[j].end {
				if kinds[i][j] == noDep {
					kinds[i][j] = temporalDep
				}
				break
			}
		}
	}
	g := &otelGraph{preds: make([][]int, n), waits: make([]int64, n), segs: make([][]workload.Segment, n)}
	for i := range n {
		for p := range kinds[i] {
			g.preds[i] = append(g.preds[i], p)
		}
		slices.Sort(g.preds[i])
		if len(g.preds[i]) > 0 {
			last := int64(0)
			for k, p := range g.preds[i] {
				if k == 0 || calls[p].end > last {
					last = calls[p].end
				}
			}
			g.waits[i] = max(0, calls[i].start-last)
		}
	}
	for i := range n {
		g.segs[i] = segments(calls, i, ancestors(g.preds, i))
	}
	return g
}

// ancestors are i's predecessors and theirs, ascending.
func ancestors(preds [][]int, i int) []int {
	seen := map[int]bool{}
	stack := slices.Clone(preds[i])
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[a] {
			seen[a] = true
			stack = append(stack, preds[a]...)
		}
	}
	out := make([]int, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// outputMatches is inference-perf's output_matches_message: an assistant
// message whose text is the answer's, or with partial contains it.
func outputMatches(out string, m *otelMessage, partial bool) bool {
	if m.role != "assistant" {
		return false
	}
	return m.text == out || partial && strings.Contains(m.text, out)
}

// causal reports whether b's messages carry a's recorded answer.
func causal(a, b *otelCall) bool {
	if a.out == nil || len(b.msgs) == 0 {
		return false
	}
	for k := range b.msgs {
		if outputMatches(a.out.text, &b.msgs[k], true) {
			return true
		}
	}
	if !a.out.hasParts {
		return false
	}
	var ids []string
	for _, p := range a.out.parts {
		if p.typ == "tool_call" && p.id != "" {
			ids = append(ids, p.id)
		}
	}
	if len(ids) > 0 {
		have := map[string]bool{}
		for _, m := range b.msgs {
			for _, id := range m.toolIDs {
				have[id] = true
			}
		}
		all := true
		for _, id := range ids {
			all = all && have[id]
		}
		if all {
			return true
		}
	}
	parts := a.out.parts
	if len(parts) <= 1 {
		return false
	}
	if parts[0].typ == "tool_call" {
		return matchParts(parts, b.msgs, false)
	}
	if matchParts(parts, b.msgs, false) || matchParts(parts, b.msgs, true) {
		return true
	}
	var calls []otelPart
	for _, p := range parts {
		if p.typ == "tool_call" {
			calls = append(calls, p)
		}
	}
	return len(calls) > 0 && matchParts(calls, b.msgs, false)
}

// matchParts is inference-perf's _try_match_parts: an answer's parts found
// one after another in b's messages (a text part one message on, a tool
// call two: its result between), or with combine the answer's text
// repeated before each of its tool calls.
func matchParts(parts []otelPart, msgs []otelMessage, combine bool) bool {
	if len(parts) == 0 || len(msgs) == 0 {
		return false
	}
	content := ""
	if combine {
		if parts[0].typ == "tool_call" || len(parts) < 2 {
			return false
		}
		for _, p := range parts[1:] {
			if p.typ != "tool_call" {
				return false
			}
		}
		content, parts = parts[0].text, parts[1:]
	}
	text := func(p otelPart) string {
		if combine {
			return content + "\n" + p.text
		}
		return p.text
	}
	step := func(p otelPart) int {
		if combine || p.typ == "tool_call" {
			return 2
		}
		return 1
	}
	for i := range msgs {
		if !outputMatches(text(parts[0]), &msgs[i], true) {
			continue
		}
		ok, off := true, step(parts[0])
		for _, p := range parts[1:] {
			if i+off >= len(msgs) || !outputMatches(text(p), &msgs[i+off], true) {
				ok = false
				break
			}
			off += step(p)
		}
		if ok {
			return true
		}
	}
	return false
}

// segments is inference-perf's decompose_input of call i against its
// ancestors: the longest message prefix it shares with one of them, then
// each ancestor's answer where its messages carry it, the rest its own.
func segments(calls []otelCall, i int, anc []int) []workload.Segment {
	msgs := calls[i].msgs
	n := len(msgs)
	if len(anc) == 0 {
		return []workload.Segment{{Kind: workload.Unique, Count: n}}
	}
	best, bestCount := -1, 0
	for _, a := range anc {
		k := 0
		for k < n && k < len(calls[a].msgs) && msgs[k].role == calls[a].msgs[k].role && msgs[k].text == calls[a].msgs[k].text {
			k++
		}
		if k > bestCount {
			best, bestCount = a, k
		}
	}
	var segs []workload.Segment
	cursor := 0
	if bestCount > 0 {
		segs = append(segs, workload.Segment{Kind: workload.Shared, Count: bestCount, From: best})
		cursor = bestCount
	}
	for cursor < n {
		from, at := -1, n
		for _, a := range anc {
			out := calls[a].out
			if out == nil {
				continue
			}
			var ids []string
			for _, p := range out.parts {
				if p.typ == "tool_call" && p.id != "" {
					ids = append(ids, p.id)
				}
			}
			for k := cursor; k < n; k++ {
				if outputMatches(out.text, &msgs[k], false) || len(ids) > 0 && subset(ids, msgs[k].toolIDs) {
					if k < at {
						from, at = a, k
					}
					break
				}
			}
		}
		if from < 0 {
			segs = append(segs, workload.Segment{Kind: workload.Unique, Count: n - cursor})
			break
		}
		if at > cursor {
			segs = append(segs, workload.Segment{Kind: workload.Unique, Count: at - cursor})
		}
		segs = append(segs, workload.Segment{Kind: workload.Output, Count: 1, From: from})
		cursor = at + 1
	}
	return segs
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// outputTokens is a call's max_tokens: its recorded completion tokens,
// else its answer's characters over 4 (at least 1), as inference-perf
// estimates them; a recorded 0 gets inference-perf's client default.
func (c *otelCall) outputTokens() int {
	if c.completionTokens >= 0 {
		return maxTokens(c.completionTokens)
	}
	text := ""
	if c.out != nil {
		text = c.out.text
	}
	return max(1, utf8.RuneCountInString(text)/4)
}

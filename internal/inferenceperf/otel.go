// otel_trace_replay's trace files: each a JSON object with a spans list,
// its LLM calls the spans of gen_ai.operation.name chat (or named "chat
// …") that carry gen_ai.input.messages, read as inference-perf's
// otel_trace_to_replay_graph reads them (docs/otel_trace_replay.md).

package inferenceperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// otelCall is one recorded LLM call.
type otelCall struct {
	id         string // its span_id
	start, end int64  // ms from the trace's first call
	msgs       []otelMessage
	out        *otelOutput
	// promptTokens and completionTokens are the recorded usage, -1
	// when the span has none.
	promptTokens, completionTokens int
	tools                          []any // gen_ai.tool.definitions
}

// otelMessage is one input message: its role, its text as inference-perf
// compares messages (content, tool calls and results flattened), the tool
// call ids it carries, and what is sent for it.
type otelMessage struct {
	role, text string
	toolIDs    []string
	wire       workload.Message
}

// otelOutput is a call's recorded answer: its text as inference-perf
// reconstructs it, and when it came as parts (the GenAI conventions'
// format) the parts with their texts; names are the tools it called.
type otelOutput struct {
	text     string
	hasParts bool
	parts    []otelPart
	names    []string
}

type otelPart struct {
	typ, id, text string
}

// otelFile is a trace file's top level.
type otelFile struct {
	TraceID   *string           `json:"trace_id"`
	SessionID *string           `json:"session_id"`
	Spans     []json.RawMessage `json:"spans"`
	OTLP      json.RawMessage   `json:"resourceSpans"`
}

type otelSpan struct {
	SpanID     *string        `json:"span_id"`
	Name       *string        `json:"name"`
	StartTime  *string        `json:"start_time"`
	EndTime    *string        `json:"end_time"`
	Attributes map[string]any `json:"attributes"`
	Status     *struct {
		Code any `json:"code"`
	} `json:"status"`
}

// parseOTelTrace reads one trace file: its session name (session_id,
// else trace_id, else "") and its LLM calls in the order they started,
// duplicates (same times and attributes) dropped. includeErrors keeps the
// calls whose status is an error.
func parseOTelTrace(data []byte, includeErrors bool) (name string, calls []otelCall, err error) {
	var f otelFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return "", nil, fmt.Errorf("not a JSON trace object: %w", err)
	}
	if f.Spans == nil {
		if f.OTLP != nil {
			return "", nil, errors.New("an OTLP export (resourceSpans): otel_trace_replay reads a {\"spans\": [...]} file of flat spans with gen_ai.* attributes")
		}
		return "", nil, errors.New("no spans list")
	}
	switch {
	case f.SessionID != nil && *f.SessionID != "":
		name = *f.SessionID
	case f.TraceID != nil:
		name = *f.TraceID
	}
	type timed struct {
		s          otelSpan
		start, end time.Time
	}
	var llm []timed
	seen := map[string]bool{}
	spans := make([]otelSpan, len(f.Spans))
	for i, raw := range f.Spans {
		if err := json.Unmarshal(raw, &spans[i]); err != nil {
			return "", nil, fmt.Errorf("span %d: %w", i, err)
		}
	}
	// Duplicates are told apart in span_id order, as inference-perf's
	// filter keeps the first.
	slices.SortStableFunc(spans, func(a, b otelSpan) int { return strings.Compare(str(a.SpanID), str(b.SpanID)) })
	for i, s := range spans {
		attrs, _ := json.Marshal(s.Attributes)
		sig := str(s.StartTime) + "|" + str(s.EndTime) + "|" + string(attrs)
		if seen[sig] {
			continue
		}
		seen[sig] = true
		if !isLLMSpan(s, includeErrors) {
			continue
		}
		if s.StartTime == nil {
			return "", nil, fmt.Errorf("span %s: no start_time", spanName(s, i))
		}
		t := timed{s: s}
		if t.start, err = parseISOTime(*s.StartTime); err != nil {
			return "", nil, fmt.Errorf("span %s: start_time: %w", spanName(s, i), err)
		}
		t.end = t.start
		if s.EndTime != nil && *s.EndTime != "" {
			if t.end, err = parseISOTime(*s.EndTime); err != nil {
				return "", nil, fmt.Errorf("span %s: end_time: %w", spanName(s, i), err)
			}
		}
		llm = append(llm, t)
	}
	if len(llm) == 0 {
		return name, nil, nil
	}
	slices.SortStableFunc(llm, func(a, b timed) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return strings.Compare(str(a.s.SpanID), str(b.s.SpanID))
	})
	t0 := llm[0].start
	ms := func(t time.Time) int64 { return int64(math.Round(float64(t.Sub(t0)) / float64(time.Millisecond))) }
	for _, t := range llm {
		c, err := readCall(t.s)
		if err != nil {
			return "", nil, fmt.Errorf("span %s: %w", str(t.s.SpanID), err)
		}
		c.start, c.end = ms(t.start), ms(t.end)
		calls = append(calls, c)
	}
	return name, calls, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func spanName(s otelSpan, i int) string {
	if s.SpanID != nil {
		return *s.SpanID
	}
	return fmt.Sprint("#", i)
}

// isLLMSpan is inference-perf's is_llm_span: a chat operation (by
// gen_ai.operation.name, or a name "chat …") with input messages; an
// error status excludes it unless errors are included.
func isLLMSpan(s otelSpan, includeErrors bool) bool {
	op, _ := s.Attributes["gen_ai.operation.name"].(string)
	if op != "chat" && !strings.HasPrefix(str(s.Name), "chat ") || !pyTruthy(s.Attributes["gen_ai.input.messages"]) {
		return false
	}
	if !includeErrors && s.Status != nil {
		if code, ok := s.Status.Code.(float64); ok && code == 2 {
			return false
		}
	}
	return true
}

// pyTruthy is Python's truth of a JSON value (0 is false).
func pyTruthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// parseISOTime reads an ISO 8601 date and time as Python's fromisoformat
// does: T or a space between, any fraction, Z or an offset, none meaning
// UTC.
func parseISOTime(s string) (time.Time, error) {
	v := strings.Replace(strings.TrimSpace(s), " ", "T", 1)
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04Z07:00", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 time (want e.g. 2024-01-01T00:00:00.5Z)", s)
}

// readCall reads a span's call: its messages, output, usage and tools.
func readCall(s otelSpan) (otelCall, error) {
	a := s.Attributes
	c := otelCall{id: str(s.SpanID), promptTokens: -1, completionTokens: -1}
	raw := a["gen_ai.input.messages"]
	if text, ok := raw.(string); ok {
		if err := json.Unmarshal([]byte(text), &raw); err != nil {
			return c, fmt.Errorf("gen_ai.input.messages is not JSON: %w", err)
		}
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return c, errors.New("gen_ai.input.messages is not a list of messages")
	}
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return c, fmt.Errorf("gen_ai.input.messages[%d] is not a message", i)
		}
		msg, err := readMessage(m)
		if err != nil {
			return c, fmt.Errorf("gen_ai.input.messages[%d]: %w", i, err)
		}
		c.msgs = append(c.msgs, msg)
	}
	var err error
	if c.out, err = readOutput(a); err != nil {
		return c, err
	}
	for _, k := range [][2]string{{"gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"}, {"gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens"}} {
		v, ok := a[k[0]]
		if v == nil {
			v, ok = a[k[1]]
		}
		if !ok || v == nil {
			continue
		}
		n, isNum := v.(float64)
		if !isNum || n < 0 || n != math.Trunc(n) || n > 1<<30 {
			return c, fmt.Errorf("%s: %v is not a token count", k[0], v)
		}
		if k[0] == "gen_ai.usage.prompt_tokens" {
			c.promptTokens = int(n)
		} else {
			c.completionTokens = int(n)
		}
	}
	switch d := a["gen_ai.tool.definitions"].(type) {
	case string:
		var v any
		if json.Unmarshal([]byte(d), &v) == nil {
			c.tools, _ = v.([]any) // inference-perf ignores definitions it cannot read
		}
	case []any:
		c.tools = d
	}
	return c, nil
}

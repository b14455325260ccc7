package inferenceperf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// readTrace reads testdata/otel/name's calls and graph.
func readTrace(t *testing.T, name string) tracedSession {
	t.Helper()
	s, err := readTracedSession(filepath.Join("testdata", "otel", name), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func segs(s ...workload.Segment) []workload.Segment { return s }

// TestOTelTraceGraphs: the documented trace format's calls become the
// graph inference-perf infers: a call that three calls carry the answer of
// fans out to them, and the call that carries their three answers joins
// them (its first ancestor's answer reached through them); a chain, the
// tool span between two calls read as the second's wait; a tool call's
// answer found by its call id. The other spans (the agent's, the tools')
// and an exporter's duplicate span are not calls.
func TestOTelTraceGraphs(t *testing.T) {
	sh := func(n, from int) workload.Segment {
		return workload.Segment{Kind: workload.Shared, Count: n, From: from}
	}
	out := func(from int) workload.Segment { return workload.Segment{Kind: workload.Output, Count: 1, From: from} }
	own := func(n int) workload.Segment { return workload.Segment{Kind: workload.Unique, Count: n} }
	for _, c := range []struct {
		file  string
		name  string
		ids   []string
		preds [][]int
		waits []int64
		segs  [][]workload.Segment
	}{
		{"fanout.json", "fanout-trace", []string{"a", "b1", "b2", "b3", "d"}, [][]int{nil, {0}, {0}, {0}, {1, 2, 3}}, []int64{0, 200, 200, 200, 400},
			[][]workload.Segment{segs(own(2)), segs(sh(2, 0), out(0), own(1)), segs(sh(2, 0), out(0), own(1)), segs(sh(2, 0), out(0), own(1)),
				segs(sh(3, 1), out(1), out(2), out(3), own(1))}},
		{"chain.json", "chain-trace", []string{"c1", "c2", "c3"}, [][]int{nil, {0}, {1}}, []int64{0, 300, 20000},
			[][]workload.Segment{segs(own(1)), segs(sh(1, 0), out(0), own(1)), segs(sh(3, 1), out(1), own(1))}},
		{"tools.json", "weather", []string{"t1", "t2"}, [][]int{nil, {0}}, []int64{0, 800},
			[][]workload.Segment{segs(own(1)), segs(sh(1, 0), out(0), own(1))}},
	} {
		s := readTrace(t, c.file)
		var ids []string
		for _, call := range s.calls {
			ids = append(ids, call.id)
		}
		if s.name != c.name || !reflect.DeepEqual(ids, c.ids) {
			t.Errorf("%s: session %q, calls %v; want %q, %v", c.file, s.name, ids, c.name, c.ids)
			continue
		}
		if !reflect.DeepEqual(s.graph.preds, c.preds) || !reflect.DeepEqual(s.graph.waits, c.waits) {
			t.Errorf("%s: predecessors %v, waits %v ms; want %v, %v", c.file, s.graph.preds, s.graph.waits, c.preds, c.waits)
		}
		if !reflect.DeepEqual(s.graph.segs, c.segs) {
			t.Errorf("%s: segments %v, want %v", c.file, s.graph.segs, c.segs)
		}
	}
}

// otelConfig replays the test traces.
func otelConfig(t *testing.T, extra string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "otel"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
load:
  type: trace_session_replay
  stages: [{concurrent_sessions: 2, session_rate: 1}]
api: {type: chat, streaming: true}
data:
  type: otel_trace_replay
  otel_trace_replay:
    trace_directory: %s
%s`, dir, extra)
}

// TestOTelPlan: an otel_trace_replay configuration's plan: a session per
// trace, named as inference-perf names them, waits capped at max_wait_ms,
// each call's max_tokens its recorded completion tokens, and a call whose
// recorded answer was a tool call offered its cleaned tools with a forced
// choice and room to write the call.
func TestOTelPlan(t *testing.T) {
	p := newPlan(t, otelConfig(t, ""), PlanOptions{Seed: 1})
	g := p.Graph
	if g == nil || len(g.Sessions) != 3 || len(p.Stages) != 1 || p.Stages[0].Sessions != 3 || p.Stages[0].MaxConcurrency != 2 || p.Stages[0].Rate != 1 {
		t.Fatalf("plan: graph %v, stages %+v", g != nil, p.Stages)
	}
	if p.NumRequests() != 10 || p.AgentTurns() != 3 || !p.Chat {
		t.Errorf("%d requests, %d turns, chat %v; want 10, 3, true", p.NumRequests(), p.AgentTurns(), p.Chat)
	}
	byName := map[string]*workload.GraphSession{}
	for i := range g.Sessions {
		s := &g.Sessions[i]
		var name string
		if _, err := fmt.Sscanf(s.ID, fmt.Sprintf("trace%d_%%s", i), &name); err != nil {
			t.Fatalf("session %d named %q, want trace%d_<name>", i, s.ID, i)
		}
		byName[name] = s
	}
	chain, tools := byName["chain-trace"], byName["weather"]
	if chain == nil || tools == nil || byName["fanout-trace"] == nil {
		t.Fatalf("sessions %v", byName)
	}
	if w := chain.Calls[2].Wait; w != 15*time.Second || chain.Calls[1].Wait != 300*time.Millisecond || chain.Calls[2].OutputLen != 10 {
		t.Errorf("chain: waits %v, %v, max_tokens %d; want 300ms, max_wait_ms's 15s, 10", chain.Calls[1].Wait, w, chain.Calls[2].OutputLen)
	}
	tu := tools.Calls[0].Tools
	if tu == nil || tu.Choice != "required" || tu.MaxTokens != 4096 || tools.Calls[1].Tools != nil {
		t.Fatalf("the tool call's request: %+v; want its tools, tool_choice required, 4096 tokens; the next call none", tu)
	}
	fn := tu.Tools[0].(map[string]any)["function"].(map[string]any)
	params := fn["parameters"].(map[string]any)
	city := params["properties"].(map[string]any)["city"].(map[string]any)
	if fn["name"] != "get_weather" || params["title"] != nil || city["title"] != nil || city["maxLength"] != nil || city["type"] != "string" {
		t.Errorf("cleaned tool %v: want title and maxLength gone, the rest kept", fn)
	}
	m := tools.Calls[1].Messages
	if len(m) != 3 || m[1].Role != "assistant" || len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].ID != "call_1" || m[2].Role != "tool" || m[2].ToolCallID != "call_1" {
		t.Errorf("the recorded tool turn's messages %+v", m)
	}
	// Another seed orders the sessions otherwise; a target pads them with
	// copies, their own messages marked.
	p = newPlan(t, otelConfig(t, "    duplicate_sessions_target: 5\n"), PlanOptions{Seed: 1})
	if n := len(p.Graph.Sessions); n != 5 || !strings.HasSuffix(p.Graph.Sessions[3].ID, "_dup1") || !strings.HasSuffix(p.Graph.Sessions[4].ID, "_dup2") {
		t.Fatalf("%d sessions; want 5, the last two copies _dup1, _dup2", n)
	}
	if c := p.Graph.Sessions[3].Calls[0].Messages[0].Content; !strings.HasPrefix(c, "[SESS:") {
		t.Errorf("a copy's own message %q, want it marked [SESS:…]", c)
	}
}

// TestOTelConfigRefusals: what cannot run is refused by name.
func TestOTelConfigRefusals(t *testing.T) {
	base := otelConfig(t, "")
	for _, c := range []struct{ from, to, key string }{
		{"type: chat", "type: completion", "api.type"},
		{"type: trace_session_replay", "type: constant", "trace_session_replay"},
		{"concurrent_sessions: 2, ", "", "concurrent_sessions"},
		{"session_rate: 1", "session_rate: 3", "session_rate"},
		{"    trace_directory:", "    filter: \"lambda x: True\"\n    trace_directory:", "filter"},
		{"    trace_directory:", "    hf_dataset_path: org/traces\n    trace_directory:", "hf_dataset_path"},
		{"    trace_directory:", "    bad_tool_call_handling: retry\n    trace_directory:", "bad_tool_call_handling"},
		{"    trace_directory:", "    disable_output_substitution: true\n    inject_random_session_id: true\n    trace_directory:", "disable_output_substitution"},
		{"    trace_directory:", "    trace_files: [a.json]\n    trace_directory:", "otel_trace_replay"},
	} {
		y := strings.Replace(base, c.from, c.to, 1)
		if _, err := Parse(strings.NewReader(y)); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s → %s: %v, want an error naming %s", c.from, c.to, err, c.key)
		}
	}
	if _, err := NewPlan(context.Background(), parse(t, strings.Replace(base, "session_rate: 1}", "session_rate: 1, num_sessions: 4}", 1)),
		simTok{sim.NewVocab()}, PlanOptions{}); err == nil || !strings.Contains(err.Error(), "duplicate_sessions_target") {
		t.Errorf("4 sessions of 3 traces: %v, want an error suggesting duplicate_sessions_target", err)
	}
}

// TestOTelTraceRefusals: a trace that cannot be replayed is refused with
// its reason, or skipped with skip_invalid_files.
func TestOTelTraceRefusals(t *testing.T) {
	for _, c := range []struct{ trace, want string }{
		{`{"resourceSpans": []}`, "OTLP"},
		{`{"trace_id": "x"}`, "no spans"},
		{`{"spans": [{"span_id": "a", "name": "chat m", "start_time": "yesterday", "attributes": {"gen_ai.input.messages": "[{\"role\":\"user\",\"content\":\"hi\"}]"}}]}`, "ISO 8601"},
		{`{"spans": [{"span_id": "a", "name": "chat m", "start_time": "2026-01-01T00:00:00Z", "attributes": {"gen_ai.input.messages": "[{\"content\":\"hi\"}]"}}]}`, "no role"},
		{`{"spans": [{"span_id": "a", "name": "chat m", "start_time": "2026-01-01T00:00:00Z", "attributes": {"gen_ai.input.messages": "[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\"}}]}]"}}]}`, "no id"},
		{`{"spans": [{"span_id": "a", "name": "chat m", "start_time": "2026-01-01T00:00:00Z", "attributes": {"gen_ai.input.messages": "[{\"role\":\"user\",\"content\":\"hi\"}]", "gen_ai.output.messages": "[{\"role\":\"assistant\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]"}}]}`, "2 messages"},
	} {
		_, _, err := parseOTelTrace([]byte(c.trace), true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.trace, err, c.want)
		}
	}
	dir := t.TempDir()
	good, _ := os.ReadFile(filepath.Join("testdata", "otel", "chain.json"))
	for name, data := range map[string]string{"good.json": string(good), "bad.json": `{"resourceSpans": []}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y := fmt.Sprintf("load: {type: trace_session_replay, stages: [{concurrent_sessions: 0}]}\napi: {type: chat}\ndata: {type: otel_trace_replay, otel_trace_replay: {trace_directory: %s%%s}}\n", dir)
	if _, err := NewPlan(context.Background(), parse(t, fmt.Sprintf(y, "")), simTok{sim.NewVocab()}, PlanOptions{}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a bad trace: %v, want an error naming it", err)
	}
	c := parse(t, fmt.Sprintf(y, ", skip_invalid_files: true"))
	p, err := NewPlan(context.Background(), c, simTok{sim.NewVocab()}, PlanOptions{})
	if err != nil || len(p.Graph.Sessions) != 1 || !strings.Contains(strings.Join(c.Notes, "\n"), "bad.json") {
		t.Errorf("skip_invalid_files: %v, notes %q; want the good trace's session and a note naming the bad one", err, c.Notes)
	}
}

// FuzzParseOTelTrace: any bytes parse to calls or an error, never a panic;
// the calls make a graph whose session the schedule accepts.
func FuzzParseOTelTrace(f *testing.F) {
	for _, name := range []string{"fanout.json", "chain.json", "tools.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "otel", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"spans": [{"span_id": "a", "name": "chat m", "start_time": "2026-01-01T00:00:00Z", "attributes": {"gen_ai.input.messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "x"}, {"type": "tool_call", "id": "1", "name": "f"}]}]}}]}`))
	tk := simTok{sim.NewVocab()}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, calls, err := parseOTelTrace(data, true)
		if err != nil || len(calls) == 0 {
			return
		}
		ts := tracedSession{name: "fuzz", source: "fuzz.json", calls: calls, graph: buildOTelGraph(calls)}
		s, err := graphSession(context.Background(), &ts, "trace0_fuzz", "", &OTelTraceReplay{}, tk, map[string]workload.Sample{})
		if err != nil && !strings.Contains(err.Error(), "gen_ai.tool.definitions") {
			t.Fatalf("a parsed trace's session: %v", err)
		}
		if err == nil && len(s.Calls) != len(calls) {
			t.Fatalf("%d calls for %d", len(s.Calls), len(calls))
		}
	})
}

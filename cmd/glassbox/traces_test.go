package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// otelReplayConfig replays internal/inferenceperf's test traces (a fan-out
// of three and a join, a chain with a tool span, a tool call) as
// inference-perf's otel_trace_replay does, every session at once.
func otelReplayConfig(t *testing.T) string {
	t.Helper()
	traces, err := filepath.Abs(filepath.Join("..", "..", "internal", "inferenceperf", "testdata", "otel"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "otel.yaml")
	y := fmt.Sprintf(`load:
  type: trace_session_replay
  stages: [{concurrent_sessions: 0}]
api: {type: chat, streaming: true}
data:
  type: otel_trace_replay
  otel_trace_replay: {trace_directory: %s, max_wait_ms: 2000}
report:
  request_lifecycle: {per_request: true}
  session_lifecycle: {per_session: true}
`, traces)
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// byCall indexes sent requests by session and call.
func byCall(outs []bench.Output) map[string]map[int]bench.Output {
	m := map[string]map[int]bench.Output{}
	for _, o := range outs {
		if o.Start.IsZero() {
			continue
		}
		if m[o.SessionID] == nil {
			m[o.SessionID] = map[int]bench.Output{}
		}
		m[o.SessionID][o.Call] = o
	}
	return m
}

// checkGraphTimes checks the test traces' graphs ran as recorded: the
// fan-out's three calls together, 200 ms after the call they wait on
// answered, the join 400 ms after the last of them; the chain's calls
// after their recorded gaps (the last capped by max_wait_ms); the call
// after the tool call 800 ms after it. due reads a request's due time on
// the run's clock, sent its send.
func checkGraphTimes(t *testing.T, who string, calls map[string]map[int]bench.Output, due, sent func(bench.Output) time.Duration, end func(bench.Output) time.Duration) {
	t.Helper()
	var fan, chain, tools map[int]bench.Output
	for id, c := range calls {
		switch len(c) {
		case 5:
			fan = c
		case 3:
			chain = c
		case 2:
			tools = c
		default:
			t.Fatalf("%s: session %s sent %d calls", who, id, len(c))
		}
	}
	if fan == nil || chain == nil || tools == nil {
		t.Fatalf("%s: sessions %v", who, calls)
	}
	for id, c := range calls {
		for k, o := range c {
			if !o.Success {
				t.Errorf("%s: session %s call %d failed: %s", who, id, k, o.Error)
			}
		}
	}
	for k := 1; k <= 3; k++ {
		if d, want := due(fan[k]), end(fan[0])+200*time.Millisecond; d != want || sent(fan[k]) != sent(fan[1]) || fan[k].Turn != 1 {
			t.Errorf("%s: fan-out call %d due %v, sent %v (call 1 at %v); want all three due and sent together at the root's answer + 200ms, %v", who, k, d, sent(fan[k]), sent(fan[1]), want)
		}
	}
	last := max(end(fan[1]), end(fan[2]), end(fan[3]))
	if d := due(fan[4]); d != last+400*time.Millisecond || fan[4].Turn != 2 {
		t.Errorf("%s: the join due %v, want the last fan-out answer + 400ms, %v", who, d, last+400*time.Millisecond)
	}
	for k, w := range []time.Duration{0, 300 * time.Millisecond, 2 * time.Second} {
		if d := due(chain[k]); k > 0 && d != end(chain[k-1])+w {
			t.Errorf("%s: chain call %d due %v after its predecessor's answer, want %v", who, k, d-end(chain[k-1]), w)
		}
	}
	if d := due(tools[1]); d != end(tools[0])+800*time.Millisecond {
		t.Errorf("%s: the call after the tool span due %v after the tool call's answer, want 800ms", who, d-end(tools[0]))
	}
	for _, c := range calls {
		for _, o := range c {
			if s := sent(o) - due(o); s < 0 || s > 20*time.Millisecond {
				t.Errorf("%s: call %d of %s sent %v after it was due; nothing held it", who, o.Call, o.SessionID, s)
			}
		}
	}
}

// TestOTelTraceReplay: inference-perf's agent-trace replay runs in bench
// against a live glassbox server and in simulate alike, each session on
// its own clock: a fan-out's calls go together and the join waits for all
// of them, chains and tool spans keep their recorded gaps, a recorded tool
// call is forced and its live call (id and all) goes into the next call's
// conversation, which the server accepts; the two runs send the same
// calls at times within what simulate's frontend and steps add; and the
// session reports are written.
func TestOTelTraceReplay(t *testing.T) {
	cfg := otelReplayConfig(t)
	engine := []string{"--sim-model", "llama-3.1-8b", "--sim-hardware", "h100"}
	b := benchBubble(t, append([]string{"--served-model-name", "m"}, engine...), []string{"--config", cfg, "--model", "m"})
	bp := b.Passes[0]
	bc := byCall(bp.Outputs)
	rel := func(o bench.Output) time.Duration { return o.Start.Sub(bp.Start) }
	checkGraphTimes(t, "bench", bc, func(o bench.Output) time.Duration { return o.Due }, rel,
		func(o bench.Output) time.Duration { return o.End.Sub(bp.Start) })
	for _, c := range bc {
		if len(c) == 2 && (len(c[0].ToolCalls) == 0 || c[0].ToolCalls[0].ID == "call_1" || c[0].ToolCalls[0].Name != "get_weather") {
			t.Errorf("bench: the forced tool call's answer %+v, want a live call of get_weather", c[0].ToolCalls)
		}
	}
	sim := simulateRun(t, append(append([]string{}, engine...), "--config", cfg))
	sc := byCall(sim.Outputs)
	at := func(o bench.Output) time.Duration { return o.Start.Sub(simulate.Epoch) }
	checkGraphTimes(t, "simulate", sc, func(o bench.Output) time.Duration { return o.Due }, at,
		func(o bench.Output) time.Duration { return o.End.Sub(simulate.Epoch) })
	// What simulate adds a call that serve in a bubble does not: the
	// frontend and a step's wait, a turn. A forced tool call is as long as
	// the model makes it (in both, the simulated model writes the call its
	// grammar allows, from its own random source), so the call after it is
	// compared by its due time above, not across the runs.
	fe := sim.Frontend
	slack := fe.Arrival + 24*fe.PerToken + fe.Finish + 20*time.Millisecond
	for id, c := range bc {
		s := sc[id]
		if len(s) != len(c) {
			t.Fatalf("session %s: %d calls in bench, %d in simulate", id, len(c), len(s))
		}
		for k, o := range c {
			if len(c) == 2 {
				if k == 0 && (s[0].OutputTokens == 0 || s[0].OutputTokens > 4096) {
					t.Errorf("simulate: the forced tool call wrote %d tokens", s[0].OutputTokens)
				}
				continue
			}
			if d := at(s[k]) - rel(o); d < 0 || d > time.Duration(o.Turn+1)*slack || s[k].OutputTokens != o.OutputTokens {
				t.Errorf("session %s call %d (turn %d) sent at %v in bench, %v in simulate, %d and %d tokens: want simulate no earlier, within %v a turn, the same tokens",
					id, k, o.Turn, rel(o), at(s[k]), o.OutputTokens, s[k].OutputTokens, slack)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "reports")
	if err := run(context.Background(), append(append([]string{"simulate"}, engine...), "--config", cfg, "--inference-perf-report", dir), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var per []map[string]any
	b2, err := os.ReadFile(filepath.Join(dir, "per_session_lifecycle_metrics.json"))
	if err == nil {
		err = json.Unmarshal(b2, &per)
	}
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, s := range per {
		if s["success"] != true || s["num_events"] != s["num_events_completed"] || s["duration_sec"].(float64) <= 0 {
			t.Errorf("session record %v", s)
		}
		events += int(s["num_events"].(float64))
	}
	var sum map[string]any
	b3, err := os.ReadFile(filepath.Join(dir, "summary_session_lifecycle_metrics.json"))
	if err == nil {
		err = json.Unmarshal(b3, &sum)
	}
	if err != nil || len(per) != 3 || events != 10 || sum["num_sessions"] != 3.0 || sum["total_events_completed"] != 10.0 {
		t.Errorf("session reports: %v, %d sessions of %d events, summary %v", err, len(per), events, sum)
	}
	if _, err := os.Stat(filepath.Join(dir, "stage_0_session_lifecycle_metrics.json")); err != nil {
		t.Error(err)
	}
}

// TestPlanRefusesSessionReplay: plan searches a request rate, which a
// replay of recorded sessions does not have: it is refused by name.
func TestPlanRefusesSessionReplay(t *testing.T) {
	err := run(context.Background(), []string{"plan", "--config", otelReplayConfig(t), "--slo", "ttft:p99<=1s", "--sim-hardware", "h100"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "trace_session_replay") {
		t.Errorf("plan of a session replay: %v, want an error naming trace_session_replay", err)
	}
}

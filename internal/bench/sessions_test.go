package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// agentServer answers every completion after a time that depends on the
// session the request names (bench's session header), streaming three
// tokens 10 ms apart, and records when each session's requests arrived.
type agentServer struct {
	ttft    func(session string) time.Duration
	mu      sync.Mutex
	arrived map[string][]time.Time
	// chats are the messages of each session's chat requests, in order.
	chats map[string][][]map[string]any
}

func (a *agentServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[]}`, len(strings.Fields(req.Prompt)))
	})
	answer := func(w http.ResponseWriter, r *http.Request, chunk string) {
		session := r.Header.Get("X-Session")
		a.mu.Lock()
		a.arrived[session] = append(a.arrived[session], time.Now())
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			var req struct{ Messages []map[string]any }
			json.NewDecoder(r.Body).Decode(&req)
			a.chats[session] = append(a.chats[session], req.Messages)
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		time.Sleep(a.ttft(session))
		for i := range 3 {
			if i > 0 {
				time.Sleep(10 * ms)
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,"+chunk+"}]}\n\n", fmt.Sprintf(" t%d", i))
			fl.Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\ndata: [DONE]\n\n")
	}
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { answer(w, r, `"text":%q`) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { answer(w, r, `"delta":{"content":%q}`) })
	return mux
}

// runAgents runs bench's agent sessions against srv in a synctest bubble.
func runAgents(t *testing.T, srv *agentServer, cfg Config) *Result {
	t.Helper()
	srv.arrived, srv.chats = map[string][]time.Time{}, map[string][][]map[string]any{}
	cfg.BaseURL, cfg.MetricsURL, cfg.SessionHeader = "http://fake", "-", "X-Session"
	cfg.Dataset = workload.DatasetConfig{Name: "agent"}
	var res *Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		client, stop := startPipeServer(srv.handler())
		defer stop()
		cfg.HTTPClient = client
		res, err = Run(context.Background(), cfg)
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// TestBenchAgentSessionsOwnClocks: bench sends each agent session's turn
// k+1 the moment its turn k's answer is in and the tool has run — on the
// server's side too — while another session's answers take 20 s each and
// the later sessions have not started; the report splits each session's
// time into the server's and the tools', and a turn's TTFT from when it
// was due is its TTFT (nothing held it).
func TestBenchAgentSessionsOwnClocks(t *testing.T) {
	const tool = 300 * ms
	srv := &agentServer{ttft: func(s string) time.Duration {
		if s == "user_session_1" {
			return 20 * time.Second
		}
		return 100 * ms
	}}
	res := runAgents(t, srv, Config{NumPrompts: 4, RequestRate: 0.5, Burstiness: math.Inf(1), Percentiles: []float64{50, 99},
		Agent: &workload.AgentConfig{Turns: 3, SystemLen: 10, InputLen: 5, OutputLen: 3, ToolLatency: workload.ToolLatency{Mean: tool}}})
	p := res.Passes[0]
	if p.Metrics.Completed != 12 || p.Metrics.Failed != 0 {
		t.Fatalf("completed %d, failed %d", p.Metrics.Completed, p.Metrics.Failed)
	}
	turns := map[int][]Output{}
	for _, o := range p.Outputs {
		turns[o.Session] = append(turns[o.Session], o)
	}
	for user, outs := range turns {
		arrived := srv.arrived[fmt.Sprintf("user_session_%d", user)]
		if len(outs) != 3 || len(arrived) != 3 {
			t.Fatalf("session %d: %d turns sent, %d arrived", user, len(outs), len(arrived))
		}
		for k := 1; k < 3; k++ {
			want := outs[k-1].End.Add(tool)
			if !outs[k].Start.Equal(want) || !arrived[k].Equal(want) {
				t.Errorf("session %d turn %d sent at %v, arrived at %v; want both at the last answer + the tool, %v",
					user, k, outs[k].Start.Sub(p.Start), arrived[k].Sub(p.Start), want.Sub(p.Start))
			}
			if outs[k].Tool != tool || outs[k].QueueTime != 0 {
				t.Errorf("session %d turn %d: tool %v, held %v", user, k, outs[k].Tool, outs[k].QueueTime)
			}
		}
	}
	s := p.Sessions
	if s == nil || s.Started != 4 || s.Finished != 4 || s.Cut != 0 || len(s.Sessions) != 4 {
		t.Fatalf("sessions: %+v", s)
	}
	for _, r := range s.Sessions {
		outs := turns[r.User]
		if r.Turns != 3 || r.Tools != 2*tool || r.Held != 0 || r.Duration != outs[2].End.Sub(outs[0].Start) || r.Server != r.Duration-r.Tools {
			t.Errorf("session %d: %+v", r.User, r)
		}
	}
	for _, tm := range p.Turns {
		if math.Abs(tm.TTFTFromDue.Mean-tm.TTFT.Mean) > 1e-9 {
			t.Errorf("turn %d: TTFT from due %.1f ms, from send %.1f ms: nothing held a turn", tm.Turn, tm.TTFTFromDue.Mean, tm.TTFT.Mean)
		}
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	if !regexp.MustCompile(`Turns +3\.00 +3\.00\n`).MatchString(sum.String()) || !strings.Contains(sum.String(), "Sessions that ran every turn:            4") {
		t.Errorf("the summary's sessions:\n%s", sum.String())
	}
	j, err := res.JSON(true)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Sessions struct {
			Started, Finished int
			MeanTurns         float64          `json:"mean_turns"`
			MeanToolsS        float64          `json:"mean_tools_s"`
			PerSession        []map[string]any `json:"per_session"`
		}
		Turns           []map[string]any
		RequestSessions []int     `json:"request_sessions"`
		RequestTurns    []int     `json:"request_turns"`
		DueTimes        []float64 `json:"due_times"`
	}
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	if out.Sessions.Started != 4 || out.Sessions.MeanTurns != 3 || math.Abs(out.Sessions.MeanToolsS-0.6) > 1e-9 || len(out.Sessions.PerSession) != 4 || out.Turns[1]["p99_ttft_from_due_ms"] == nil {
		t.Errorf("the JSON's sessions and turns: %+v %v", out.Sessions, out.Turns)
	}
	for i, o := range p.Outputs {
		if len(out.DueTimes) != len(p.Outputs) || out.RequestSessions[i] != o.Session || out.RequestTurns[i] != o.Turn || out.DueTimes[i] != o.Due.Seconds() {
			t.Fatalf("the detailed JSON's request %d: session, turn and due time missing or wrong", i)
		}
	}
}

// TestBenchAgentSessionsCapped: with --max-concurrency 1 the sessions run
// one after another; each later session's first turn was due at the start
// and held on the client until the one before ended, which its TTFT from
// due shows and its TTFT from send does not.
func TestBenchAgentSessionsCapped(t *testing.T) {
	srv := &agentServer{ttft: func(string) time.Duration { return 100 * ms }}
	res := runAgents(t, srv, Config{NumPrompts: 3, MaxConcurrency: 1, Percentiles: []float64{99},
		Agent: &workload.AgentConfig{Turns: 2, SystemLen: 10, InputLen: 5, OutputLen: 3, ToolLatency: workload.ToolLatency{Mean: 200 * ms}}})
	p := res.Passes[0]
	s := p.Sessions
	if s.Started != 3 || p.Metrics.Completed != 6 {
		t.Fatalf("%d sessions, %d requests", s.Started, p.Metrics.Completed)
	}
	// A session takes two answers of 120 ms and a 200 ms tool: the
	// second is held one session long, the third two.
	one := s.Sessions[0].Duration
	for i, r := range s.Sessions {
		if r.Held != time.Duration(i)*one || r.Duration != r.Held+one {
			t.Errorf("session %d: held %v, duration %v; want %v held", i, r.Held, r.Duration, time.Duration(i)*one)
		}
	}
	first := p.Turns[0]
	// The holds are 0, one and two sessions: one on average.
	if math.Abs(first.TTFT.Mean-100) > 1e-6 || math.Abs(first.TTFTFromDue.Mean-100-float64(one.Milliseconds())) > 1e-6 {
		t.Errorf("turn 1: TTFT %.1f ms, from due %.1f ms; want 100 and 100 + a session (%v)", first.TTFT.Mean, first.TTFTFromDue.Mean, one)
	}
}

// TestServerViewMeans: the server view averages the running and waiting
// gauges over its readings, beside their peaks: the load a latency is
// read against.
func TestServerViewMeans(t *testing.T) {
	var readings []Snapshot
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, g := range [][2]int{{0, 0}, {4, 2}, {8, 6}, {4, 0}} {
		sc, err := promtext.Parse(strings.NewReader(fmt.Sprintf("vllm:num_requests_running %d\nvllm:num_requests_waiting %d\n", g[0], g[1])))
		if err != nil {
			t.Fatal(err)
		}
		readings = append(readings, Snapshot{At: at.Add(time.Duration(i) * time.Second), Scrape: sc})
	}
	v := NewServerView(readings, nil)
	if v.MeanRunning != 4 || v.MeanWaiting != 2 || v.PeakRunning != 8 || v.PeakWaiting != 6 {
		t.Errorf("running mean %v peak %v, waiting mean %v peak %v; want 4, 8, 2, 6", v.MeanRunning, v.PeakRunning, v.MeanWaiting, v.PeakWaiting)
	}
}

// TestBenchAgentDurationCountsSent: with --duration, the result's
// num_prompts is the requests the run sent, as vLLM's is the requests it
// sends: the turns of the sessions --duration kept from starting are not
// among them.
func TestBenchAgentDurationCountsSent(t *testing.T) {
	srv := &agentServer{ttft: func(string) time.Duration { return 100 * ms }}
	res := runAgents(t, srv, Config{NumPrompts: 6, RequestRate: 1, Burstiness: math.Inf(1), Duration: 3500 * ms, Percentiles: []float64{99},
		Agent: &workload.AgentConfig{Turns: 2, SystemLen: 10, InputLen: 5, OutputLen: 3}})
	p := res.Passes[0]
	if p.Sessions.Started != 3 || p.Metrics.Completed != 6 {
		t.Fatalf("%d sessions, %d requests: want the 3 that start in 3.5 s at 1/s (at 1, 2 and 3 s), each of 2 turns", p.Sessions.Started, p.Metrics.Completed)
	}
	j, err := res.JSON(false)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		NumPrompts int `json:"num_prompts"`
	}
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	if res.Config.NumPrompts != 6 || out.NumPrompts != 6 {
		t.Errorf("num_prompts %d (JSON %d): want the 6 requests sent, not the 12 the 6 sessions planned", res.Config.NumPrompts, out.NumPrompts)
	}
}

// TestBenchAgentSessionsChat: against a chat endpoint an agent session's
// turns carry the conversation as an agent sends it: the system prompt as a
// system message, each input as a user message and each answer, as it was
// streamed, as an assistant message, growing turn by turn.
func TestBenchAgentSessionsChat(t *testing.T) {
	srv := &agentServer{ttft: func(string) time.Duration { return 100 * ms }}
	res := runAgents(t, srv, Config{NumPrompts: 2, RequestRate: 1, Burstiness: math.Inf(1), Percentiles: []float64{99},
		Backend: "openai-chat", Endpoint: "/v1/chat/completions",
		Agent: &workload.AgentConfig{Turns: 3, SystemLen: 10, InputLen: 5, OutputLen: 3, ToolLatency: workload.ToolLatency{Mean: 200 * ms}}})
	if c := res.Passes[0].Metrics.Completed; c != 6 {
		t.Fatalf("completed %d, want 6", c)
	}
	want := []string{"system,user", "system,user,assistant,user", "system,user,assistant,user,assistant,user"}
	if len(srv.chats) != 2 {
		t.Fatalf("chat requests from %d sessions, want 2", len(srv.chats))
	}
	for session, reqs := range srv.chats {
		if len(reqs) != len(want) {
			t.Fatalf("%s sent %d chat requests, want %d", session, len(reqs), len(want))
		}
		for k, msgs := range reqs {
			var roles []string
			for _, m := range msgs {
				roles = append(roles, fmt.Sprint(m["role"]))
				if m["role"] == "assistant" && m["content"] != " t0 t1 t2" {
					t.Errorf("%s turn %d: assistant content %q, want the streamed answer", session, k, m["content"])
				}
			}
			if got := strings.Join(roles, ","); got != want[k] {
				t.Errorf("%s turn %d: roles %s, want %s", session, k, got, want[k])
			}
		}
	}
}

// TestGraphSessionMetrics: a replayed trace's session, whose calls run in
// parallel, counts each moment once: the server's time is the time a call
// of it was in flight, the tools' the waits no call overlapped, and the
// three add up to its duration.
func TestGraphSessionMetrics(t *testing.T) {
	call := func(after ...int) workload.GraphCall { return workload.GraphCall{After: after} }
	plan := &workload.Plan{Graph: &workload.GraphPlan{Sessions: []workload.GraphSession{{ID: "trace0_x", Source: "x.json",
		Calls: []workload.GraphCall{call(), call(0), call(0), call(1, 2)}}}}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	out := func(c, turn int, due, tool, from, to float64) Output {
		return Output{Success: true, Session: 0, Call: c, Turn: turn, Due: time.Duration(due * float64(time.Second)), Tool: time.Duration(tool * float64(time.Second)),
			Start: at(from), End: at(to), Latency: at(to).Sub(at(from))}
	}
	outs := []Output{out(0, 0, 0, 0, 0, 1), out(1, 1, 1.2, 0.2, 1.2, 2.2), out(2, 1, 1.2, 0.2, 1.2, 3.2), out(3, 2, 3.6, 0.4, 3.6, 4)}
	m := sessionMetrics(outs, plan, start, []float64{99})
	if m.Started != 1 || m.Finished != 1 || len(m.Sessions) != 1 {
		t.Fatalf("%+v", m)
	}
	s := m.Sessions[0]
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	if s.ID != "trace0_x" || s.Source != "x.json" || s.Turns != 4 || s.Planned != 4 || ms(s.Duration) != 4000 || ms(s.Server) != 3400 || ms(s.Tools) != 600 || ms(s.Held) != 0 {
		t.Errorf("session %+v: want 4 calls over 4 s, 3.4 s on the server (once for the two in parallel), 0.6 s on tools", s)
	}
}

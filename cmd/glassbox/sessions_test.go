package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// memNet serves HTTP over in-memory pipes, so that a server and its
// clients in one synctest bubble wait only on the bubble's clock.
type memNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (p *memNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *memNet) Close() error   { p.once.Do(func() { close(p.closed) }); return nil }
func (p *memNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (p *memNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case p.conns <- s:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// benchBubble runs glassbox serve (its replica and handler, as serve wires
// them, on the simulated GPU in real time) and glassbox bench against it
// in a synctest bubble: the server's steps sleep their simulated time on
// the bubble's clock, so the run's timings are exact and take no wall
// time. It returns bench's result.
func benchBubble(t *testing.T, serveArgs, benchArgs []string) *bench.Result {
	t.Helper()
	var res *bench.Result
	synctest.Test(t, func(t *testing.T) {
		sf, err := parseServeFlags(serveArgs, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		o, err := newObservability(&sf.obs, log)
		if err != nil {
			t.Fatal(err)
		}
		r, err := newReplica(sf, o, log)
		if err != nil {
			t.Fatal(err)
		}
		r.Start()
		defer r.Close()
		ln := &memNet{conns: make(chan net.Conn), closed: make(chan struct{})}
		srv := &http.Server{Handler: r.Handler()}
		served := make(chan struct{})
		go func() { srv.Serve(ln); close(served) }()
		defer func() { srv.Close(); <-served }()
		bf, err := parseBenchFlags(append([]string{"--base-url", "http://glassbox", "--metrics-url", "-", "--disable-tqdm"}, benchArgs...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{DialContext: ln.dial, MaxIdleConnsPerHost: 1024}
		defer tr.CloseIdleConnections()
		bf.cfg.HTTPClient = &http.Client{Transport: tr}
		if res, err = bench.Run(context.Background(), bf.cfg); err != nil {
			t.Fatal(err)
		}
	})
	return res
}

// simulateRun runs glassbox simulate's flags.
func simulateRun(t *testing.T, args []string) *simulate.Result {
	t.Helper()
	f, err := parseSimulateFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.replicaConfig()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := f.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate.Run(context.Background(), simulate.Config{Replica: rc, Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// turnsBySession groups outputs by session, in turn order.
func turnsBySession(t *testing.T, outs []bench.Output) map[int][]bench.Output {
	t.Helper()
	m := map[int][]bench.Output{}
	for _, o := range outs {
		if o.Start.IsZero() {
			continue
		}
		if o.Turn != len(m[o.Session]) {
			t.Fatalf("session %d sent turn %d after %d turns", o.Session, o.Turn, len(m[o.Session]))
		}
		m[o.Session] = append(m[o.Session], o)
	}
	return m
}

// TestAgentSessionsOnTheirOwnClocks: agent sessions from flags, sent by
// bench to a live glassbox server and run by simulate in virtual time on
// the same plan. In both, every session sends its turn k+1 when its turn
// k's answer is in and the tool's 300 ms have passed (bench to the
// nanosecond on the bubble's clock; simulate at the first engine step
// boundary after), whatever the other sessions are doing; --duration stops
// starting sessions and the sessions it started run all their turns; and
// the two agree: the same sessions, starting at the same times, each turn
// sent within the simulated frontend's time and a step of the other's
// (simulate models vLLM's API server, which glassbox serve in a bubble
// does in no time).
func TestAgentSessionsOnTheirOwnClocks(t *testing.T) {
	const tool, turns = 300 * time.Millisecond, 4
	load := []string{"--dataset-name", "agent", "--num-prompts", "12", "--agent-turns", "4", "--agent-system-prompt-len", "300",
		"--agent-input-len", "40", "--agent-output-len", "16", "--agent-tool-latency", "300ms", "--request-rate", "1.5",
		"--duration", "5s", "--seed", "3"}
	engine := []string{"--sim-model", "llama-3.1-8b", "--sim-hardware", "h100"}
	b := benchBubble(t, append([]string{"--served-model-name", "m"}, engine...), load)
	benchSessions := turnsBySession(t, b.Passes[0].Outputs)
	sim := simulateRun(t, append(append([]string{}, engine...), load...))
	simSessions := turnsBySession(t, sim.Outputs)
	if len(benchSessions) < 4 || len(benchSessions) >= 12 {
		t.Fatalf("bench ran %d sessions: want those of 12 that start in the first 5 s at 1.5/s", len(benchSessions))
	}
	if len(simSessions) != len(benchSessions) {
		t.Fatalf("simulate ran %d sessions, bench %d", len(simSessions), len(benchSessions))
	}
	// What simulate adds to a request that serve in a bubble does not:
	// the frontend's arrival, 16 streamed tokens and its finish, its lag
	// and the wait for a step boundary (a step here is some 6 ms).
	fe := sim.Frontend
	slack := fe.Arrival + 16*fe.PerToken + fe.Finish + 10*time.Millisecond
	for user, bt := range benchSessions {
		st := simSessions[user]
		if len(bt) != turns || len(st) != turns {
			t.Fatalf("session %d ran %d turns in bench, %d in simulate; --duration must let a started session finish", user, len(bt), len(st))
		}
		if bt[0].Due != st[0].Due || bt[0].Due >= 5*time.Second {
			t.Errorf("session %d starts at %v in bench, %v in simulate", user, bt[0].Due, st[0].Due)
		}
		for k := 1; k < turns; k++ {
			if want := bt[k-1].End.Add(tool); !bt[k].Start.Equal(want) || bt[k].QueueTime != 0 {
				t.Errorf("bench: session %d turn %d sent %v after its last answer (held %v), want the tool's %v", user, k, bt[k].Start.Sub(bt[k-1].End), bt[k].QueueTime, tool)
			}
			due := st[k-1].End.Sub(simulate.Epoch) + tool
			if st[k].Due != due || st[k].QueueTime < 0 || st[k].QueueTime > 10*time.Millisecond {
				t.Errorf("simulate: session %d turn %d due %v, sent %v after; want due at the last answer + the tool (%v), sent within a step", user, k, st[k].Due, st[k].QueueTime, due)
			}
		}
		for k := range turns {
			bs, ss := bt[k].Start.Sub(b.Passes[0].Start), st[k].Start.Sub(simulate.Epoch)
			if d := ss - bs; d < 0 || d > time.Duration(k+1)*slack {
				t.Errorf("session %d turn %d sent at %v in bench, %v in simulate: want simulate no earlier, and within %v a turn", user, k, bs, ss, slack)
			}
		}
	}
}

// TestAgentSessionFlags: what agent sessions' flags cannot run is refused
// by name; --agent-at-duration cut ends the sessions running at
// --duration, counted as cut, with tool latencies drawn from a
// distribution.
func TestAgentSessionFlags(t *testing.T) {
	load := []string{"--dataset-name", "agent", "--num-prompts", "20", "--agent-turns", "6", "--agent-system-prompt-len", "100",
		"--agent-input-len", "20", "--agent-output-len", "8", "--request-rate", "4", "--seed", "9"}
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"--agent-at-duration", "stop", "--duration", "3s"}, "--agent-at-duration"},
		{[]string{"--agent-at-duration", "cut"}, "--duration"},
		{[]string{"--agent-tool-latency-distribution", "pareto"}, "--agent-tool-latency-distribution"},
		{[]string{"--agent-tool-latency-distribution", "lognormal"}, "--agent-tool-latency-stddev"},
		{[]string{"--agent-tool-latency", "-1s"}, "--agent-tool-latency"},
	} {
		err := run(context.Background(), append(append([]string{"simulate"}, load...), c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.name)
		}
	}
	path := filepath.Join(t.TempDir(), "sim.json")
	args := append(append([]string{"simulate", "--result-filename", path, "--save-detailed"}, load...), "--duration", "3s",
		"--agent-at-duration", "cut", "--agent-tool-latency", "1s", "--agent-tool-latency-distribution", "exponential")
	if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	j := resultJSON(t, path)
	s, _ := j["sessions"].(map[string]any)
	per, _ := s["per_session"].([]any)
	if s == nil || s["cut"].(float64) < 1 || len(per) != int(s["started"].(float64)) || len(per) >= 20 {
		t.Fatalf("sessions: %v", s)
	}
	// num_prompts is the turns sent (bench's too), not the sessions asked
	// for nor every turn they planned.
	if n, sent := j["num_prompts"], j["completed"].(float64)+j["failed"].(float64); n != sent || sent <= float64(len(per)) {
		t.Errorf("num_prompts %v: want the %v requests sent", n, sent)
	}
	tools := map[float64]bool{}
	for _, x := range per {
		r := x.(map[string]any)
		if r["start_s"].(float64) >= 3 || r["turns"].(float64) > r["planned_turns"].(float64) {
			t.Errorf("session %v", r)
		}
		if r["turns"].(float64) > 1 {
			tools[r["tools_s"].(float64)] = true
		}
	}
	if len(tools) < 3 {
		t.Errorf("the sessions' tool times %v: exponential draws differ", tools)
	}
}

package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// TestConstantOffsets: inference-perf's constant load sends exactly
// int(rate·duration) requests, the last at the stage's end, with
// exponential (not fixed) gaps.
func TestConstantOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	offs := ConstantOffsets(int(20.0*600), 600, rng)
	if len(offs) != 12000 {
		t.Fatalf("%d offsets, want 12000", len(offs))
	}
	if last := offs[len(offs)-1]; (last - 600*time.Second).Abs() > time.Microsecond {
		t.Errorf("last offset %v, want 600s", last)
	}
	var gaps []float64
	prev := time.Duration(0)
	for _, o := range offs {
		if o < prev {
			t.Fatal("offsets go backwards")
		}
		gaps = append(gaps, (o - prev).Seconds())
		prev = o
	}
	if cv := std(gaps) / mean(gaps); cv < 0.9 || cv > 1.1 {
		t.Errorf("gap coefficient of variation %.2f, want about 1 (exponential)", cv)
	}
	if n := len(PoissonOffsets(7, 30, rng)); n != 210 {
		t.Errorf("poisson stage of 7/s × 30 s gave %d requests, want 210", n)
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func std(x []float64) float64 {
	m, s := mean(x), 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)))
}

// fixedPlan is a plan of the given stages over prompts "p0", "p1", ….
func fixedPlan(n int, stages ...[]time.Duration) *Plan {
	p := &Plan{Interval: 2 * time.Second}
	for i := range n {
		p.Prompts = append(p.Prompts, Sample{Prompt: "p" + string(rune('0'+i)), PromptLen: 1, OutputLen: 1})
	}
	for _, offs := range stages {
		p.Stages = append(p.Stages, Stage{Duration: offs[len(offs)-1], Offsets: offs})
	}
	return p
}

func secs(s ...float64) []time.Duration {
	var out []time.Duration
	for _, v := range s {
		out = append(out, time.Duration(v*float64(time.Second)))
	}
	return out
}

// TestScheduleStagesDrain: the next stage starts Interval after the
// previous stage's last completion, never while it still has requests out.
func TestScheduleStagesDrain(t *testing.T) {
	s := fixedPlan(2, secs(0, 1), secs(0, 0.5)).Start()
	a, next := s.Poll(0)
	if len(a) != 1 || next != time.Second {
		t.Fatalf("at 0: %d ready, next %v", len(a), next)
	}
	b, _ := s.Poll(time.Second)
	s.Finished(a[0], 3*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if r, next := s.Poll(3 * time.Second); len(r) != 0 || next >= 0 {
		t.Fatalf("stage 0 still has a request out, yet %d ready, next %v", len(r), next)
	}
	s.Finished(b[0], 10*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	r, next := s.Poll(10 * time.Second)
	if len(r) != 0 || next != 12*time.Second {
		t.Fatalf("after the drain at 10s: %d ready, next %v; want the next stage at 12s", len(r), next)
	}
	r, _ = s.Poll(12 * time.Second)
	if len(r) != 1 || r[0].Stage != 1 || r[0].Due != 12*time.Second || r[0].Sample.Prompt != "p0" {
		t.Fatalf("stage 1 opened with %+v; want p0 again, due at 12s", r)
	}
	s.Finished(r[0], 13*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	r, _ = s.Poll(13 * time.Second)
	s.Finished(r[0], 14*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if _, next := s.Poll(14 * time.Second); !s.Done() || next >= 0 {
		t.Error("the schedule is not done after every request finished")
	}
}

// TestScheduleSessions: a user's rounds go one at a time, each carrying
// the conversation so far (inference-perf's user session), in order.
func TestScheduleSessions(t *testing.T) {
	p := fixedPlan(2, secs(0, 0, 0, 0.1))
	p.Sessions = true
	s := p.Start()
	r, _ := s.Poll(0)
	if len(r) != 2 || r[0].User != 0 || r[1].User != 1 || r[0].Sample.Prompt != " p0" {
		t.Fatalf("round 0: %+v; want users 0 and 1, prompt \" p0\"", r)
	}
	if more, _ := s.Poll(time.Second); len(more) != 0 {
		t.Fatalf("user 0's second round went while its first was in flight: %+v", more)
	}
	s.Finished(r[0], 2*time.Second, Outcome{OK: true, Text: "answer", OutputTokens: 1})
	more, _ := s.Poll(2 * time.Second)
	if len(more) != 1 || more[0].User != 0 || more[0].Sample.Prompt != " p0 answer p0" || more[0].Due != 0 || more[0].Sample.PromptLen != 3 {
		t.Fatalf("user 0's second round: %+v; want \" p0 answer p0\", due at 0, 3 tokens", more)
	}
	s.Finished(r[1], 3*time.Second, Outcome{OK: false, Text: "", OutputTokens: 0})
	more, _ = s.Poll(3 * time.Second)
	if len(more) != 1 || more[0].Sample.Prompt != " p1" {
		t.Fatalf("after a failed round user 1 sent %+v; want its conversation unchanged (\" p1\")", more)
	}
}

// TestScheduleConcurrencyAndUntil: vLLM's --max-concurrency holds requests
// back (still due at their offsets), and --duration stops sending.
func TestScheduleConcurrencyAndUntil(t *testing.T) {
	p := fixedPlan(3, secs(0, 0, 0, 5))
	p.MaxConcurrency = 2
	p.Until = 4 * time.Second
	s := p.Start()
	r, _ := s.Poll(0)
	if len(r) != 2 {
		t.Fatalf("%d sent under a cap of 2", len(r))
	}
	s.Finished(r[0], time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	more, next := s.Poll(time.Second)
	if len(more) != 1 || more[0].Due != 0 || more[0].Index != 2 {
		t.Fatalf("after a slot freed: %+v", more)
	}
	if next != 5*time.Second {
		t.Errorf("next %v, want 5s", next)
	}
	s.Finished(r[1], 2*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	s.Finished(more[0], 3*time.Second, Outcome{OK: true, Text: "", OutputTokens: 1})
	if late, _ := s.Poll(5 * time.Second); len(late) != 0 || !s.Done() {
		t.Errorf("sent %d after --duration ended, done %v", len(late), s.Done())
	}
	idx := []int{r[0].Index, r[1].Index, more[0].Index}
	if !slices.Equal(idx, []int{0, 1, 2}) {
		t.Errorf("indices %v", idx)
	}
}

// TestSendTimesIgnoreLatePolls: a caller that polls late (the simulator
// polls at step boundaries) still sends each request at the moment its
// client would have: its due time, the finish that freed its slot, or its
// user's answer plus the tool's time; never the poll's.
func TestSendTimesIgnoreLatePolls(t *testing.T) {
	p := fixedPlan(3, secs(0.5, 0.7, 0.9, 5))
	p.MaxConcurrency = 2
	s := p.Start()
	r, _ := s.Poll(time.Second) // polled late: due at 0.5 s and 0.7 s
	if len(r) != 2 || r[0].Send != 500*time.Millisecond || r[1].Send != 700*time.Millisecond {
		t.Fatalf("sent %+v; want sends at their due times 0.5 s and 0.7 s", r)
	}
	s.Finished(r[0], 1200*time.Millisecond, Outcome{OK: true, OutputTokens: 1})
	more, _ := s.Poll(1500 * time.Millisecond)
	if len(more) != 1 || more[0].Due != 900*time.Millisecond || more[0].Send != 1200*time.Millisecond {
		t.Fatalf("after a slot freed at 1.2 s, polled at 1.5 s: %+v; want due 0.9 s, sent 1.2 s", more)
	}

	p = fixedPlan(1, secs(0, 0))
	p.Sessions = true
	s = p.Start()
	r, _ = s.Poll(0)
	s.Finished(r[0], 2*time.Second, Outcome{OK: true, Text: "a", OutputTokens: 1})
	more, _ = s.Poll(3 * time.Second)
	if len(more) != 1 || more[0].Send != 2*time.Second {
		t.Fatalf("a user's next round after its answer at 2 s, polled at 3 s: %+v; want sent at 2 s", more)
	}
}

// TestReplayPlan: a detailed bench result replays its successful requests
// at their send offsets with their token counts.
func TestReplayPlan(t *testing.T) {
	trace := `{"input_lens":[30,12,40],"output_lens":[5,0,7],"start_times":[0.5,0.1,0.2],"errors":["","boom",""]}`
	p, err := ReplayPlan(context.Background(), strings.NewReader(trace), simTok{sim.NewVocab()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Prompts) != 2 || p.Prompts[0].PromptLen != 40 || p.Prompts[0].OutputLen != 7 || p.Prompts[1].PromptLen != 30 ||
		!slices.Equal(p.Stages[0].Offsets, secs(0.2, 0.5)) || !p.IgnoreEOS {
		t.Errorf("replay = %+v, offsets %v", p.Prompts, p.Stages[0].Offsets)
	}
	for _, bad := range []string{`{}`, `{"input_lens":[1],"output_lens":[]}`, `not json`, `{"input_lens":[3],"output_lens":[1],"start_times":[0],"errors":["x"]}`} {
		if _, err := ReplayPlan(context.Background(), strings.NewReader(bad), simTok{sim.NewVocab()}, 1); err == nil {
			t.Errorf("trace %s was accepted", bad)
		}
	}
}

// TestSweepGeometricRates: a geometric sweep's stages run from 1 to the
// saturation rate, closer together near it.
func TestSweepGeometricRates(t *testing.T) {
	g := (&Sweep{NumStages: 3, Geometric: true}).rates(9)
	if g[0] != 1 || g[2] != 9 || g[1] <= 5 {
		t.Errorf("geometric rates %v, want 1 … 9, closer to 9", g)
	}
}

// TestSessionNamesAndRounds: each request carries its session's name and
// round as inference-perf's user sessions count them: rounds from 1 as
// they go, a recycled conversation a new session of its own name, and a
// later stage new sessions (round 1 again) under the users' last names.
func TestSessionNamesAndRounds(t *testing.T) {
	one := func(s string) Sample { return Sample{Prompt: s, PromptLen: 1, OutputLen: 1} }
	p := fixedPlan(2, secs(0, 0, 0, 0, 0, 0), secs(0, 0))
	p.Sessions = true
	p.Agent = &AgentPlan{Recycle: true}
	for range 2 {
		p.Agent.Sessions = append(p.Agent.Sessions, AgentSession{System: one("sys"), Turns: []AgentTurn{{Input: one("a")}, {Input: one("b")}}})
	}
	p.SessionName = func(user, conv int) string {
		if conv == 0 {
			return fmt.Sprintf("conv_%d", user)
		}
		return fmt.Sprintf("slot_%d_convo_%d", user, conv)
	}
	var got []string
	for _, r := range driveVirtual(t, p.Start(), func(Request) time.Duration { return time.Second }, nil) {
		got = append(got, fmt.Sprintf("%d:%s/%d", r.Stage, r.SessionID, r.Round))
	}
	want := []string{"0:conv_0/1", "0:conv_1/1", "0:conv_0/2", "0:conv_1/2", "0:slot_0_convo_1/1", "0:slot_1_convo_1/1",
		"1:slot_0_convo_1/1", "1:slot_1_convo_1/1"}
	if !slices.Equal(got, want) {
		t.Errorf("sessions and rounds %v, want %v", got, want)
	}
}

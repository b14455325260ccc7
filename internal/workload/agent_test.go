package workload

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// TestAgentSessions: each session's first prompt is the shared system
// prompt and its first input; each later one the conversation so far (every
// prompt and answer) and the next input, sent once the answer is back and
// the tool's latency has passed, each session one turn at a time.
func TestAgentSessions(t *testing.T) {
	tk := simTok{sim.NewVocab()}
	c := AgentConfig{Sessions: 2, Turns: 3, SystemLen: 40, InputLen: 10, OutputLen: 5, ToolLatency: ToolLatency{Mean: 2 * time.Second}, Rate: 1, Burstiness: 1}
	p, err := NewAgentPlan(context.Background(), c, tk, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if p.NumRequests() != 6 || p.AgentTurns() != 3 {
		t.Fatalf("%d requests, %d turns", p.NumRequests(), p.AgentTurns())
	}
	system := p.Agent.Sessions[0].System.Prompt
	if p.Agent.Sessions[1].System.Prompt != system || system == "" {
		t.Fatal("the sessions do not share their system prompt")
	}
	sch := p.Start()
	var sent []Request
	poll := func(at time.Duration) time.Duration {
		ready, next := sch.Poll(at)
		sent = append(sent, ready...)
		return next
	}
	first, second := p.Stages[0].Offsets[0], p.Stages[0].Offsets[1]
	poll(first)
	if len(sent) != 1 || sent[0].User != 0 || sent[0].Turn != 0 || !strings.HasPrefix(sent[0].Sample.Prompt, system+" ") {
		t.Fatalf("at the first session's start: %+v", sent)
	}
	poll(second)
	if len(sent) != 2 || sent[1].User != 1 || sent[1].Turn != 0 {
		t.Fatalf("at the second session's start: %+v", sent)
	}
	// Session 0's answer; its next turn waits for the tool.
	done := second + time.Second
	answer := tk.v.Encode("ANSWER")
	sch.Finished(sent[0], done, Outcome{OK: true, Text: "ANSWER", IDs: answer, OutputTokens: len(answer)})
	if next := poll(done); len(sent) != 2 || next != done+2*time.Second {
		t.Fatalf("the next turn went before the tool ran: %d sent, next poll %v", len(sent), next)
	}
	poll(done + 2*time.Second)
	if len(sent) != 3 {
		t.Fatalf("after the tool: %d sent", len(sent))
	}
	r := sent[2]
	want := sent[0].Sample.Prompt + " ANSWER " + p.Agent.Sessions[0].Turns[1].Input.Prompt
	if r.User != 0 || r.Turn != 1 || r.Sample.Prompt != want || r.Sample.PromptLen != len(r.Sample.PromptIDs) {
		t.Fatalf("turn 1: %+v, want the prompt %q", r, want)
	}
	// A failed turn is not waited on: the session goes on at once.
	sch.Finished(sent[1], done, Outcome{OK: false})
	if poll(done + 2*time.Second); len(sent) != 4 || sent[3].User != 1 || sent[3].Turn != 1 {
		t.Fatalf("after a failure: %+v", sent[3:])
	}
	for _, r := range sent[2:] {
		sch.Finished(r, done+3*time.Second, Outcome{OK: true, Text: "B"})
	}
	now := done + 3*time.Second
	for range 10 {
		if sch.Done() {
			break
		}
		next := poll(now)
		for _, r := range sent[4:] {
			sch.Finished(r, now, Outcome{OK: true, Text: "C"})
		}
		sent = sent[:4]
		if next > now {
			now = next
		}
	}
	if !sch.Done() {
		t.Error("the sessions never finished")
	}
}

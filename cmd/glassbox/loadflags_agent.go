package main

import (
	"flag"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// agentLoadFlags describe agent sessions (--dataset-name agent): sessions
// arrive at --request-rate (--num-prompts of them), and each runs its turns
// one after another, the conversation growing by an answer and a tool's
// result each turn, the tool's latency between turns.
type agentLoadFlags struct {
	turns, systemLen, inputLen, outputLen int
	toolLatency                           time.Duration
}

func (a *agentLoadFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&a.turns, "agent-turns", 8, "agent: turns of each session (--num-prompts sessions, started at --request-rate)")
	fs.IntVar(&a.systemLen, "agent-system-prompt-len", 2000, "agent: tokens of the system prompt (instructions and tool definitions) every session shares")
	fs.IntVar(&a.inputLen, "agent-input-len", 200, "agent: tokens each turn adds after the answer: the user's message, then a tool's result")
	fs.IntVar(&a.outputLen, "agent-output-len", 100, "agent: output tokens of each turn")
	fs.DurationVar(&a.toolLatency, "agent-tool-latency", 2*time.Second, "agent: the tool's time between an answer and the next turn")
}

// apply sets c's agent sessions when the dataset is agent.
func (a *agentLoadFlags) apply(c *bench.Config) {
	if c.Dataset.Name != "agent" {
		return
	}
	c.Agent = &workload.AgentConfig{Turns: a.turns, SystemLen: a.systemLen, InputLen: a.inputLen, OutputLen: a.outputLen, ToolLatency: a.toolLatency}
}

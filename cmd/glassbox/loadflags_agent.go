package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// agentLoadFlags describe agent sessions (--dataset-name agent): sessions
// start at --request-rate (--num-prompts of them), each on its own clock,
// and each runs its turns one after another, the conversation growing by
// an answer and a tool's result each turn, the tool's latency between
// turns.
type agentLoadFlags struct {
	turns, systemLen, inputLen, outputLen int
	toolLatency                           workload.ToolLatency
	atDuration                            string
}

func (a *agentLoadFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&a.turns, "agent-turns", 8, "agent: turns of each session (--num-prompts sessions, started at --request-rate)")
	fs.IntVar(&a.systemLen, "agent-system-prompt-len", 2000, "agent: tokens of the system prompt (instructions and tool definitions) every session shares")
	fs.IntVar(&a.inputLen, "agent-input-len", 200, "agent: tokens each turn adds after the answer: the user's message, then a tool's result")
	fs.IntVar(&a.outputLen, "agent-output-len", 100, "agent: output tokens of each turn")
	fs.DurationVar(&a.toolLatency.Mean, "agent-tool-latency", 2*time.Second, "agent: the tool's time between an answer and the next turn (the mean, with a distribution)")
	fs.StringVar(&a.toolLatency.Distribution, "agent-tool-latency-distribution", "constant", "agent: how each tool call's time is drawn: constant, exponential or lognormal (with --agent-tool-latency-stddev)")
	fs.DurationVar(&a.toolLatency.StdDev, "agent-tool-latency-stddev", 0, "agent: the lognormal tool latency's standard deviation")
	fs.StringVar(&a.atDuration, "agent-at-duration", "finish", "agent: what --duration does to the sessions running then: finish (every turn runs) or cut (no turn due from then on is sent; the sessions count as cut)")
}

// apply sets c's agent sessions when the dataset is agent.
func (a *agentLoadFlags) apply(c *bench.Config) error {
	if c.Dataset.Name != "agent" {
		return nil
	}
	if a.atDuration != "finish" && a.atDuration != "cut" {
		return fmt.Errorf("--agent-at-duration %q: want finish or cut", a.atDuration)
	}
	c.Agent = &workload.AgentConfig{Turns: a.turns, SystemLen: a.systemLen, InputLen: a.inputLen, OutputLen: a.outputLen,
		ToolLatency: a.toolLatency, Cut: a.atDuration == "cut"}
	return nil
}

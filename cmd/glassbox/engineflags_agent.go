package main

import (
	"flag"
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/replica"
)

// agentFlags are what agents meet on a server: the simulated model's tool
// calling and the Responses API's store.
type agentFlags struct {
	toolCallRate   float64
	parallelShare  float64
	responsesStore int
}

func (a *agentFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&a.toolCallRate, "sim-tool-call-rate", 0.7, "the simulated model's share of answers that call a tool under tool_choice auto, in [0, 1]")
	fs.Float64Var(&a.parallelShare, "sim-parallel-tool-calls", 0.2, "the simulated model's share of call lists that go on to one more call, in [0, 1] (one call most of the time)")
	fs.IntVar(&a.responsesStore, "responses-store-size", 1024, "Responses API responses kept for previous_response_id, item_reference, GET /v1/responses/{id} (and its input_items), cancel and background: true, least recently used evicted (0: none, as vLLM by default)")
}

// apply sets the replica's share of these flags, refusing values out of
// range by name.
func (a *agentFlags) apply(c *replica.Config) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"--sim-tool-call-rate", a.toolCallRate}, {"--sim-parallel-tool-calls", a.parallelShare}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%s %v: want a share in [0, 1]", f.name, f.v)
		}
	}
	if a.responsesStore < 0 {
		return fmt.Errorf("--responses-store-size %d: want 0 or more", a.responsesStore)
	}
	c.Sim.ToolCalls = sim.ToolCalls{Rate: a.toolCallRate, ParallelShare: a.parallelShare}
	c.ResponsesStore = a.responsesStore
	return nil
}

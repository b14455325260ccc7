package corpus

import (
	"strconv"
	"time"
)

// Agent sessions are what agents do to a server: each session's prompt is
// the conversation so far — a long system prompt every session shares
// (instructions, tool definitions) and every earlier turn — plus a tool's
// result, sent after the tool has run, so the prompts grow turn by turn on
// shared prefixes, with idle gaps between a session's requests. The prefix
// cache carries such a load: the class's incidents are those where it
// cannot, and the remedies are the cache's (turn prefix caching on, give
// the KV cache the headroom that keeps a session's blocks through its
// tool's latency, and behind a router send a session's turns to the
// replica that holds them).

// agentClass is the class of agent sessions: the doctor names the load
// that lives on its prefix cache, with the cache's remedies.
func agentClass() Class {
	return Class{Name: "agent-sessions", Finding: "prefix-reuse", Expect: Expect{Must: []string{"prefix-reuse"}, MustNot: []string{"prefix-caching"}}}
}

// idleEvictions is an agent-sessions scenario whose conversations are
// evicted while their sessions wait on tools: a limit of the metrics.
func idleEvictions(s Scenario) Scenario {
	e := Expect{MustNot: []string{"prefix-reuse", "kv-capacity-bound", "compute-bound"}}
	s.In = map[string]Override{}
	for _, c := range Clothes {
		s.In[c] = Override{Expect: e, Why: "prefixes evicted while their sessions wait on tools leave no trace in the series glassbox and vLLM export by default: the cache's free blocks include the evictable ones, so KV usage stays low, and a middling hit rate does not say how much the prompts share; vLLM's --kv-cache-metrics residency histograms (kv_block_idle_before_evict_seconds, which glassbox exports under the same flag) would show it, and the doctor does not read them yet; with a CPU offload tier the conversations come back from host memory and prefix-reuse names the load (agent-evicted-offload)"}
	}
	return s
}

// cachingOff is an agent-sessions scenario with prefix caching off: the
// doctor says to turn it on (and cannot see the reuse a cache would find).
func cachingOff(s Scenario) Scenario {
	e := Expect{Must: []string{"prefix-caching"}, MustNot: []string{"prefix-reuse"}}
	s.In = map[string]Override{}
	for _, c := range Clothes {
		s.In[c] = Override{Expect: e, Why: "with prefix caching off the metrics show prompt-heavy requests and no cache: the doctor says to turn it on, which is the remedy"}
	}
	return s
}

// agentLoad is --dataset-name agent's flags: sessions at rate per second,
// turns each, a system prompt of system tokens, input and output tokens
// each turn, the tool's latency between turns.
func agentLoad(rate string, turns, system, input, output int, latency time.Duration) []string {
	return flags("--dataset-name", "agent", "--request-rate", rate, "--agent-turns", itoa(turns), "--agent-system-prompt-len", itoa(system),
		"--agent-input-len", itoa(input), "--agent-output-len", itoa(output), "--agent-tool-latency", latency.String())
}

// agentScenarios are the agent-sessions incidents, and an agent load the
// cache carries (healthy).
func agentScenarios(sc func(name, class, why string, serve, load []string) Scenario, fast func(Scenario) Scenario) []Scenario {
	return []Scenario{
		fast(sc("h200/llama-3.1-8b/agent-sessions", "agent-sessions", "agent sessions at 1/s, 8 turns each on a 3000-token system prompt, 300 tokens of tool result and 150 generated a turn, 2 s of tool time between turns, prefix caching on: the shared prefix and each conversation so far are served from the cache (91 % of prompt tokens hit), the GPU has time to spare",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b"), (agentLoad("1", 8, 3000, 300, 150, 2*time.Second)))),
		fast(cachingOff(sc("h200/llama-3.1-8b/agent-prefix-off", "agent-sessions", "the same agent sessions with prefix caching off: every turn recomputes the system prompt and the whole conversation so far, some 22 prompt tokens for every generated one",
			flags("--sim-hardware", "h200", "--sim-model", "llama-3.1-8b", "--no-enable-prefix-caching"), (agentLoad("1", 8, 3000, 300, 150, 2*time.Second))))),
		sc("h100/qwen2.5-7b/agent-many-sessions", "agent-sessions", "agent sessions starting at 0.25/s, 10 turns each on a 3000-token system prompt, 400 tokens of tool result and 200 generated a turn, 5 s of tool time between turns, into a KV cache of 96,000 tokens: some fifteen sessions at a time, each turn's prompt mostly the cached conversation so far (90 % of prompt tokens hit)",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-model-len", "32768", "--kv-cache-memory-bytes", kvBlocks(6000, qwen7BKV)),
			agentLoad("0.25", 10, 3000, 400, 200, 5*time.Second)),
		idleEvictions(sc("h100/qwen2.5-7b/agent-evicted", "agent-sessions", "agent sessions starting at 0.25/s, 8 turns each on a 500-token system prompt, 1000 tokens of tool result and 200 generated a turn, 20 s of tool time between turns, into a KV cache of 40,000 tokens: the forty-odd sessions waiting on their tools hold several times the context the cache keeps, so most conversations are evicted before their next turn and recomputed (a tenth of prompt tokens hit), while the three or so running requests leave the cache short of its watermark most of the time",
			flags("--sim-hardware", "h100", "--sim-model", "qwen2.5-7b", "--max-model-len", "32768", "--kv-cache-memory-bytes", kvBlocks(2500, qwen7BKV)),
			agentLoad("0.25", 8, 500, 1000, 200, 20*time.Second))),
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

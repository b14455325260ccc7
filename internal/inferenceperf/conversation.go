package inferenceperf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// ConversationReplay is data.conversation_replay: inference-perf's agent
// sessions, generated from length distributions (docs/conversation_replay.md
// in inference-perf). Each conversation starts from a system prompt (a
// prefix every conversation shares, then its own part) and runs its turns
// in order, the conversation so far before each turn's input, the tool's
// latency after each answer; a conversation that ran its turns starts over
// (the closed loop).
type ConversationReplay struct {
	Seed                   *int64        `yaml:"seed"`
	NumConversations       *int          `yaml:"num_conversations"`
	SharedSystemPromptLen  *int          `yaml:"shared_system_prompt_len"`
	DynamicSystemPromptLen *Distribution `yaml:"dynamic_system_prompt_len"`
	TurnsPerConversation   *Distribution `yaml:"turns_per_conversation"`
	InputTokensPerTurn     *Distribution `yaml:"input_tokens_per_turn"`
	OutputTokensPerTurn    *Distribution `yaml:"output_tokens_per_turn"`
	ToolCallLatencySec     *Distribution `yaml:"tool_call_latency_sec"`
	MaxModelLen            *int          `yaml:"max_model_len"`
}

// Defaults of conversation_replay when a distribution is not given.
const (
	defaultReplayTurns  = 10
	defaultReplayInput  = 512
	defaultReplayOutput = 256
)

// checkConversationReplay checks data.conversation_replay.
func (c *Config) checkConversationReplay() error {
	const p = "data.conversation_replay"
	r := c.Data.ConversationReplay
	if r == nil {
		return c.at("data.type", "data.type conversation_replay needs data.conversation_replay")
	}
	if c.API.Type != "completion" {
		return c.at("api.type", "conversation_replay generates completion requests only, as in inference-perf")
	}
	if r.NumConversations == nil || *r.NumConversations < 1 || *r.NumConversations > workload.MaxRequests {
		return c.at(p+".num_conversations", "want 1 to %d conversations", workload.MaxRequests)
	}
	if r.SharedSystemPromptLen != nil && (*r.SharedSystemPromptLen < 0 || *r.SharedSystemPromptLen > 1<<24) {
		return c.at(p+".shared_system_prompt_len", "want 0 to %d tokens, got %d", 1<<24, *r.SharedSystemPromptLen)
	}
	for _, d := range []struct {
		key string
		d   *Distribution
	}{{"dynamic_system_prompt_len", r.DynamicSystemPromptLen}, {"turns_per_conversation", r.TurnsPerConversation},
		{"input_tokens_per_turn", r.InputTokensPerTurn}, {"output_tokens_per_turn", r.OutputTokensPerTurn}, {"tool_call_latency_sec", r.ToolCallLatencySec}} {
		if d.d == nil {
			continue
		}
		if err := d.d.check(); err != nil {
			return c.at(p+"."+d.key, "%v", err)
		}
	}
	if t := r.TurnsPerConversation; t != nil && *t.Max < 1 {
		return c.at(p+".turns_per_conversation", "a conversation needs at least one turn")
	}
	if r.MaxModelLen != nil {
		c.note("data.conversation_replay.max_model_len: glassbox does not cut a conversation's context; a prompt past the server's context fails as the server answers it")
	}
	return nil
}

// conversationReplayPlan makes the plan's requests the turns of
// conversation_replay's conversations: the blueprints drawn from the
// distributions (the same distributions as inference-perf's, not the same
// draws: its numpy generator is not reproduced), prompts of random text.
func conversationReplayPlan(ctx context.Context, r *ConversationReplay, p *workload.Plan, tk workload.Tokenizer, rng *rand.Rand) ([]workload.Sample, error) {
	if r.Seed != nil {
		rng = rand.New(rand.NewPCG(uint64(*r.Seed), 0xc0ffee))
	}
	n := *r.NumConversations
	draw := func(d *Distribution, count, def int) []int {
		if d == nil {
			out := make([]int, count)
			for i := range out {
				out[i] = def
			}
			return out
		}
		return d.sample(count, rng)
	}
	turns := draw(r.TurnsPerConversation, n, defaultReplayTurns)
	dynamic := draw(r.DynamicSystemPromptLen, n, 0)
	total := 0
	for i := range turns {
		turns[i] = max(turns[i], 1)
		total += turns[i]
	}
	inputs := draw(r.InputTokensPerTurn, total, defaultReplayInput)
	outputs := draw(r.OutputTokensPerTurn, total, defaultReplayOutput)
	var latencies []int
	if r.ToolCallLatencySec != nil {
		latencies = r.ToolCallLatencySec.sample(total, rng)
	}
	shared := 0
	if r.SharedSystemPromptLen != nil {
		shared = *r.SharedSystemPromptLen
	}
	lens := append([]int{shared}, dynamic...)
	lens = append(lens, inputs...)
	texts, err := workload.RandomTexts(ctx, tk, lens, rng)
	if err != nil {
		return nil, fmt.Errorf("conversation_replay: %w", err)
	}
	if err := p.SetSeparator(ctx, tk); err != nil {
		return nil, err
	}
	p.Sessions, p.Agent = true, &workload.AgentPlan{Recycle: true, Sessions: make([]workload.AgentSession, n)}
	p.SessionName = replaySessionName
	prompts := make([]workload.Sample, n)
	next := 1 + n
	for i := range n {
		s := &p.Agent.Sessions[i]
		s.System = joinPrompts(p, texts[0], texts[1+i])
		prompts[i] = s.System
		for range turns[i] {
			in := texts[next]
			in.OutputLen = max(outputs[next-1-n], 1)
			var lat int
			if latencies != nil {
				lat = latencies[next-1-n]
			}
			s.Turns = append(s.Turns, workload.AgentTurn{Input: in, ToolLatency: toolLatency(lat)})
			next++
		}
	}
	return prompts, nil
}

// replaySessionName is conversation_replay's name for a slot's conv-th
// conversation of a stage: conv_N for its first, slot_N_convo_C for the
// C-th that starts over in its slot.
func replaySessionName(slot, conv int) string {
	if conv == 0 {
		return fmt.Sprintf("conv_%d", slot)
	}
	return fmt.Sprintf("slot_%d_convo_%d", slot, conv)
}

// joinPrompts is a and b with a space between (p's Separator in ids), as
// inference-perf joins the shared and the conversation's own system prompt
// (a when b is empty).
func joinPrompts(p *workload.Plan, a, b workload.Sample) workload.Sample {
	if b.PromptLen == 0 {
		return a
	}
	if a.PromptLen == 0 {
		return b
	}
	s := workload.Sample{Prompt: a.Prompt + " " + b.Prompt, PromptLen: a.PromptLen + len(p.Separator) + b.PromptLen}
	if a.PromptIDs != nil && b.PromptIDs != nil {
		s.PromptIDs = append(append(append([]int{}, a.PromptIDs...), p.Separator...), b.PromptIDs...)
	}
	if p.Separator == nil {
		s.PromptLen = a.PromptLen + 1 + b.PromptLen
	}
	return s
}

// toolLatency converts a drawn latency in seconds, as inference-perf
// draws it (a whole number of seconds).
func toolLatency(seconds int) time.Duration {
	return time.Duration(math.Max(0, float64(seconds))) * time.Second
}

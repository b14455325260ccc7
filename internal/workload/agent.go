package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Agent sessions are the load agents put on a server. A session is a
// conversation of turns: its first prompt is its system prompt (a prefix
// every session shares, then a part of its own) and the first input; each
// later prompt is the conversation so far — every prompt and every answer —
// and the next input (a tool's result), sent when the previous answer has
// come back and the tool has run (its latency). Prompts grow turn by turn
// on a shared prefix, and each session's requests come with idle gaps
// between them: what prefix caching, KV headroom and routing by prefix are
// for. The Schedule runs them (schedule_sessions.go), for bench and
// simulate alike.

// AgentPlan makes a plan's requests the turns of agent sessions.
//
// With OwnClocks (glassbox's agent sessions) each session runs on its own
// clock: its stage offset is when it starts (open loop, at the sessions'
// rate), and each of its turns is due when the previous answer has come
// back and the tool has run (closed loop), whatever the other sessions do.
// The plan's MaxConcurrency then caps the sessions running at once, and its
// Until stops starting sessions (Cut also stops the running ones' turns).
//
// Without it (inference-perf's conversation_replay) request k of a stage is
// turn k/len(Sessions) of session k%len(Sessions) (modulo its turns when
// Recycle), due at the stage's offset k and sent no earlier than its
// session's previous answer and tool allow, as inference-perf's load
// generator hands its requests to the conversations' session locks.
type AgentPlan struct {
	Sessions []AgentSession
	// Recycle starts a session that ran its turns over, from its system
	// prompt (inference-perf's conversation_replay closed loop).
	Recycle   bool
	OwnClocks bool
	// Cut, with OwnClocks and the plan's Until, ends the running sessions
	// there too: a turn due at or after Until is not sent, and its session
	// ends cut. Without it they run every turn (Until only stops starts).
	Cut bool
}

// AgentSession is one conversation's blueprint.
type AgentSession struct {
	System Sample // the context the conversation starts from
	Turns  []AgentTurn
}

// AgentTurn is one turn's new input (its prompt and max_tokens) and the
// tool latency after its answer, before the next turn is sent.
type AgentTurn struct {
	Input       Sample
	ToolLatency time.Duration
}

// AgentConfig is agent sessions described by flags (bench's and
// simulate's --dataset-name agent).
type AgentConfig struct {
	Sessions    int         // conversations
	Turns       int         // turns each
	SystemLen   int         // tokens of the system prompt every session shares
	InputLen    int         // tokens of each turn's new input (the user's message, then a tool's result)
	OutputLen   int         // max_tokens of each turn
	ToolLatency ToolLatency // between an answer and the next turn, drawn per turn
	Rate        float64     // sessions started per second (+Inf: all at once)
	Burstiness  float64     // gamma shape of the sessions' arrival gaps (1: Poisson)
	// MaxConcurrency caps the sessions running at once (0: none): a
	// session due while all places are taken starts when one frees, its
	// first turn held on the client meanwhile. Until, when positive,
	// stops starting sessions then (--duration); Cut also stops the
	// running sessions' turns then, where by default they finish.
	MaxConcurrency int
	Until          time.Duration
	Cut            bool
}

// Check refuses what cannot run, by flag.
func (c *AgentConfig) Check() error {
	switch {
	case c.Sessions < 1 || c.Turns < 1:
		return fmt.Errorf("agent sessions: want at least one session (--num-prompts) of at least one turn (--agent-turns), got %d of %d", c.Sessions, c.Turns)
	case c.Sessions*c.Turns > MaxRequests:
		return fmt.Errorf("agent sessions: %d sessions of %d turns is too many requests", c.Sessions, c.Turns)
	case c.SystemLen < 0 || c.InputLen < 1 || c.OutputLen < 1:
		return fmt.Errorf("agent sessions: want --agent-system-prompt-len >= 0, --agent-input-len and --agent-output-len >= 1, got %d, %d, %d", c.SystemLen, c.InputLen, c.OutputLen)
	case !(c.Rate > 0) || !(c.Burstiness > 0):
		return errors.New("agent sessions: the session rate and burstiness must be positive")
	case c.Cut && c.Until <= 0:
		return errors.New("agent sessions: --agent-at-duration cut needs a --duration")
	}
	return c.ToolLatency.Check()
}

// NewAgentPlan builds the plan of agent sessions c describes: the sessions
// arrive at c.Rate and each runs c.Turns turns on its own clock. The
// sessions' starts and tool latencies are drawn from rng first, so that
// two runs of one seed (bench against a server, simulate) put the same
// agent load on their servers whatever their tokenizers draw after.
func NewAgentPlan(ctx context.Context, c AgentConfig, tk Tokenizer, rng *rand.Rand) (*Plan, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	n := c.Sessions
	starts := scheduleOffsets(n, c.Rate, c.Burstiness, nil, rng)
	latencies := make([]time.Duration, n*c.Turns)
	for i := range latencies {
		latencies[i] = c.ToolLatency.Draw(rng)
	}
	p := &Plan{Sessions: true, MaxConcurrency: c.MaxConcurrency, Until: c.Until,
		Agent: &AgentPlan{OwnClocks: true, Cut: c.Cut, Sessions: make([]AgentSession, n)}}
	var system Sample
	if c.SystemLen > 0 {
		s, err := LoadSamples(ctx, DatasetConfig{Name: "random", RandomInputLen: c.SystemLen, RandomOutputLen: 1}, 1, tk, rng)
		if err != nil {
			return nil, fmt.Errorf("agent sessions: %w", err)
		}
		system = s[0]
	}
	inputs, err := LoadSamples(ctx, DatasetConfig{Name: "random", RandomInputLen: c.InputLen, RandomOutputLen: c.OutputLen}, n*c.Turns, tk, rng)
	if err != nil {
		return nil, fmt.Errorf("agent sessions: %w", err)
	}
	if err := p.SetSeparator(ctx, tk); err != nil {
		return nil, err
	}
	for i := range n {
		s := &p.Agent.Sessions[i]
		s.System = system
		for t := range c.Turns {
			s.Turns = append(s.Turns, AgentTurn{Input: inputs[i*c.Turns+t], ToolLatency: latencies[i*c.Turns+t]})
		}
	}
	p.Prompts = make([]Sample, n)
	for i := range p.Prompts {
		p.Prompts[i] = system
	}
	var span time.Duration
	if len(starts) > 0 {
		span = starts[len(starts)-1]
	}
	p.Stages = []Stage{{Rate: c.Rate, Duration: span, Offsets: starts}}
	return p, nil
}

// SetSeparator sets the plan's Separator, the tokens of " ", which joins a
// conversation's parts when the prompts are token ids (a tokenizer that
// converts no ids leaves it nil).
func (p *Plan) SetSeparator(ctx context.Context, tk Tokenizer) error {
	it, ok := tk.(IDTokenizer)
	if !ok {
		return nil
	}
	var err error
	if p.Separator, err = it.Encode(ctx, " "); err != nil {
		return fmt.Errorf("agent sessions: %w", err)
	}
	return nil
}

// turn is request k's session and turn.
func (a *AgentPlan) turn(k int) (user, turn int, ok bool) {
	n := len(a.Sessions)
	user, round := k%n, k/n
	turns := len(a.Sessions[user].Turns)
	if round >= turns && !a.Recycle {
		return 0, 0, false
	}
	return user, round % turns, true
}

// latency is the tool's time after turn's answer before the session's
// next turn; none before a recycled session's first.
func (a *AgentPlan) latency(user, turn int) time.Duration {
	s := &a.Sessions[user]
	if turn+1 >= len(s.Turns) {
		return 0
	}
	return s.Turns[turn].ToolLatency
}

// AgentTurns is the most turns a session of the plan has (0 without
// agent sessions; a graph session's calls are at the turn of their depth).
func (p *Plan) AgentTurns() int {
	most := 0
	if p.Graph != nil {
		for _, s := range p.Graph.Sessions {
			for _, c := range s.Calls {
				most = max(most, c.Depth+1)
			}
		}
		return most
	}
	if p.Agent == nil {
		return 0
	}
	for _, s := range p.Agent.Sessions {
		most = max(most, len(s.Turns))
	}
	return most
}

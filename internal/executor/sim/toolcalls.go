package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// The fake language model writes words, not tool calls: a request's
// constraint says where calls go, and the model decides, as models do,
// whether to call and how many calls to make. Under tool_choice auto the
// server's lazy constraint (free prose until <tool_call>) tells it the
// trigger: it opens its answer with a call ToolCallRate of the time, and
// after each call makes another ParallelCallShare of the time, else ends.
// Under a required choice (a JSON list of calls) it ends the list after a
// call unless, ParallelCallShare of the time, it makes another. Inside a
// call the constraint's grammar writes the arguments as for any
// structured output.

// ToolCalls is how the fake model calls tools.
type ToolCalls struct {
	// Rate is the share of answers under tool_choice auto that call a
	// tool rather than answer in prose, in [0, 1].
	Rate float64
	// ParallelShare is the share of call lists (auto's and required's)
	// with one call more than they have, in [0, 1]: lists of n calls are
	// geometric, one call most of the time.
	ParallelShare float64
}

// Check refuses shares outside [0, 1].
func (t ToolCalls) Check() error {
	for _, x := range []struct {
		name string
		v    float64
	}{{"tool-call rate", t.Rate}, {"parallel tool-call share", t.ParallelShare}} {
		if math.IsNaN(x.v) || x.v < 0 || x.v > 1 {
			return fmt.Errorf("the simulated model's %s must be in [0, 1], got %v", x.name, x.v)
		}
	}
	return nil
}

// toolState is what a lazy tool-call constraint (grammar.Lazy) tells the
// model: the text that opens a call, whether the output is outside one,
// the calls completed, and the first bytes written since the start or the
// last call.
type toolState interface {
	State() (trigger string, free bool, calls int, after string)
}

// callList marks a required tool choice's constraint: the output is a JSON
// list of calls.
type callList interface{ ToolCallList() bool }

// freeProse reports a lazy constraint outside a call: the model writes its
// prose as without one.
func freeProse(c engine.Constraint) bool {
	ts, ok := c.(toolState)
	if !ok {
		return false
	}
	_, free, _, _ := ts.State()
	return free
}

// toolCall is the token a tool-calling model writes next, when the
// sequence is offered tools under auto and it is its turn to decide: the
// opening of a call, or the end after its calls. ok false leaves the token
// to the language model and the constraint.
func (e *Executor) toolCall(s *engine.SeqBatch, rng *rand.Rand) (tok int, ok bool) {
	ts, isLazy := s.Constraint.(toolState)
	if !isLazy {
		return 0, false
	}
	trigger, free, calls, after := ts.State()
	if !free {
		return 0, false
	}
	next := trigger
	if calls > 0 {
		next = "\n" + trigger
	}
	switch {
	case after == "" && calls == 0:
		if rng.Float64() >= e.tools.Rate {
			return 0, false // prose
		}
	case after == "":
		if rng.Float64() >= e.tools.ParallelShare {
			return tokEOS, true
		}
	case len(after) < len(next) && strings.HasPrefix(next, after):
	default:
		return 0, false
	}
	ids := e.vocab.Encode(next[len(after):])
	if len(ids) == 0 {
		return 0, false
	}
	return ids[0], true
}

// endOfCall decides, in a required choice's list where a call just ended
// (a comma or the closing bracket may follow at the list's own depth),
// whether the list goes on.
func (e *Executor) endOfCall(s *engine.SeqBatch, h []int, rng *rand.Rand, out *sampling.Result) bool {
	cl, ok := s.Constraint.(callList)
	if !ok || !cl.ToolCallList() || !e.allowed(',') || !e.allowed(']') || listDepth(e.vocab, h[min(s.NumPrompt, len(h)):]) != 1 {
		return false
	}
	tok := int(']')
	if rng.Float64() < e.tools.ParallelShare {
		tok = ','
	}
	*out = sampling.Result{Token: tok, Top: out.Top[:0]}
	return true
}

// listDepth is how deep in brackets the output's JSON text is.
func listDepth(v *Vocab, out []int) int {
	depth, inStr, esc := 0, false, false
	for _, id := range out {
		for _, c := range v.TokenBytes(id) {
			switch {
			case esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				depth--
			}
		}
	}
	return depth
}

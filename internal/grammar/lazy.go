package grammar

import "strings"

// Lazy follows one sequence through a lazy constraint: the output is free
// until it generates the trigger, then follows the grammar until the
// grammar is complete, then is free again (llama.cpp's lazy grammars). It
// holds tool_choice auto's calls to the tools' schemas while leaving the
// model's prose alone. A token that completes the trigger and goes on
// where the grammar does not is accepted, and that call left free: the
// mask could not have prevented it. Like a Matcher, it is not safe for
// concurrent use.
type Lazy struct {
	c       *Compiled
	trigger string
	mt      *Matcher // following the grammar, or nil while free
	tail    string   // the end of the free text, where a trigger may have begun
	done    bool     // an end-of-sequence token was accepted
	calls   int      // calls the grammar completed
	after   string   // the free text since the start or the last call, its first bytes
}

// NewLazy starts a lazy matcher, free until trigger.
func (c *Compiled) NewLazy(trigger string) *Lazy { return &Lazy{c: c, trigger: trigger} }

// Trigger is the text that starts the grammar, and whether the output is
// free now.
func (l *Lazy) Trigger() (string, bool) { return l.trigger, l.mt == nil }

// State is what the simulated model reads to call tools as a model does:
// the trigger, whether the output is free, how many calls completed, and
// the first bytes of the free text since the start or the last call.
func (l *Lazy) State() (trigger string, free bool, calls int, after string) {
	return l.trigger, l.mt == nil && !l.done, l.calls, l.after
}

// JSON reports whether what follows the trigger is a JSON text (a tool
// call's body is).
func (l *Lazy) JSON() bool { return l.c.g.json }

// FillMask sets every token while free (the end of the sequence
// included), the grammar's tokens otherwise.
func (l *Lazy) FillMask(mask []uint64) {
	if l.mt != nil {
		l.mt.FillMask(mask)
		return
	}
	clear(mask)
	if l.done {
		return
	}
	n := min(l.c.v.Size(), len(mask)*64)
	for w := range n / 64 {
		mask[w] = ^uint64(0)
	}
	if r := n % 64; r > 0 {
		mask[n/64] = 1<<r - 1
	}
}

// Accept moves past tok.
func (l *Lazy) Accept(tok int) bool {
	if l.done {
		return false
	}
	if l.mt != nil {
		if !l.mt.Accept(tok) {
			return false
		}
		if l.mt.Done() {
			l.mt, l.tail, l.after = nil, "", ""
			l.calls++
		}
		return true
	}
	if l.c.v.IsEOS(tok) {
		l.done = true
		return true
	}
	b := l.c.v.TokenBytes(tok)
	if keep := len(l.trigger) + 2; len(l.after) < keep {
		l.after = (l.after + string(b))[:min(keep, len(l.after)+len(b))]
	}
	text := l.tail + string(b)
	i := strings.Index(text, l.trigger)
	if i < 0 {
		l.tail = text[max(0, len(text)-len(l.trigger)+1):]
		return true
	}
	l.tail = ""
	l.mt = l.c.NewMatcher()
	if rest := text[i+len(l.trigger):]; rest != "" && !l.mt.AcceptBytes([]byte(rest)) {
		l.mt = nil // the call goes on unconstrained; the parser reads it as it is
	}
	return true
}

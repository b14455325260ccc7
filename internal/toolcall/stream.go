package toolcall

import (
	"strings"
)

// Stream splits an output into content and tool calls as it is generated.
// Content is passed on at once, except what may be the start of a call
// (held back until it is known) and whitespace next to calls; a call is
// handed over whole, when its end is read. Formats whose calls are the
// whole output (llama3_json, mistral, pythonic) hold an output that starts
// like calls until Close. Not safe for concurrent use.
type Stream struct {
	parser  string
	pending string // held back
	inCall  bool   // hermes: inside <tool_call>
	whole   int    // start-only formats: 0 undecided, 1 calls, -1 content
	calls   bool   // some call was handed over
	space   string // whitespace held back after a call
}

// NewStream follows one output in parser's format.
func NewStream(parser string) *Stream { return &Stream{parser: parser} }

// Write takes the next text and returns the content that may be shown now
// and the calls it completed.
func (s *Stream) Write(text string) (content string, calls []Call) {
	s.pending += text
	if s.parser != Hermes {
		return s.writeWhole()
	}
	var out strings.Builder
	for {
		if s.inCall {
			j := strings.Index(s.pending, hermesClose)
			if j < 0 {
				return s.content(out.String()), calls
			}
			body := s.pending[:j]
			s.pending = s.pending[j+len(hermesClose):]
			s.inCall = false
			if c, ok := callObject(body, "arguments"); ok {
				calls = append(calls, c)
				s.calls = true
				s.space = ""
			} else {
				out.WriteString(hermesOpen + body + hermesClose)
			}
			continue
		}
		if i := strings.Index(s.pending, hermesOpen); i >= 0 {
			out.WriteString(s.pending[:i])
			s.pending = s.pending[i+len(hermesOpen):]
			s.inCall = true
			continue
		}
		keep := heldPrefix(s.pending, hermesOpen)
		out.WriteString(s.pending[:len(s.pending)-keep])
		s.pending = s.pending[len(s.pending)-keep:]
		return s.content(out.String()), calls
	}
}

// content passes text on, holding back trailing whitespace, which may
// only separate it from a call.
func (s *Stream) content(text string) string {
	text = s.space + text
	trimmed := strings.TrimRight(text, " \t\r\n")
	s.space = text[len(trimmed):]
	if strings.TrimSpace(trimmed) == "" && s.calls {
		s.space = "" // whitespace between calls
		return ""
	}
	return trimmed
}

// writeWhole decides, from the first non-blank text, whether the output
// is calls (held to the end) or content (passed on).
func (s *Stream) writeWhole() (string, []Call) {
	switch s.whole {
	case 1:
		return "", nil
	case -1:
		text := s.pending
		s.pending = ""
		return text, nil
	}
	t := strings.TrimLeft(s.pending, " \t\r\n")
	if t == "" {
		return "", nil
	}
	starts := []string{"["}
	if s.parser == Llama3JSON {
		starts = []string{"{", "<|python_tag|>"}
	}
	for _, p := range starts {
		if strings.HasPrefix(t, p) {
			s.whole = 1
			return "", nil
		}
		if strings.HasPrefix(p, t) {
			return "", nil // too little to tell
		}
	}
	s.whole = -1
	return s.writeWhole()
}

// Close ends the output and returns what was held back: content, and the
// calls of a whole-output format or of an unterminated hermes call. An
// output cut short (by max_tokens) keeps every call that completed and the
// one it cut with the arguments it got, as OpenAI returns them; one that
// ended by itself with malformed calls is content, as vLLM's parsers leave
// it.
func (s *Stream) Close(cut bool) (content string, calls []Call) {
	rest := s.pending
	s.pending = ""
	switch {
	case s.parser != Hermes:
		if s.whole != 1 {
			return rest, nil
		}
		content, calls = Parse(s.parser, rest)
		if calls == nil && cut {
			if salvaged := Salvage(s.parser, rest); len(salvaged) > 0 {
				return "", salvaged
			}
		}
		return content, calls
	case s.inCall:
		s.inCall = false
		if c, ok := callObject(rest, "arguments"); ok {
			return "", []Call{c}
		}
		if cut {
			if salvaged := Salvage(Hermes, hermesOpen+rest); len(salvaged) > 0 {
				s.space = ""
				return "", salvaged[:1]
			}
		}
		return s.content(hermesOpen+rest) + s.space, nil
	}
	text := s.content(rest)
	if !s.calls {
		text += s.space // trailing whitespace of an answer without calls is its own
	}
	s.space = ""
	return text, nil
}

// heldPrefix is the length of the longest suffix of s that starts marker.
func heldPrefix(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}

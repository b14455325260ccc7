package toolcall

import (
	"encoding/json"
	"slices"
	"strings"
)

// Scanner follows JSON text that holds tool calls as it is generated: call
// objects ({"name": …, "<arguments>": …}) as an array's elements (a
// required tool choice, mistral) or one after another (a hermes call's
// body, llama3_json). It hands out a call as soon as its name has been
// read and its arguments as they come, so a call that completed is never
// lost when the output is cut, and one cut short keeps the arguments it
// got, as OpenAI returns a call cut by max_tokens. Text outside the call
// objects is skipped. Not safe for concurrent use.
type Scanner struct {
	argsKeys []string
	elem     int // the depth of a call object: 2 in an array, 1 otherwise

	depth     int
	inStr     bool
	esc       bool
	str       []byte
	open      bool   // inside a call object
	expectKey bool   // the next string at the call's depth is a key
	key       string // the key whose value is being read
	name      string
	named     bool
	args      argValue
	argsState int // 0 none yet, 1 after the key's colon, 2 reading, 3 read
	emitted   bool
	sent      int // bytes of args handed out
	calls     int // calls handed out
}

// argValue is the arguments value's raw text and the scanner state within
// it.
type argValue struct {
	text       []byte
	depth      int
	inStr, esc bool
}

// Piece is what a Scanner hands out: the first piece of a call has its
// Name; Args continue the call's arguments text.
type Piece struct {
	Call int // the call's number, from 0
	Name string
	Args string
}

// NewScanner follows calls whose arguments are under one of argsKeys,
// elements of a JSON array when inArray.
func NewScanner(inArray bool, argsKeys ...string) *Scanner {
	s := &Scanner{argsKeys: argsKeys, elem: 1}
	if inArray {
		s.elem = 2
	}
	return s
}

// Calls is how many calls have been handed out.
func (s *Scanner) Calls() int { return s.calls }

// Write takes the next text and returns the pieces it completed.
func (s *Scanner) Write(text string) []Piece {
	var out []Piece
	for i := 0; i < len(text); i++ {
		c := text[i]
		if s.argsState == 1 && !isSpace(c) {
			s.argsState = 2
		}
		if s.argsState == 2 && s.readArg(c) {
			continue
		}
		out = s.step(c, out)
	}
	return s.flush(out)
}

// step moves past one byte outside the arguments value.
func (s *Scanner) step(c byte, out []Piece) []Piece {
	if s.inStr {
		switch {
		case s.esc:
			s.esc = false
			s.str = append(s.str, c)
		case c == '\\':
			s.esc = true
			s.str = append(s.str, c)
		case c == '"':
			s.inStr = false
			s.endString()
		default:
			s.str = append(s.str, c)
		}
		return out
	}
	atCall := s.open && s.depth == s.elem
	switch c {
	case '"':
		s.inStr, s.str = true, s.str[:0]
	case '{', '[':
		s.depth++
		if c == '{' && s.depth == s.elem {
			out = s.flush(out)
			*s = Scanner{argsKeys: s.argsKeys, elem: s.elem, depth: s.depth, calls: s.calls, str: s.str,
				open: true, expectKey: true}
		}
	case '}', ']':
		if atCall && c == '}' {
			if s.argsState == 0 && s.named {
				s.args.text = []byte("{}") // a call without arguments takes none
			}
			out = s.flush(out)
			s.open = false
		}
		s.depth = max(s.depth-1, 0)
	case ':':
		if atCall {
			s.expectKey = false
			if slices.Contains(s.argsKeys, s.key) && s.argsState == 0 {
				s.argsState = 1
			}
		}
	case ',':
		if atCall {
			s.expectKey, s.key = true, ""
		}
	}
	return out
}

// endString takes a string just read at the call's depth: a key, or the
// name's value.
func (s *Scanner) endString() {
	if !s.open || s.depth != s.elem {
		return
	}
	var v string
	if json.Unmarshal(append(append([]byte{'"'}, s.str...), '"'), &v) != nil {
		return
	}
	switch {
	case s.expectKey:
		s.key = v
	case s.key == "name" && !s.named:
		s.name, s.named = v, v != ""
	}
}

// readArg takes one byte of the arguments value; false when the byte ends
// a scalar value and belongs to the call object (a comma or its brace).
func (s *Scanner) readArg(c byte) bool {
	a := &s.args
	if a.inStr {
		a.text = append(a.text, c)
		switch {
		case a.esc:
			a.esc = false
		case c == '\\':
			a.esc = true
		case c == '"':
			a.inStr = false
			if a.depth == 0 {
				s.argsState = 3
			}
		}
		return true
	}
	switch c {
	case '"':
		a.inStr = true
	case '{', '[':
		a.depth++
	case '}', ']', ',':
		if a.depth == 0 {
			s.argsState = 3
			a.text = []byte(strings.TrimRight(string(a.text), " \t\r\n"))
			return false
		}
		if c != ',' {
			a.depth--
		}
	}
	a.text = append(a.text, c)
	if a.depth == 0 && (c == '}' || c == ']') {
		s.argsState = 3
	}
	return true
}

// flush hands out what the current call has that was not handed out: its
// name once it is known, and the arguments read since.
func (s *Scanner) flush(out []Piece) []Piece {
	if !s.open || !s.named {
		return out
	}
	args := s.args.text[s.sent:]
	if s.emitted && len(args) == 0 {
		return out
	}
	p := Piece{Call: s.calls - 1, Args: string(args)}
	if !s.emitted {
		p.Call, p.Name = s.calls, s.name
		s.calls++
		s.emitted = true
	}
	s.sent = len(s.args.text)
	return append(out, p)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Salvage reads the calls a cut-off output of parser's format holds: every
// complete one, and the one cut short with the arguments it got (a call
// whose name was not read is lost). It is for outputs Parse does not read
// as calls.
func Salvage(parser, text string) []Call {
	var sc *Scanner
	switch parser {
	case Hermes:
		i := strings.Index(text, hermesOpen)
		if i < 0 {
			return nil
		}
		text = strings.ReplaceAll(text[i:], hermesOpen, "")
		sc = NewScanner(false, "arguments")
	case Mistral:
		sc = NewScanner(true, "arguments")
	case Llama3JSON:
		sc = NewScanner(false, "parameters", "arguments")
	default:
		return nil
	}
	return Collect(sc.Write(text))
}

// Collect joins pieces into calls.
func Collect(pieces []Piece) []Call {
	var calls []Call
	for _, p := range pieces {
		if p.Name != "" {
			calls = append(calls, Call{Name: p.Name})
		}
		if n := len(calls); n > 0 {
			calls[n-1].Arguments += p.Args
		}
	}
	return calls
}

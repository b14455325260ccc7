package sim

import (
	"bytes"
	"math"
	"math/rand/v2"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// The fake language model writes JSON as a model does when its constraint
// says the output is JSON (a schema's, json_object's, a tool call's
// arguments): where the grammar leaves it a choice, it fills arrays and
// objects with a few values rather than closing them at once, names free
// keys with a word, opens a string value with a capitalised word and
// ends it after a few, writes numbers of a few digits, and picks among the
// value types the schema allows, scalars more often than containers. The
// grammar's mask still decides what may come: bounds (minItems, maxLength,
// minimum…), enums and required properties hold whatever it picks. Its
// choices come from the sequence's own random source, so seeded outputs
// repeat.

// jsonOutput is a constraint that says its output is JSON (grammar's
// Matcher and Lazy).
type jsonOutput interface{ JSON() bool }

// jsonWhere is where a JSON text stands after its bytes so far.
type jsonWhere uint8

const (
	atValue   jsonWhere = iota // a value may start: the beginning, after ':', in an array after '[' or ','
	atKey                      // in an object after '{' (or its end) or ',': a key
	atColon                    // after a key
	atAfter                    // a value ended inside a container: ',' or its end
	inString                   // inside a string; key says whose
	inNumber                   // inside a number
	inLiteral                  // inside true, false or null
	atEnd                      // the root value is complete
)

// jsonPos is the state of a JSON text: the open containers, what each
// holds so far, and the open string or number.
type jsonPos struct {
	where  jsonWhere
	stack  []byte // '{' or '[' per open container
	count  []int  // values (members) each holds so far
	first  []byte // the first byte of each one's first value
	comma  bool   // the last structural byte was ','
	key    bool   // the open string is a key
	esc    bool   // the open string's last byte was a backslash
	strLen int    // bytes in the open string
	spaces int    // spaces in the open string: its words, less one
	digits int    // digits of the open number's integer part
	frac   int    // digits after its point, or -1 before one
	exp    bool   // it has an exponent
}

// scanJSON reads a JSON text's bytes so far. It does not validate: the
// grammar did.
func scanJSON(b []byte) jsonPos {
	p := jsonPos{where: atValue, frac: -1}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch p.where {
		case inString:
			switch {
			case p.esc:
				p.esc = false
			case c == '\\':
				p.esc = true
			case c == '"':
				if p.key {
					p.where = atColon
				} else {
					p.ended()
				}
				continue
			}
			p.strLen++
			if c == ' ' {
				p.spaces++
			}
			continue
		case inNumber:
			switch {
			case c >= '0' && c <= '9':
				if p.exp {
				} else if p.frac >= 0 {
					p.frac++
				} else {
					p.digits++
				}
				continue
			case c == '.':
				p.frac = 0
				continue
			case c == 'e' || c == 'E' || c == '+' || (c == '-' && p.exp):
				p.exp = true
				continue
			}
			p.ended()
		case inLiteral:
			if c >= 'a' && c <= 'z' {
				continue
			}
			p.ended()
		}
		p.structural(c)
	}
	return p
}

// structural moves past one byte outside strings, numbers and literals;
// after the root value nothing counts.
func (p *jsonPos) structural(c byte) {
	if p.where == atEnd {
		return
	}
	switch c {
	case ' ', '\t', '\n', '\r':
	case '{', '[':
		p.opening(c)
		p.stack, p.count, p.first = append(p.stack, c), append(p.count, 0), append(p.first, 0)
		p.where, p.comma = atValue, false
		if c == '{' {
			p.where = atKey
		}
	case '}', ']':
		if n := len(p.stack); n > 0 {
			p.stack, p.count, p.first = p.stack[:n-1], p.count[:n-1], p.first[:n-1]
		}
		p.ended()
	case '"':
		if p.where != atKey {
			p.opening(c)
		}
		p.key, p.where, p.strLen, p.spaces, p.esc = p.where == atKey, inString, 0, 0, false
	case ':':
		p.where = atValue
	case ',':
		p.where, p.comma = atValue, true
		if n := len(p.stack); n > 0 && p.stack[n-1] == '{' {
			p.where = atKey
		}
	case 't', 'f', 'n':
		p.opening(c)
		p.where = inLiteral
	default: // a digit or '-'
		p.opening('0')
		p.where, p.digits, p.frac, p.exp = inNumber, 0, -1, false
		if c >= '0' && c <= '9' {
			p.digits = 1
		}
	}
}

// opening notes the first byte of a container's first value ('0' for a
// number, 't' for either boolean).
func (p *jsonPos) opening(c byte) {
	if c == 'f' {
		c = 't'
	}
	if n := len(p.first); n > 0 && p.count[n-1] == 0 {
		p.first[n-1] = c
	}
}

// ended closes a value: its container holds one more, or the text is done.
func (p *jsonPos) ended() {
	n := len(p.stack)
	if n == 0 {
		p.where = atEnd
		return
	}
	p.count[n-1]++
	p.where, p.comma = atAfter, false
}

// jsonRegion is the output's JSON text so far: after the trigger of a
// lazy constraint's call, else all of it; false when it cannot tell.
func (e *Executor) jsonRegion(s *engine.SeqBatch, h []int) ([]byte, bool) {
	e.jsonBuf = e.jsonBuf[:0]
	for _, id := range h[min(s.NumPrompt, len(h)):] {
		e.jsonBuf = append(e.jsonBuf, e.vocab.TokenBytes(id)...)
	}
	if ts, ok := s.Constraint.(toolState); ok {
		trigger, _, _, _ := ts.State()
		i := bytes.LastIndex(e.jsonBuf, []byte(trigger))
		if trigger == "" || i < 0 {
			return nil, false
		}
		return e.jsonBuf[i+len(trigger):], true
	}
	return e.jsonBuf, true
}

// jsonChoice is what the model does next in a JSON text: write tok, let
// the language model's (masked) candidates speak, or leave it to the
// constraint's fallback.
type jsonChoice struct {
	tok      int
	prose    bool
	plain    bool // the prose may not end a sentence yet: a short string
	fallback bool
}

func writeTok(tok int) jsonChoice { return jsonChoice{tok: tok} }

var leaveIt = jsonChoice{fallback: true}

// chance reports true p of the time.
func chance(rng *rand.Rand, p float64) bool { return rng.Float64() < p }

// writeJSON decides the next token of a JSON text at p, the mask filled.
// prose says whether some language-model candidate is allowed.
func (e *Executor) writeJSON(p jsonPos, rng *rand.Rand, prose bool) jsonChoice {
	depth := len(p.stack)
	count := 0
	if depth > 0 {
		count = p.count[depth-1]
	}
	switch p.where {
	case inString:
		return e.stringNext(p, rng, prose)
	case atColon:
		return e.either(':')
	case atKey:
		if count == 0 && !p.comma && e.allowed('}') && (!e.allowed('"') || !chance(rng, 0.9*deep(depth))) {
			return writeTok('}')
		}
		return e.either('"')
	case atValue:
		if depth > 0 && p.stack[depth-1] == '[' && count == 0 && !p.comma && e.allowed(']') && !chance(rng, 0.9*deep(depth)) {
			return writeTok(']')
		}
		var same byte // an array's values are of one type, as models write them
		if depth > 0 && p.stack[depth-1] == '[' && count > 0 {
			same = p.first[depth-1]
		}
		return e.valueStart(depth, same, rng)
	case inNumber:
		if tok, ok := e.moreDigits(p, rng); ok {
			return writeTok(tok)
		}
		if depth == 0 {
			return leaveIt // the end, or a call's closing tag
		}
		return e.afterValue(p.stack[depth-1], count, depth, rng)
	case atAfter:
		return e.afterValue(p.stack[depth-1], count, depth, rng)
	}
	return leaveIt
}

// either writes tok when the grammar allows it.
func (e *Executor) either(tok int) jsonChoice {
	if e.allowed(tok) {
		return writeTok(tok)
	}
	return leaveIt
}

// deep is how much less a container at depth is filled: as much as any
// down to depth 2, then less and less, so that a recursive schema (a tree
// whose nodes list nodes) ends after a few levels.
func deep(depth int) float64 {
	return math.Pow(0.4, float64(max(0, depth-2)))
}

// afterValue goes on in a container (open at depth, holding count values)
// or closes it: arrays run to a few values, objects take most optional
// members and a few free ones.
func (e *Executor) afterValue(open byte, count, depth int, rng *rand.Rand) jsonChoice {
	closer := int(']')
	more := []float64{1, 0.65, 0.5, 0.35, 0.2, 0.1}
	if open == '{' {
		closer = '}'
		more = []float64{1, 0.75, 0.7, 0.5, 0.3, 0.15}
	}
	switch {
	case e.allowed(',') && e.allowed(closer):
		if count < len(more) && chance(rng, more[count]*deep(depth)) {
			return writeTok(',')
		}
		return writeTok(closer)
	case e.allowed(','):
		return writeTok(',')
	}
	return e.either(closer)
}

// valueStart opens a value of one of the types the grammar allows,
// scalars more often than containers, which grow rare deeper down, and
// the type of same (an array's first value's first byte) when it is
// allowed.
func (e *Executor) valueStart(depth int, same byte, rng *rand.Rand) jsonChoice {
	nested := 1.0
	if depth >= 2 {
		nested = 0.05
	}
	digit := e.firstDigit(rng)
	options := []struct {
		tok    int
		weight float64
		kind   byte
	}{{'"', 5, '"'}, {digit, 3, '0'}, {'t', 0.6, 't'}, {'f', 0.6, 't'}, {'n', 0.1, 'n'}, {'{', nested, '{'}, {'[', nested, '['}}
	total := 0.0
	for i, o := range options {
		if o.kind == same {
			options[i].weight *= 100
		}
		if o.tok >= 0 && e.allowed(o.tok) {
			total += options[i].weight
		}
	}
	if total == 0 {
		return leaveIt
	}
	x := rng.Float64() * total
	for _, o := range options {
		if o.tok < 0 || !e.allowed(o.tok) {
			continue
		}
		if x -= o.weight; x < 0 {
			if o.tok == digit && e.allowed('-') && chance(rng, 0.1) {
				return writeTok('-')
			}
			return writeTok(o.tok)
		}
	}
	return leaveIt
}

// firstDigit is the allowed digit a number opens with, 1 to 9 rather
// than 0; -1 when none is allowed.
func (e *Executor) firstDigit(rng *rand.Rand) int {
	if tok := e.someDigit('1', rng); tok >= 0 {
		return tok
	}
	return e.someDigit('0', rng)
}

// someDigit is an allowed digit from lo to 9, picked at random; -1 when
// none is allowed.
func (e *Executor) someDigit(lo byte, rng *rand.Rand) int {
	start := rng.IntN(10)
	for i := range 10 {
		d := byte('0' + (start+i)%10)
		if d >= lo && e.allowed(int(d)) {
			return int(d)
		}
	}
	return -1
}

// moreDigits decides whether a number goes on: an integer part of one to
// a few digits, now and then a fraction of one or two; a digit the
// grammar needs (a bound) is always written.
func (e *Executor) moreDigits(p jsonPos, rng *rand.Rand) (int, bool) {
	more := []float64{1, 0.6, 0.5, 0.35, 0.15}
	want := false
	switch {
	case p.exp:
		return 0, false
	case p.frac < 0 && p.digits == 0: // after a minus sign
		tok := e.firstDigit(rng)
		return tok, tok >= 0
	case p.frac < 0:
		want = p.digits < len(more) && chance(rng, more[p.digits])
		if !want && p.digits > 0 && e.allowed('.') && chance(rng, 0.3) {
			return '.', true
		}
	default:
		want = p.frac == 0 || (p.frac == 1 && chance(rng, 0.5))
	}
	if !want && e.canEndNumber() {
		return 0, false
	}
	tok := e.someDigit('0', rng)
	return tok, tok >= 0
}

// canEndNumber reports whether the grammar lets the number end here.
func (e *Executor) canEndNumber() bool {
	for _, tok := range []int{',', '}', ']', ' ', '\n', tokEOS} {
		if e.allowed(tok) {
			return true
		}
	}
	return false
}

// stringNext writes a string's next token: a key is one bare word; a
// value opens with a capitalised word, goes on in the language model's
// words and ends after a few. Where the grammar needs other bytes (an
// enum, a format, a pattern) the fallback picks them.
func (e *Executor) stringNext(p jsonPos, rng *rand.Rand, prose bool) jsonChoice {
	if p.strLen == 0 {
		form := func(w *word) int32 { return w.cap }
		if p.key {
			form = func(w *word) int32 { return w.bare }
		}
		if tok, ok := e.someWord(rng, form); ok {
			return writeTok(tok)
		}
		return leaveIt
	}
	if e.allowed('"') && (p.key || !prose || chance(rng, 0.25+0.1*float64(p.spaces))) {
		return writeTok('"')
	}
	if prose {
		return jsonChoice{prose: true, plain: p.spaces < 3}
	}
	return leaveIt
}

// someWord is an allowed word, a noun or an adjective picked at random,
// in form.
func (e *Executor) someWord(rng *rand.Rand, form func(*word) int32) (int, bool) {
	for _, class := range []wordClass{classNoun, classAdj} {
		list := e.vocab.byClass[class]
		start := rng.IntN(len(list))
		for i := range list {
			// 7919 is a prime larger than any list, hence coprime to its size.
			w := &e.vocab.words[list[(start+i*7919)%len(list)]]
			if tok := int(form(w)); e.allowed(tok) {
				return tok, true
			}
		}
	}
	return 0, false
}

// plainProse keeps a short string's words from ending a sentence or a
// paragraph (when plain): "Garden", not "Garden.". One candidate stays.
func (e *Executor) plainProse(cands []int32, logits []float32, plain bool) {
	if !plain {
		return
	}
	keep := len(cands)
	for i := range cands {
		if math.IsInf(float64(logits[i]), -1) {
			keep--
		}
	}
	for i, id := range cands {
		if keep > 1 && (id == '.' || id == ',' || id == e.gen.tokPara || id == tokEOS) && !math.IsInf(float64(logits[i]), -1) {
			logits[i] = float32(math.Inf(-1))
			keep--
		}
	}
}

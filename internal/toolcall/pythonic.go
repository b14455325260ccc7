package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// The pythonic format is a Python list of calls with keyword arguments
// whose values are literals: [get_weather(city="Paris", days=3), …].

type pyParser struct {
	s   string
	pos int
}

func parsePythonic(s string) ([]Call, bool) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, false
	}
	p := &pyParser{s: s, pos: 1}
	var calls []Call
	for {
		p.space()
		if p.eat(']') {
			break
		}
		if len(calls) > 0 && !p.eat(',') {
			return nil, false
		}
		p.space()
		name := p.ident()
		if name == "" || !p.eat('(') {
			return nil, false
		}
		args := map[string]any{}
		var order []string
		for {
			p.space()
			if p.eat(')') {
				break
			}
			if len(order) > 0 {
				if !p.eat(',') {
					return nil, false
				}
				p.space()
				if p.eat(')') {
					break
				}
			}
			key := p.ident()
			p.space()
			if key == "" || !p.eat('=') {
				return nil, false
			}
			v, ok := p.value(0)
			if !ok {
				return nil, false
			}
			if _, dup := args[key]; !dup {
				order = append(order, key)
			}
			args[key] = v
		}
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range order {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(args[k])
			b.Write(kb)
			b.WriteByte(':')
			b.Write(vb)
		}
		b.WriteByte('}')
		calls = append(calls, Call{Name: name, Arguments: b.String()})
	}
	p.space()
	return calls, p.pos == len(p.s) && len(calls) > 0
}

func (p *pyParser) space() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *pyParser) eat(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *pyParser) ident() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && p.pos > start {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

// value reads a Python literal as a JSON-able value.
func (p *pyParser) value(depth int) (any, bool) {
	if depth > 32 {
		return nil, false
	}
	p.space()
	if p.pos >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.pos]; {
	case c == '"' || c == '\'':
		return p.str(c)
	case c == '[':
		p.pos++
		list := []any{}
		for {
			p.space()
			if p.eat(']') {
				return list, true
			}
			if len(list) > 0 && !p.eat(',') {
				return nil, false
			}
			p.space()
			if p.eat(']') {
				return list, true
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			list = append(list, v)
		}
	case c == '{':
		p.pos++
		m := map[string]any{}
		for n := 0; ; n++ {
			p.space()
			if p.eat('}') {
				return m, true
			}
			if n > 0 && !p.eat(',') {
				return nil, false
			}
			p.space()
			k, ok := p.value(depth + 1)
			key, isStr := k.(string)
			p.space()
			if !ok || !isStr || !p.eat(':') {
				return nil, false
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[key] = v
		}
	}
	start := p.pos
	for p.pos < len(p.s) && !strings.ContainsRune(",)]}: \t\n", rune(p.s[p.pos])) {
		p.pos++
	}
	word := p.s[start:p.pos]
	switch word {
	case "True", "true":
		return true, true
	case "False", "false":
		return false, true
	case "None", "null":
		return nil, true
	}
	if f, err := strconv.ParseFloat(word, 64); err == nil {
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
	}
	return nil, false
}

func (p *pyParser) str(q byte) (any, bool) {
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == q:
			p.pos++
			return b.String(), true
		case c == '\\' && p.pos+1 < len(p.s):
			p.pos++
			switch e := p.s[p.pos]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
		p.pos++
	}
	return nil, false
}

package jinja

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokText
	tokVarBegin   // {{
	tokVarEnd     // }}
	tokBlockBegin // {%
	tokBlockEnd   // %}
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

// token is one lexeme; pos is its byte offset in the normalised source,
// turned into line:column only when an error needs it.
type token struct {
	kind tokKind
	val  string
	pos  int
}

// SyntaxError is a template that does not parse, with where it went wrong.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template syntax error at line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// position turns a byte offset into a 1-based line and a 1-based column
// counted in characters.
func position(src string, off int) (line, col int) {
	off = min(max(off, 0), len(src))
	line = 1 + strings.Count(src[:off], "\n")
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[start:off])
}

func syntaxErr(src string, off int, format string, args ...any) *SyntaxError {
	l, c := position(src, off)
	return &SyntaxError{Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

// normalize does what Jinja's lexer does to a source before anything else:
// every newline becomes "\n" and one trailing newline is dropped
// (keep_trailing_newline=False, as transformers leaves it).
func normalize(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	return strings.TrimSuffix(src, "\n")
}

// lexer splits a template into text and the tokens inside tags, applying
// whitespace control on the way: "-" strips all whitespace next to a tag,
// lstrip_blocks strips the indentation before a block or comment tag that
// starts its line, trim_blocks removes the first newline after one ("+"
// turns either off for one tag). These are the settings transformers'
// apply_chat_template uses.
type lexer struct {
	src  string
	pos  int
	toks []token
}

func lex(src string) ([]token, error) {
	lx := &lexer{src: src}
	for lx.pos < len(src) {
		if err := lx.text(); err != nil {
			return nil, err
		}
	}
	lx.toks = append(lx.toks, token{kind: tokEOF, pos: len(src)})
	return lx.toks, nil
}

// nextTag finds the next "{{", "{%" or "{#" at or after from.
func (lx *lexer) nextTag(from int) int {
	for i := from; ; {
		j := strings.IndexByte(lx.src[i:], '{')
		if j < 0 || i+j+1 >= len(lx.src) {
			return -1
		}
		if c := lx.src[i+j+1]; c == '{' || c == '%' || c == '#' {
			return i + j
		}
		i += j + 1
	}
}

// text consumes the text up to the next tag, then the tag itself.
func (lx *lexer) text() error {
	start := lx.pos
	at := lx.nextTag(start)
	if at < 0 {
		lx.emitText(lx.src[start:], start)
		lx.pos = len(lx.src)
		return nil
	}
	kind := lx.src[at+1]
	sign := byte(0)
	if at+2 < len(lx.src) && (lx.src[at+2] == '-' || lx.src[at+2] == '+') {
		sign = lx.src[at+2]
	}
	body := lx.src[start:at]
	switch {
	case sign == '-':
		body = strings.TrimRightFunc(body, pyIsSpace)
	case sign == 0 && kind != '{':
		body = lstrip(body, start == 0 || lx.src[start-1] == '\n')
	}
	lx.emitText(body, start)
	lx.pos = at + 2
	if sign != 0 {
		lx.pos++
	}
	switch kind {
	case '#':
		return lx.comment(at)
	case '{':
		lx.toks = append(lx.toks, token{kind: tokVarBegin, pos: at})
		return lx.inside(at, "}}", tokVarEnd)
	default:
		lx.toks = append(lx.toks, token{kind: tokBlockBegin, pos: at})
		if err := lx.inside(at, "%}", tokBlockEnd); err != nil {
			return err
		}
		return lx.raw()
	}
}

// lstrip removes the whitespace between the last newline of text and a
// block tag, when nothing else stands there (lstrip_blocks).
func lstrip(text string, lineStart bool) string {
	l := strings.LastIndexByte(text, '\n') + 1
	if l == 0 && !lineStart {
		return text
	}
	if strings.TrimLeftFunc(text[l:], pyIsSpace) == "" {
		return text[:l]
	}
	return text
}

func (lx *lexer) emitText(s string, pos int) {
	if s != "" {
		lx.toks = append(lx.toks, token{kind: tokText, val: s, pos: pos})
	}
}

// afterTag applies the closing tag's whitespace control at lx.pos.
func (lx *lexer) afterTag(sign byte, block bool) {
	switch {
	case sign == '-':
		rest := strings.TrimLeftFunc(lx.src[lx.pos:], pyIsSpace)
		lx.pos = len(lx.src) - len(rest)
	case sign == 0 && block && lx.pos < len(lx.src) && lx.src[lx.pos] == '\n':
		lx.pos++
	}
}

func (lx *lexer) comment(at int) error {
	end := strings.Index(lx.src[lx.pos:], "#}")
	if end < 0 {
		return syntaxErr(lx.src, at, "unclosed comment")
	}
	end += lx.pos
	sign := byte(0)
	if end > lx.pos && (lx.src[end-1] == '-' || lx.src[end-1] == '+') {
		sign = lx.src[end-1]
	}
	lx.pos = end + 2
	lx.afterTag(sign, true)
	return nil
}

// inside tokenises a tag's contents up to its closing delimiter.
func (lx *lexer) inside(at int, closer string, endKind tokKind) error {
	for {
		lx.skipSpace()
		if lx.pos >= len(lx.src) {
			return syntaxErr(lx.src, at, "unclosed tag (expected %q)", closer)
		}
		rest := lx.src[lx.pos:]
		for _, sign := range []byte{'-', '+', 0} {
			delim := closer
			if sign != 0 {
				delim = string(sign) + closer
			}
			if strings.HasPrefix(rest, delim) {
				lx.toks = append(lx.toks, token{kind: endKind, pos: lx.pos})
				lx.pos += len(delim)
				lx.afterTag(sign, endKind == tokBlockEnd)
				return nil
			}
		}
		if err := lx.expressionToken(); err != nil {
			return err
		}
	}
}

func (lx *lexer) skipSpace() {
	for lx.pos < len(lx.src) {
		switch lx.src[lx.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			lx.pos++
		default:
			return
		}
	}
}

// operators longest first, so "//" wins over "/".
var operators = []string{"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "=", "<", ">"}

func (lx *lexer) expressionToken() error {
	c := lx.src[lx.pos]
	switch {
	case c == '"' || c == '\'':
		return lx.stringLit()
	case c >= '0' && c <= '9':
		lx.number()
		return nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := lx.pos
		for lx.pos < len(lx.src) && isNameByte(lx.src[lx.pos]) {
			lx.pos++
		}
		lx.toks = append(lx.toks, token{kind: tokName, val: lx.src[start:lx.pos], pos: start})
		return nil
	}
	for _, op := range operators {
		if strings.HasPrefix(lx.src[lx.pos:], op) {
			lx.toks = append(lx.toks, token{kind: tokOp, val: op, pos: lx.pos})
			lx.pos += len(op)
			return nil
		}
	}
	r, _ := utf8.DecodeRuneInString(lx.src[lx.pos:])
	return syntaxErr(lx.src, lx.pos, "unexpected character %q", r)
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads an integer or float literal; "_" separates digits as in
// Python. A "." starts a fraction only when a digit follows, so "x.0.1"
// and "1.real" keep working as attribute access.
func (lx *lexer) number() {
	start := lx.pos
	digits := func() {
		for lx.pos < len(lx.src) && (isDigit(lx.src[lx.pos]) || lx.src[lx.pos] == '_' && lx.pos+1 < len(lx.src) && isDigit(lx.src[lx.pos+1])) {
			lx.pos++
		}
	}
	digits()
	kind := tokInt
	if lx.pos+1 < len(lx.src) && lx.src[lx.pos] == '.' && isDigit(lx.src[lx.pos+1]) {
		lx.pos++
		digits()
		kind = tokFloat
	}
	if lx.pos < len(lx.src) && (lx.src[lx.pos] == 'e' || lx.src[lx.pos] == 'E') {
		p := lx.pos + 1
		if p < len(lx.src) && (lx.src[p] == '+' || lx.src[p] == '-') {
			p++
		}
		if p < len(lx.src) && isDigit(lx.src[p]) {
			lx.pos = p
			digits()
			kind = tokFloat
		}
	}
	lx.toks = append(lx.toks, token{kind: kind, val: strings.ReplaceAll(lx.src[start:lx.pos], "_", ""), pos: start})
}

// raw handles {% raw %}…{% endraw %}: the body is text, not template.
func (lx *lexer) raw() error {
	n := len(lx.toks)
	if n < 3 || lx.toks[n-3].kind != tokBlockBegin || lx.toks[n-2].kind != tokName || lx.toks[n-2].val != "raw" {
		return nil
	}
	begin := lx.toks[n-3].pos
	lx.toks = lx.toks[:n-3]
	for from := lx.pos; ; {
		at := strings.Index(lx.src[from:], "{%")
		if at < 0 {
			return syntaxErr(lx.src, begin, "missing endraw")
		}
		at += from
		p := at + 2
		sign := byte(0)
		if p < len(lx.src) && (lx.src[p] == '-' || lx.src[p] == '+') {
			sign = lx.src[p]
			p++
		}
		rest := strings.TrimLeft(lx.src[p:], " \t\n")
		if !strings.HasPrefix(rest, "endraw") {
			from = at + 2
			continue
		}
		body := lx.src[lx.pos:at]
		if sign == '-' {
			body = strings.TrimRightFunc(body, pyIsSpace)
		} else if sign == 0 {
			body = lstrip(body, lx.pos == 0 || lx.src[lx.pos-1] == '\n')
		}
		lx.emitText(body, lx.pos)
		lx.pos = len(lx.src) - len(rest) + len("endraw")
		// The endraw tag is checked like any tag, then dropped.
		keep := len(lx.toks)
		if err := lx.inside(at, "%}", tokBlockEnd); err != nil {
			return err
		}
		if len(lx.toks) != keep+1 {
			return syntaxErr(lx.src, at, "unexpected tokens in endraw")
		}
		lx.toks = lx.toks[:keep]
		return nil
	}
}

// stringLit reads a quoted literal and decodes its escapes the way Jinja
// does (Python's unicode-escape): unknown escapes keep their backslash.
func (lx *lexer) stringLit() error {
	start := lx.pos
	q := lx.src[lx.pos]
	var b strings.Builder
	i := lx.pos + 1
	for {
		if i >= len(lx.src) {
			return syntaxErr(lx.src, start, "unterminated string")
		}
		c := lx.src[i]
		if c == q {
			break
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		n, err := unescape(&b, lx.src[i:])
		if err != nil {
			return syntaxErr(lx.src, i, "%v", err)
		}
		i += n
	}
	lx.toks = append(lx.toks, token{kind: tokString, val: b.String(), pos: start})
	lx.pos = i + 1
	return nil
}

// unescape decodes the escape sequence at the start of s (s[0] == '\\'),
// writes its value and returns how many bytes it used.
func unescape(b *strings.Builder, s string) (int, error) {
	if len(s) < 2 {
		b.WriteByte('\\')
		return 1, nil
	}
	simple := map[byte]string{'\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\n': ""}
	if v, ok := simple[s[1]]; ok {
		b.WriteString(v)
		return 2, nil
	}
	switch s[1] {
	case 'x', 'u', 'U':
		width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[1]]
		if len(s) < 2+width {
			return 0, fmt.Errorf("truncated \\%c escape", s[1])
		}
		var r rune
		for _, h := range []byte(s[2 : 2+width]) {
			d, ok := hexVal(h)
			if !ok {
				return 0, fmt.Errorf("invalid \\%c escape", s[1])
			}
			r = r<<4 | rune(d)
		}
		if r > utf8.MaxRune {
			return 0, fmt.Errorf("escape \\%s out of range", s[1:2+width])
		}
		b.WriteRune(r)
		return 2 + width, nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n, r := 1, rune(0)
		for n < 4 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			r = r*8 + rune(s[n]-'0')
			n++
		}
		b.WriteRune(r)
		return n, nil
	}
	b.WriteByte('\\')
	return 1, nil
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

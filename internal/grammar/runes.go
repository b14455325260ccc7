package grammar

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// runeSet is a set of Unicode scalar values: sorted, disjoint, inclusive
// ranges. Grammars are over bytes, so a set becomes the UTF-8 byte
// sequences of its members (utf8Expr).
type runeSet []runeRange

type runeRange struct{ lo, hi rune }

const (
	surrogateLo = 0xD800
	surrogateHi = 0xDFFF
)

// anyRune is every scalar value.
func anyRune() runeSet { return runeSet{{0, surrogateLo - 1}, {surrogateHi + 1, utf8.MaxRune}} }

func (s runeSet) normalize() runeSet {
	slices.SortFunc(s, func(a, b runeRange) int { return int(a.lo - b.lo) })
	var out runeSet
	for _, r := range s {
		if r.lo > r.hi {
			continue
		}
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out.minus(runeSet{{surrogateLo, surrogateHi}}, true)
}

// union is s ∪ t.
func (s runeSet) union(t runeSet) runeSet {
	return append(slices.Clone(s), t...).normalize()
}

// minus is s − t; both normalized. raw skips normalizing the result.
func (s runeSet) minus(t runeSet, raw bool) runeSet {
	var out runeSet
	for _, r := range s {
		lo := r.lo
		for _, c := range t {
			if c.hi < lo || c.lo > r.hi {
				continue
			}
			if c.lo > lo {
				out = append(out, runeRange{lo, c.lo - 1})
			}
			lo = c.hi + 1
		}
		if lo <= r.hi {
			out = append(out, runeRange{lo, r.hi})
		}
	}
	if raw {
		return out
	}
	return out.normalize()
}

// negate is every scalar value not in s.
func (s runeSet) negate() runeSet { return anyRune().minus(s, false) }

func (s runeSet) contains(r rune) bool {
	for _, x := range s {
		if r >= x.lo && r <= x.hi {
			return true
		}
	}
	return false
}

// utf8Expr matches the UTF-8 encoding of one member of s.
func utf8Expr(s runeSet) Expr {
	var alts []Expr
	var single classExpr // one-byte ranges merge into one class
	for _, r := range s {
		for _, seq := range utf8Sequences(r.lo, r.hi) {
			if len(seq) == 1 {
				single = append(single, seq[0])
				continue
			}
			parts := make(seqExpr, len(seq))
			for i, br := range seq {
				parts[i] = classExpr{br}
			}
			alts = append(alts, parts)
		}
	}
	if len(single) > 0 {
		alts = append([]Expr{single}, alts...)
	}
	if len(alts) == 0 {
		return altExpr(nil)
	}
	return Alt(alts...)
}

// utf8Sequences splits lo..hi into ranges whose encodings are products of
// byte ranges, one per byte position (the classic utf8-ranges split).
func utf8Sequences(lo, hi rune) [][]byteRange {
	var out [][]byteRange
	var split func(lo, hi rune)
	split = func(lo, hi rune) {
		// Cut at the encoding-length boundaries first.
		for _, limit := range []rune{0x7F, 0x7FF, 0xFFFF} {
			if lo <= limit && hi > limit {
				split(lo, limit)
				split(limit+1, hi)
				return
			}
		}
		n := utf8.RuneLen(lo)
		if n < 0 {
			panic(fmt.Sprintf("BUG: grammar: rune %U has no UTF-8 encoding", lo))
		}
		for i := 1; i < n; i++ {
			m := rune(1)<<(6*i) - 1
			if lo&^m != hi&^m {
				if lo&m != 0 {
					split(lo, lo|m)
					split((lo|m)+1, hi)
					return
				}
				if hi&m != m {
					split(lo, (hi&^m)-1)
					split(hi&^m, hi)
					return
				}
			}
		}
		a, b := make([]byte, 4), make([]byte, 4)
		la := utf8.EncodeRune(a, lo)
		utf8.EncodeRune(b, hi)
		seq := make([]byteRange, la)
		for i := range la {
			seq[i] = byteRange{a[i], b[i]}
		}
		out = append(out, seq)
	}
	split(lo, hi)
	return out
}

// jsonChars matches the JSON string encoding of one member of s: the
// character itself where JSON allows it, else its escape.
func jsonChars(s runeSet) Expr {
	plain := s.minus(runeSet{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, false)
	alts := []Expr{}
	if len(plain) > 0 {
		alts = append(alts, utf8Expr(plain))
	}
	short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
	for _, r := range []rune{'"', '\\'} {
		if s.contains(r) {
			alts = append(alts, Lit(short[r]))
		}
	}
	for r := rune(0); r < 0x20; r++ {
		if !s.contains(r) {
			continue
		}
		if e, ok := short[r]; ok {
			alts = append(alts, Lit(e))
		} else {
			alts = append(alts, Lit(fmt.Sprintf(`\u%04x`, r)))
		}
	}
	if len(alts) == 0 {
		return altExpr(nil)
	}
	return Alt(alts...)
}

// jsonStringChar is any one character of a JSON string: every scalar value
// but the quote, the backslash and controls as itself, or an escape (\u
// escapes of surrogates excepted, which decode to no character).
func jsonStringChar() Expr {
	hex := classExpr{{'0', '9'}, {'a', 'f'}, {'A', 'F'}}
	nonSurrogate := Alt(
		Seq(classExpr{{'0', '9'}, {'a', 'c'}, {'A', 'C'}}, hex, hex, hex),
		Seq(classExpr{{'d', 'd'}, {'D', 'D'}}, Bytes('0', '7'), hex, hex),
		Seq(classExpr{{'e', 'f'}, {'E', 'F'}}, hex, hex, hex),
	)
	plain := anyRune().minus(runeSet{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, false)
	return Alt(
		utf8Expr(plain),
		Seq(Lit(`\`), Alt(classExpr{{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}},
			Seq(Lit("u"), nonSurrogate))),
	)
}

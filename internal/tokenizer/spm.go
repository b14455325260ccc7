package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SentencePiece BPE (Llama 1/2, TinyLlama, Mistral v0.1, Phi-3), as
// llama.cpp's llm_tokenizer_spm_session does it: spaces become "▁", the
// text starts as one symbol per UTF-8 character, and the adjacent pair
// whose concatenation is the highest-scoring vocabulary entry is merged
// (leftmost on a tie) until no pair is in the vocabulary. A final symbol
// that is not a token falls back to one <0xNN> token per byte.
//
// One deliberate difference: only normal and user-defined tokens are merge
// targets here, so literal text such as "<s>" or "<0x0A>" in a prompt can
// never turn into a control or byte token (llama.cpp lets it, which makes
// parse_special=false leaky). SentencePiece itself behaves as here.

const spmSpace = "\u2581" // ▁, SentencePiece's escaped space

type spmSymbol struct {
	start, n   int32 // bytes of the escaped text; n = 0 once merged away
	prev, next int32
}

type spmBigram struct {
	score       float32
	left, right int32
	size        int32
}

// before orders the heap: highest score first, leftmost on a tie.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// encodeSPM appends the tokens of a text fragment (no special tokens);
// prefix adds the dummy leading space.
func (t *Tokenizer) encodeSPM(out []int, text string, prefix bool) []int {
	if prefix {
		text = " " + text
	}
	text = strings.ReplaceAll(text, " ", spmSpace)
	if text == "" {
		return out
	}
	syms := make([]spmSymbol, 0, len(text))
	for off := 0; off < len(text); {
		// One symbol per character; an invalid byte is a symbol of its own
		// (llama.cpp takes the length from the lead byte alone, so a stray
		// lead byte there swallows the bytes after it, escaped spaces
		// included, and the text no longer decodes back).
		_, n := utf8.DecodeRuneInString(text[off:])
		syms = append(syms, spmSymbol{start: int32(off), n: int32(n), prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
		off += n
	}
	syms[len(syms)-1].next = -1
	heap := make([]spmBigram, 0, len(syms))
	add := func(left, right int32) {
		if left < 0 || right < 0 {
			return
		}
		l, r := syms[left], syms[right]
		id, ok := t.ids[text[l.start:r.start+r.n]]
		if !ok || !t.attrs[id].has(attrNormal|attrUserDefined) {
			return
		}
		heap = heapPush(heap, spmBigram{score: t.score(int(id)), left: left, right: right, size: l.n + r.n}, spmBigram.before)
	}
	for i := 1; i < len(syms); i++ {
		add(int32(i-1), int32(i))
	}
	for len(heap) > 0 {
		var bg spmBigram
		bg, heap = heapPop(heap, spmBigram.before)
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		add(l.prev, bg.left)
		add(bg.left, l.next)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.ids[s]; ok {
			out = append(out, int(id))
			continue
		}
		for j := 0; j < len(s); j++ {
			if id := t.byteTokens[s[j]]; id >= 0 {
				out = append(out, int(id))
			}
		}
	}
	return out
}

// spmByteTokens finds the token of each byte for the fallback: <0xNN>, or
// else the byte itself as a one-byte token (llama.cpp's byte_to_token), or
// else the unknown token; -1 when there is none of these.
func spmByteTokens(ids map[string]int32, unk int) [256]int32 {
	var bt [256]int32
	for b := range 256 {
		bt[b] = int32(unk)
		if id, ok := ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			bt[b] = id
		} else if id, ok := ids[string([]byte{byte(b)})]; ok {
			bt[b] = id
		}
	}
	return bt
}

// spmPiece is what a normal SPM token stands for: "▁" is a space.
func spmPiece(tok string) []byte {
	return []byte(strings.ReplaceAll(tok, spmSpace, " "))
}

// spmBytePiece parses a byte token's text, <0xNN>.
func spmBytePiece(tok string) ([]byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return nil, false
	}
	var b byte
	for _, c := range tok[3:5] {
		b <<= 4
		switch {
		case '0' <= c && c <= '9':
			b |= byte(c - '0')
		case 'A' <= c && c <= 'F':
			b |= byte(c - 'A' + 10)
		case 'a' <= c && c <= 'f':
			b |= byte(c - 'a' + 10)
		default:
			return nil, false
		}
	}
	return []byte{b}, true
}

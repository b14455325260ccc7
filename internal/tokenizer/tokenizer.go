package tokenizer

import (
	"cmp"
	"slices"
	"strings"
)

// attr is what a vocabulary entry is (GGUF token_type, as llama.cpp reads
// it) plus the strip flags of special tokens.
type attr uint16

const (
	attrNormal      attr = 1 << iota
	attrUnknown          // <unk>: hidden in output like control tokens
	attrControl          // <s>, <|im_end|>: matched in input only with parseSpecial
	attrUserDefined      // added tokens always matched in input, shown in output
	attrUnused
	attrByte   // SentencePiece <0xNN> fallback
	attrLStrip // matching eats the whitespace before the token
	attrRStrip // and after it
)

func (a attr) has(mask attr) bool { return a&mask != 0 }

// GGUF token_type values.
const (
	typeUndefined   = 0
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
	typeByte        = 6
)

func attrOfType(t int32) attr {
	switch t {
	case typeNormal:
		return attrNormal
	case typeUnknown:
		return attrUnknown
	case typeControl:
		return attrControl
	case typeUserDefined:
		return attrUserDefined
	case typeUnused:
		return attrUnused
	case typeByte:
		return attrByte
	}
	return 0
}

type kind uint8

const (
	kindSPM kind = iota + 1
	kindBPE
)

// Tokenizer turns text into token ids and back for one model. It is
// immutable after loading except for an internal word cache, and safe for
// concurrent use.
type Tokenizer struct {
	kind   kind
	tokens []string
	attrs  []attr
	scores []float32
	ids    map[string]int32 // text → id; on duplicates the last id wins, as in llama.cpp

	// pieces holds the output bytes of every token back to back: the
	// decoded text of normal and byte tokens, the raw text of the others.
	pieces   []byte
	pieceEnd []uint32

	bos, eos, eot, eom, unk int // -1 when absent
	eog                     []int
	addBOS, addEOS          bool
	addSpacePrefix          bool // SPM's dummy prefix

	specials   []int32 // matched in input, longest text first
	byteTokens [256]int32
	bpe        *bpeModel
	normalize  func(string) string // NFC for some tokenizer.json files

	chatTemplate string
}

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS, EOS and EOT return those token ids, or -1 when the model has none.
func (t *Tokenizer) BOS() int { return t.bos }
func (t *Tokenizer) EOS() int { return t.eos }
func (t *Tokenizer) EOT() int { return t.eot }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// EOG returns every id that ends generation (EOS, EOT, EOM, and tokens such
// as <|im_end|> and <|endoftext|> found by their text, as llama.cpp does),
// ascending. The slice must not be modified.
func (t *Tokenizer) EOG() []int { return t.eog }

// IsEOG reports whether id ends generation.
func (t *Tokenizer) IsEOG(id int) bool {
	_, ok := slices.BinarySearch(t.eog, id)
	return ok
}

// IsSpecial reports whether id is a control or unknown token: one that
// Decode drops with skipSpecial and TokenBytes never shows. User-defined
// added tokens (Qwen's <think>) are shown like text and are not special.
func (t *Tokenizer) IsSpecial(id int) bool {
	return t.valid(id) && t.attrs[id].has(attrControl|attrUnknown)
}

// ChatTemplate is the model's Jinja chat template, or "" when it has none.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// Kind names the algorithm: "spm" or "bpe", with the pre-tokenizer for BPE
// ("bpe/llama3").
func (t *Tokenizer) Kind() string {
	if t.kind == kindSPM {
		return "spm"
	}
	return "bpe/" + t.bpe.pre.name
}

// TokenString is the vocabulary entry of id as stored ("▁Hello",
// "ĠHello", "<|im_end|>"), or "" for an id out of range.
func (t *Tokenizer) TokenString(id int) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// TokenID looks up a vocabulary entry by its stored text.
func (t *Tokenizer) TokenID(text string) (int, bool) {
	id, ok := t.ids[text]
	return int(id), ok
}

// TokenBytes returns the bytes id stands for in generated text: a byte
// token's byte, a byte-level token's bytes (maybe part of a UTF-8
// character), nothing for control and unknown tokens. The slice aliases the
// tokenizer's storage and must not be modified. It implements Pieces.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if !t.valid(id) || t.attrs[id].has(attrControl|attrUnknown) {
		return nil
	}
	return t.piece(id)
}

func (t *Tokenizer) piece(id int) []byte {
	start := uint32(0)
	if id > 0 {
		start = t.pieceEnd[id-1]
	}
	end := t.pieceEnd[id]
	return t.pieces[start:end:end]
}

func (t *Tokenizer) valid(id int) bool { return id >= 0 && id < len(t.tokens) }

func (t *Tokenizer) score(id int) float32 {
	if t.scores == nil {
		return 0
	}
	return t.scores[id]
}

// Decode turns ids back into text. With skipSpecial, control and unknown
// tokens are left out; otherwise their text is shown. Ids out of range are
// skipped. For SentencePiece it undoes Encode's dummy prefix: the space
// that starts the text, or that follows a special token, is removed, so
// Decode(Encode(s)) == s. (Generated continuations keep their leading space
// when streamed through TokenBytes, as they should.) Bytes that are not
// valid UTF-8 are kept as they are.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	var b strings.Builder
	stripSpace := t.addSpacePrefix
	for _, id := range ids {
		if !t.valid(id) {
			continue
		}
		a := t.attrs[id]
		special := a.has(attrControl | attrUnknown | attrUserDefined)
		p := t.piece(id)
		if skipSpecial && a.has(attrControl|attrUnknown) {
			p = nil
		}
		if stripSpace && !special && len(p) > 0 {
			if p[0] == ' ' {
				p = p[1:]
			}
			stripSpace = false
		}
		b.Write(p)
		if special && t.addSpacePrefix {
			stripSpace = true
		}
	}
	return b.String()
}

// Encode turns text into token ids. With addSpecial, BOS and EOS are added
// as the model asks (tokenizer.ggml.add_bos_token/add_eos_token). With
// parseSpecial, the text of control tokens (<|im_start|>, <s>) becomes those
// tokens, as chat prompts need; without it such text is tokenized as plain
// text, so user input cannot inject them. User-defined tokens are matched
// either way, as llama.cpp and Hugging Face do.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int {
	out := make([]int, 0, len(text)/3+2)
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	prevSpecial := true // SPM adds the dummy prefix at the start and after each special token
	for _, f := range t.partition(text, parseSpecial) {
		if f.token >= 0 {
			out = append(out, f.token)
			prevSpecial = true
			continue
		}
		if t.kind == kindSPM {
			out = t.encodeSPM(out, f.text, t.addSpacePrefix && prevSpecial)
		} else {
			out = t.encodeBPE(out, f.text)
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		out = append(out, t.eos)
	}
	return out
}

// fragment is a run of plain text, or one special token (token >= 0).
type fragment struct {
	text  string
	token int
}

// partition cuts the special tokens out of text, as llama.cpp's
// tokenizer_st_partition: the longest special tokens are found first,
// each at every occurrence in what is still plain text. Empty plain text
// between them is dropped.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, token: -1}}
	// Most text holds none of the bytes special tokens start with ('<'),
	// so one pass over it spares a search per special token.
	var present [256]bool
	for i := 0; i < len(text); i++ {
		present[text[i]] = true
	}
	for _, sid := range t.specials {
		a := t.attrs[sid]
		if !parseSpecial && a.has(attrControl|attrUnknown) {
			continue
		}
		tok := t.tokens[sid]
		if !present[tok[0]] || !strings.Contains(text, tok) {
			continue
		}
		var next []fragment
		for _, f := range frags {
			if f.token >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			next = splitFragment(next, f.text, tok, int(sid), a)
		}
		frags = next
	}
	return frags
}

// splitFragment appends the pieces of s around every occurrence of tok.
func splitFragment(dst []fragment, s, tok string, id int, a attr) []fragment {
	for {
		i := strings.Index(s, tok)
		if i < 0 {
			break
		}
		left := s[:i]
		if a.has(attrLStrip) {
			left = strings.TrimRight(left, asciiSpace)
		}
		if left != "" {
			dst = append(dst, fragment{text: left, token: -1})
		}
		dst = append(dst, fragment{token: id})
		s = s[i+len(tok):]
		if a.has(attrRStrip) {
			s = strings.TrimLeft(s, asciiSpace)
		}
	}
	if s != "" {
		dst = append(dst, fragment{text: s, token: -1})
	}
	return dst
}

// asciiSpace is C's isspace, which llama.cpp's strip flags use.
const asciiSpace = " \t\n\v\f\r"

// finish builds what loading leaves for last: the output pieces, the list
// of special tokens to match, and the end-of-generation set.
func (t *Tokenizer) finish() {
	t.pieceEnd = make([]uint32, len(t.tokens))
	for id, tok := range t.tokens {
		t.pieces = append(t.pieces, t.outputOf(id, tok)...)
		t.pieceEnd[id] = uint32(len(t.pieces))
	}
	t.specials = t.specials[:0]
	for id, a := range t.attrs {
		if a.has(attrControl|attrUserDefined|attrUnknown) && t.tokens[id] != "" {
			t.specials = append(t.specials, int32(id))
		}
	}
	slices.SortStableFunc(t.specials, func(a, b int32) int {
		return cmp.Compare(len(t.tokens[b]), len(t.tokens[a]))
	})
	slices.Sort(t.eog)
	t.eog = slices.Compact(t.eog)
}

// outputOf is the bytes token id stands for.
func (t *Tokenizer) outputOf(id int, tok string) []byte {
	a := t.attrs[id]
	switch {
	case a.has(attrControl | attrUnknown | attrUserDefined):
		return []byte(tok)
	case a.has(attrByte) && t.kind == kindSPM:
		if b, ok := spmBytePiece(tok); ok {
			return b
		}
		return nil
	case a.has(attrNormal) && t.kind == kindSPM:
		return spmPiece(tok)
	case a.has(attrNormal):
		return t.bpe.bl.decode(tok)
	}
	return nil
}

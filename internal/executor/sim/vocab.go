package sim

import (
	"fmt"
	"strings"
)

// Special tokens, named as Llama 3's so that logs and /tokenize output look
// familiar. They follow the 256 byte tokens.
const (
	numByteTokens = 256
	tokBOS        = numByteTokens     // <|begin_of_text|>
	tokEOS        = numByteTokens + 1 // <|end_of_text|>
	tokEOT        = numByteTokens + 2 // <|eot_id|>
	numSpecial    = 3
)

// word is one vocabulary word's four token forms: mid-sentence (" the"),
// line start ("the"), sentence start after a space (" The") and at the start
// of a line ("The").
type word struct {
	class                      wordClass
	vowel                      bool // starts with a vowel letter, for "a"/"an"
	space, bare, capSpace, cap int32
}

// Vocab is the simulator's tokenizer: about 4,500 tokens made of common
// English words (each with and without a leading space, lower and
// capitalised), a few punctuation and whitespace pieces, 256 byte tokens so
// that any byte string can be encoded, and special tokens. Encoding is
// greedy longest match, so Decode(Encode(s)) == s for every string, valid
// UTF-8 or not. A Vocab is immutable after NewVocab and safe to share.
type Vocab struct {
	pieces [][]byte // raw bytes of each token; nil for special tokens
	names  []string // display form of special tokens, indexed from tokBOS
	ids    map[string]int32
	maxLen int

	tokWord []int32 // index into words, or -1
	words   []word
	byClass [numClasses][]int32 // word indices
}

// extraPieces are multi-byte tokens that are not words: whitespace runs,
// punctuation pairs and common suffixes, so that ordinary prompts encode to
// a plausible number of tokens.
func extraPieces() []string {
	return []string{
		"\n\n", "  ", "    ", "\t\t", "...", "--", " -", " (", " \"", "\"", "'s", "n't", "'re", "'ll",
		"s", "es", "ed", "ing", "ly", "er", "est", "tion", "ment", "ness", "able",
		" 0", " 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9", "00", "10", "20", "19",
	}
}

// NewVocab builds the vocabulary. It is deterministic: ids depend only on
// the word lists in this package.
func NewVocab() *Vocab {
	v := &Vocab{
		ids:   make(map[string]int32),
		names: []string{"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"},
	}
	for b := range numByteTokens {
		v.pieces = append(v.pieces, []byte{byte(b)})
	}
	for range numSpecial {
		v.pieces = append(v.pieces, nil)
	}
	for _, p := range extraPieces() {
		v.add(p)
	}
	for class, list := range wordLists() {
		for _, w := range list {
			title := strings.ToUpper(w[:1]) + w[1:]
			v.words = append(v.words, word{
				class:    wordClass(class),
				vowel:    strings.ContainsRune("aeiou", rune(w[0])),
				space:    v.add(" " + w),
				bare:     v.add(w),
				capSpace: v.add(" " + title),
				cap:      v.add(title),
			})
			v.byClass[class] = append(v.byClass[class], int32(len(v.words)-1))
		}
	}
	v.tokWord = make([]int32, len(v.pieces))
	for i := range v.tokWord {
		v.tokWord[i] = -1
	}
	for i := len(v.words) - 1; i >= 0; i-- {
		w := &v.words[i]
		for _, id := range []int32{w.space, w.bare, w.capSpace, w.cap} {
			v.tokWord[id] = int32(i) // single-byte words ("a") claim their byte token
		}
	}
	return v
}

// add returns the id of piece, adding it when new. Single bytes are the
// byte tokens, so the map holds only longer pieces.
func (v *Vocab) add(piece string) int32 {
	if len(piece) == 1 {
		return int32(piece[0])
	}
	if id, ok := v.ids[piece]; ok {
		return id
	}
	id := int32(len(v.pieces))
	v.pieces = append(v.pieces, []byte(piece))
	v.ids[piece] = id
	v.maxLen = max(v.maxLen, len(piece))
	return id
}

// Size is the number of token ids: every id in [0, Size()) is valid.
func (v *Vocab) Size() int { return len(v.pieces) }

// VocabSize is Size, for the server's check of client token ids.
func (v *Vocab) VocabSize() int { return len(v.pieces) }

// EOS is the end-of-text token id.
func (v *Vocab) EOS() int { return tokEOS }

// BOS is the begin-of-text token id. Encode never adds it.
func (v *Vocab) BOS() int { return tokBOS }

// IsSpecial reports whether id is a special (control) token, which decodes
// to no text.
func (v *Vocab) IsSpecial(id int) bool { return id >= tokBOS && id < tokBOS+numSpecial }

// Encode turns text into token ids by greedy longest match over the word
// and piece tokens, falling back to one byte token per byte. It never
// produces special tokens: text that spells one is encoded as ordinary
// pieces, as a server does when special-token parsing is off.
func (v *Vocab) Encode(text string) []int {
	return v.AppendEncode(make([]int, 0, len(text)/4+1), text)
}

// AppendEncode is Encode appending to dst.
func (v *Vocab) AppendEncode(dst []int, text string) []int {
	for i := 0; i < len(text); {
		n, id := 1, int(text[i])
		for l := min(v.maxLen, len(text)-i); l >= 2; l-- {
			if got, ok := v.ids[text[i:i+l]]; ok {
				n, id = l, int(got)
				break
			}
		}
		dst = append(dst, id)
		i += n
	}
	return dst
}

// Decode concatenates the tokens' bytes. Special tokens and ids outside the
// vocabulary contribute nothing, as with skip_special_tokens.
func (v *Vocab) Decode(ids []int) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.Write(v.TokenBytes(id))
	}
	return sb.String()
}

// TokenBytes returns the raw bytes of one token, for incremental
// detokenizers: a byte token yields a single byte that may be part of a
// multi-byte UTF-8 character. Special and unknown ids yield nil. The slice
// is shared: do not modify it.
func (v *Vocab) TokenBytes(id int) []byte {
	if id < 0 || id >= len(v.pieces) {
		return nil
	}
	return v.pieces[id]
}

// TokenString is a token's display form: its text, "<0xNN>" for a byte
// token that is not printable ASCII, the name of a special token, or ""
// for an unknown id.
func (v *Vocab) TokenString(id int) string {
	switch {
	case id < 0 || id >= len(v.pieces):
		return ""
	case v.IsSpecial(id):
		return v.names[id-tokBOS]
	case id < numByteTokens && (id < 0x20 || id > 0x7e) && id != '\n' && id != '\t':
		return fmt.Sprintf("<0x%02X>", id)
	}
	return string(v.pieces[id])
}

// ID returns the token id of an exact piece of text, if there is one.
func (v *Vocab) ID(piece string) (int, bool) {
	if len(piece) == 1 {
		return int(piece[0]), true
	}
	id, ok := v.ids[piece]
	return int(id), ok
}

package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Pre-tokenizers split text into the words that byte-level BPE merges
// inside. Each model family names a regular expression for this
// (tokenizer.ggml.pre in a GGUF, the Split pre-tokenizer in tokenizer.json),
// but those expressions use \p{L}/\p{N} classes and a lookahead (\s+(?!\S))
// that Go's regexp lacks, so each one is a hand-written scanner here that
// gives the same matches as the regex: alternatives tried in order at each
// position, with the backtracking worked out per alternative. The scanners
// follow llama.cpp's unicode.cpp (its custom gpt2 and llama3 splitters).

// cpt is one code point of the text being split, with its byte offset.
type cpt struct {
	off int32
	r   rune
	cls uint8
}

// Character classes of the pre-tokenizer regexes. Every code point is
// exactly one of letter (\p{L}), number (\p{N}), space (\s) or other.
const (
	clsOther uint8 = iota
	clsLetter
	clsNumber
	clsSpace
	clsNone // past the end of the piece
)

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	}
	return clsOther
}

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range t {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			t[r] = clsLetter
		case '0' <= r && r <= '9':
			t[r] = clsNumber
		case r == ' ', '\t' <= r && r <= '\r':
			t[r] = clsSpace
		}
	}
	return t
}()

// splitStep splits one piece (its code points) into words, appending the
// end offsets (exclusive, in code points from the start of cps) to ends.
type splitStep func(cps []cpt, ends []int) []int

// preTokenizer is a sequence of split steps: each splits every piece the
// previous one produced, as llama.cpp applies its list of regexes.
type preTokenizer struct {
	name  string
	steps []splitStep
}

// preTokenizerFor maps tokenizer.ggml.pre to its scanner, with the aliases
// llama.cpp accepts. It also reports whether the family emits a word that
// is a whole vocabulary entry without merging (llama.cpp's ignore_merges).
func preTokenizerFor(pre string) (preTokenizer, bool, error) {
	switch pre {
	case "", "default":
		return preTokenizer{"default", []splitStep{isolate(isDefaultPunct, false), splitGPT2, isolate(isNumber, false), splitDigits3}}, false, nil
	case "llama3", "llama-v3", "llama-bpe", "falcon3":
		return preTokenizer{"llama3", []splitStep{splitLlama3(3)}}, true, nil
	case "dbrx", "smaug-bpe":
		return preTokenizer{"llama3", []splitStep{splitLlama3(3)}}, false, nil
	case "qwen2", "deepseek-r1-qwen", "megrez", "stablelm2":
		return preTokenizer{"qwen2", []splitStep{splitLlama3(1)}}, false, nil
	case "gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "roberta-bpe", "gigachat",
		"jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code":
		return preTokenizer{"gpt2", []splitStep{splitGPT2}}, false, nil
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return preTokenizer{"starcoder", []splitStep{isolate(isNumber, true), splitGPT2}}, false, nil
	}
	return preTokenizer{}, false, fmt.Errorf("unknown pre-tokenizer %q", pre)
}

// split returns the words of text. Invalid UTF-8 bytes become U+FFFD, one
// per byte, as llama.cpp's unicode_cpts_from_utf8 does; the returned words
// are substrings of the (repaired) text.
func (p *preTokenizer) split(text string, words []string) []string {
	text = repairUTF8(text)
	cps := make([]cpt, 0, len(text))
	for i, r := range text {
		cps = append(cps, cpt{off: int32(i), r: r, cls: classOf(r)})
	}
	ends := []int{len(cps)}
	var next []int
	for _, step := range p.steps {
		next = next[:0]
		start := 0
		for _, end := range ends {
			for _, e := range step(cps[start:end], nil) {
				next = append(next, start+e)
			}
			start = end
		}
		ends, next = next, ends
	}
	start := 0
	for _, end := range ends {
		if end > start {
			words = append(words, text[offsetOf(cps, text, start):offsetOf(cps, text, end)])
		}
		start = end
	}
	return words
}

func offsetOf(cps []cpt, text string, i int) int {
	if i == len(cps) {
		return len(text)
	}
	return int(cps[i].off)
}

// repairUTF8 replaces each invalid byte with U+FFFD.
func repairUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for _, r := range s {
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// at returns the class at i, or clsNone past the end.
func at(cps []cpt, i int) uint8 {
	if i < len(cps) {
		return cps[i].cls
	}
	return clsNone
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (ASCII letters, folded
// to lower case when fold is set) and returns its length in code points,
// or 0.
func contraction(cps []cpt, i int, fold bool) int {
	if cps[i].r != '\'' || i+1 >= len(cps) {
		return 0
	}
	c1 := cps[i+1].r
	if fold {
		c1 = lowerASCII(c1)
	}
	switch c1 {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 >= len(cps) {
		return 0
	}
	c2 := cps[i+2].r
	if fold {
		c2 = lowerASCII(c2)
	}
	if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
		return 3
	}
	return 0
}

// spaceRun returns the end of the run of whitespace starting at i.
func spaceRun(cps []cpt, i int) int {
	for i < len(cps) && cps[i].cls == clsSpace {
		i++
	}
	return i
}

// splitGPT2 is GPT-2's
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(cps []cpt, ends []int) []int {
	for i := 0; i < len(cps); {
		if n := contraction(cps, i, false); n > 0 {
			i += n
			ends = append(ends, i)
			continue
		}
		// " ?X+" for each class X: an optional space, then a run of X.
		c := cps[i].cls
		j := i
		if cps[i].r == ' ' {
			c = at(cps, i+1)
			j = i + 1
		}
		if c == clsLetter || c == clsNumber || c == clsOther {
			for at(cps, j) == c {
				j++
			}
			i = j
			ends = append(ends, i)
			continue
		}
		i = endOfSpaces(cps, i)
		ends = append(ends, i)
	}
	return ends
}

// endOfSpaces matches \s+(?!\S)|\s+ at i, which is whitespace: the run
// less its last character when a non-space follows it (that character then
// leads the next word), unless the run is a single character.
func endOfSpaces(cps []cpt, i int) int {
	j := spaceRun(cps, i)
	if j < len(cps) && j-i > 1 {
		return j - 1
	}
	return j
}

// splitLlama3 is Llama 3's pre-tokenizer regex (Qwen 2's with maxDigits 1):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3(maxDigits int) splitStep {
	return func(cps []cpt, ends []int) []int {
		for i := 0; i < len(cps); {
			i = llama3Word(cps, i, maxDigits)
			ends = append(ends, i)
		}
		return ends
	}
}

// llama3Word returns the end of the word that starts at i.
func llama3Word(cps []cpt, i, maxDigits int) int {
	if n := contraction(cps, i, true); n > 0 {
		return i + n
	}
	r, c := cps[i].r, cps[i].cls
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if r != '\r' && r != '\n' && c != clsNumber {
		j := -1
		if c == clsLetter {
			j = i + 1
		} else if at(cps, i+1) == clsLetter {
			j = i + 2
		}
		if j >= 0 {
			for at(cps, j) == clsLetter {
				j++
			}
			return j
		}
	}
	// \p{N}{1,maxDigits}
	if c == clsNumber {
		j := i + 1
		for j-i < maxDigits && at(cps, j) == clsNumber {
			j++
		}
		return j
	}
	// " ?[^\s\p{L}\p{N}]+[\r\n]*"
	j := i
	if r == ' ' {
		j = i + 1
	}
	if at(cps, j) == clsOther {
		for at(cps, j) == clsOther {
			j++
		}
		for j < len(cps) && (cps[j].r == '\r' || cps[j].r == '\n') {
			j++
		}
		return j
	}
	// \s*[\r\n]+ : the whitespace run up to and including its last CR or LF.
	end := spaceRun(cps, i)
	for k := end - 1; k >= i; k-- {
		if cps[k].r == '\r' || cps[k].r == '\n' {
			return k + 1
		}
	}
	return endOfSpaces(cps, i)
}

// isolate splits out every maximal run of code points that match keep (a
// regex "[...]+" applied as llama.cpp applies it: the matches and the text
// between them both become pieces), or with each set every single matching
// code point (a regex "[...]").
func isolate(keep func(rune) bool, each bool) splitStep {
	return func(cps []cpt, ends []int) []int {
		for i := 0; i < len(cps); {
			k := keep(cps[i].r)
			j := i + 1
			if !k || !each {
				for j < len(cps) && keep(cps[j].r) == k {
					j++
				}
			}
			ends = append(ends, j)
			i = j
		}
		return ends
	}
}

func isNumber(r rune) bool { return unicode.IsNumber(r) }

// isDefaultPunct is llama.cpp's default "[\p{P}\$\+<=>\^~\|]".
func isDefaultPunct(r rune) bool {
	switch r {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return unicode.IsPunct(r)
}

// splitDigits3 is "[0-9][0-9][0-9]": every three ASCII digits in a row,
// from the left, become a piece.
func splitDigits3(cps []cpt, ends []int) []int {
	last := 0
	for i := 0; i+3 <= len(cps); {
		if isASCIIDigit(cps[i].r) && isASCIIDigit(cps[i+1].r) && isASCIIDigit(cps[i+2].r) {
			if i > last {
				ends = append(ends, i)
			}
			i += 3
			ends = append(ends, i)
			last = i
			continue
		}
		i++
	}
	if last < len(cps) {
		ends = append(ends, len(cps))
	}
	return ends
}

func isASCIIDigit(r rune) bool { return '0' <= r && r <= '9' }

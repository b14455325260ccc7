// Package tokenizer owns turning text into token ids and back: the
// tokenizers built from a model's metadata and the incremental detokenizer
// with stop-string matching that each generated sequence uses.
//
// It must not import the engine, the server or anything that does I/O
// beyond reading a model's vocabulary.
package tokenizer

import (
	"bytes"
	"unicode/utf8"
)

// Pieces gives the raw bytes a token stands for. A byte-level BPE token may
// hold only part of a UTF-8 character; special tokens that must not appear in
// output text return nil.
type Pieces interface {
	TokenBytes(id int) []byte
}

// TextSink is the incremental detokenizer of one generated sequence, with
// stop-string matching. It implements engine.TextSink (without importing the
// engine: the tokenizer must stay below it).
//
// Two things are held back from the caller. Bytes that end in an incomplete
// UTF-8 sequence wait for the tokens that complete them, so a character is
// never split between two outputs; bytes that can no longer become valid turn
// into U+FFFD, one per byte, as Go's range over a string does. And decoded
// text that ends in a prefix of some stop string waits until it either
// becomes the stop string or stops matching, so no part of a stop string is
// ever shown. The held-back text is at most the longest stop string less one
// byte.
//
// Stop strings are matched against the decoded text, so one that is not
// valid UTF-8 is decoded the same way first (U+FFFD per invalid byte); a
// valid one can then only match whole characters.
//
// A TextSink is used by one goroutine at a time (the engine's).
type TextSink struct {
	pieces      Pieces
	stop        [][]byte
	includeStop bool

	pending []byte // undecoded bytes: an incomplete UTF-8 sequence
	held    []byte // decoded text not yet returned (a possible stop prefix)
	stopped bool
}

// NewTextSink returns a sink that turns tokens into text with p and ends at
// the first occurrence of any of stop. With includeStop the returned text
// ends with the stop string instead of just before it. Empty stop strings are
// ignored: they would match before any output.
func NewTextSink(p Pieces, stop []string, includeStop bool) *TextSink {
	s := &TextSink{pieces: p, includeStop: includeStop}
	for _, str := range stop {
		if str != "" {
			s.stop = append(s.stop, []byte(string([]rune(str))))
		}
	}
	return s
}

// Append adds one generated token. It returns the text that may be shown now
// and, once a stop string has been reached, stop = true with the text ending
// before it. After a stop every call returns ("", true).
func (s *TextSink) Append(token int) (string, bool) {
	if s.stopped {
		return "", true
	}
	s.pending = append(s.pending, s.pieces.TokenBytes(token)...)
	s.decode(false)
	return s.release()
}

// Flush returns everything still held back, for a sequence that ended for
// another reason than a stop string: an incomplete trailing UTF-8 sequence
// becomes U+FFFD, and a held stop-string prefix is shown after all. A stop
// string completed by that last replacement still ends the text.
func (s *TextSink) Flush() string {
	if s.stopped {
		return ""
	}
	s.decode(true)
	if text, stop := s.cut(); stop {
		s.stopped = true
		return text
	}
	text := string(s.held)
	s.held = s.held[:0]
	return text
}

// decode moves every decidable byte of pending into held. A trailing
// sequence that could still become a valid character stays pending unless
// final is set.
func (s *TextSink) decode(final bool) {
	b := s.pending
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			s.held = append(s.held, b[i])
			i++
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			s.held = utf8.AppendRune(s.held, utf8.RuneError)
		} else {
			s.held = append(s.held, b[i:i+size]...)
		}
		i += size
	}
	s.pending = append(s.pending[:0], b[i:]...)
}

// release returns the part of held that can no longer belong to a stop
// string, or the text before a stop string found in it.
func (s *TextSink) release() (string, bool) {
	if text, stop := s.cut(); stop {
		s.stopped = true
		return text, true
	}
	keep := s.stopPrefixLen()
	n := len(s.held) - keep
	// held is valid UTF-8; never cut inside a character, even for a stop
	// string that is not valid UTF-8 itself.
	for n > 0 && n < len(s.held) && !utf8.RuneStart(s.held[n]) {
		n--
	}
	if n <= 0 {
		return "", false
	}
	text := string(s.held[:n])
	s.held = append(s.held[:0], s.held[n:]...)
	return text, false
}

// cut looks for a stop string in held and, when there is one, returns the
// text up to it (or through it, with includeStop). The stop string that
// completes first wins (on a tie, the longer one): generation would have
// ended there, whatever stop strings the same token also completes, so the
// result does not depend on how the text was split into tokens.
func (s *TextSink) cut() (string, bool) {
	if len(s.stop) == 0 {
		return "", false
	}
	at, end := -1, 0
	for _, str := range s.stop {
		i := bytes.Index(s.held, str)
		if i < 0 {
			continue
		}
		if e := i + len(str); at < 0 || e < end || (e == end && i < at) {
			at, end = i, e
		}
	}
	if at < 0 {
		return "", false
	}
	if s.includeStop {
		at = end
	}
	text := string(s.held[:at])
	s.held = s.held[:0]
	s.pending = s.pending[:0]
	return text, true
}

// stopPrefixLen is the length of the longest suffix of held that is a proper
// prefix of some stop string: the text that must wait for the next token.
func (s *TextSink) stopPrefixLen() int {
	best := 0
	for _, str := range s.stop {
		for k := min(len(str)-1, len(s.held)); k > best; k-- {
			if bytes.Equal(s.held[len(s.held)-k:], str[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

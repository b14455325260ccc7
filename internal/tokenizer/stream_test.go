package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// piecesTable is a vocabulary given as the bytes of each token id.
type piecesTable [][]byte

func (p piecesTable) TokenBytes(id int) []byte { return p[id] }

// tokenize splits parts into one token per part.
func tokenize(parts ...string) (piecesTable, []int) {
	var p piecesTable
	var ids []int
	for i, s := range parts {
		p = append(p, []byte(s))
		ids = append(ids, i)
	}
	return p, ids
}

// step is what one Append returned.
type step struct {
	Text string
	Stop bool
}

func TestTextSink(t *testing.T) {
	tests := []struct {
		name    string
		parts   []string
		stop    []string
		include bool
		want    []step
		flush   string
	}{{
		name:  "plain text passes straight through",
		parts: []string{"Hel", "lo", " world"},
		want:  []step{{"Hel", false}, {"lo", false}, {" world", false}},
	}, {
		name:  "a character split over three tokens waits for its last byte",
		parts: []string{"a\xe2", "\x82", "\xacb"},
		want:  []step{{"a", false}, {"", false}, {"€b", false}},
	}, {
		name:  "an invalid byte becomes U+FFFD once it cannot complete",
		parts: []string{"\xe2", "\x82x"},
		want:  []step{{"", false}, {"\ufffd\ufffdx", false}},
	}, {
		name:  "a stray continuation byte is replaced at once",
		parts: []string{"\x82", "y"},
		want:  []step{{"\ufffd", false}, {"y", false}},
	}, {
		name:  "an incomplete tail is replaced at flush",
		parts: []string{"ok\xf0\x9f"},
		want:  []step{{"ok", false}},
		flush: "\ufffd\ufffd",
	}, {
		name:  "stop string inside one token",
		parts: []string{"one ", "two STOP three"},
		stop:  []string{"STOP"},
		want:  []step{{"one ", false}, {"two ", true}},
	}, {
		name:  "stop string spanning tokens is never partly shown",
		parts: []string{"ab", "cS", "T", "OPx"},
		stop:  []string{"STOP"},
		want:  []step{{"ab", false}, {"c", false}, {"", false}, {"", true}},
	}, {
		name:  "a prefix that stops matching is released",
		parts: []string{"xST", "Ay"},
		stop:  []string{"STOP"},
		want:  []step{{"x", false}, {"STAy", false}},
	}, {
		name:  "a held prefix is shown at flush",
		parts: []string{"end ST"},
		stop:  []string{"STOP"},
		want:  []step{{"end ", false}},
		flush: "ST",
	}, {
		name:    "includeStop keeps the stop string",
		parts:   []string{"a", "bc", "d"},
		stop:    []string{"bc"},
		include: true,
		want:    []step{{"a", false}, {"bc", true}, {"", true}},
	}, {
		name:  "the stop string that completes first wins",
		parts: []string{"ab", "c", "d"},
		stop:  []string{"abcd", "c"},
		want:  []step{{"", false}, {"ab", true}, {"", true}},
	}, {
		name:  "of two stops completed together the longer wins",
		parts: []string{"xabcd"},
		stop:  []string{"cd", "abcd"},
		want:  []step{{"x", true}},
	}, {
		name:  "a multi-byte stop string across a split character",
		parts: []string{"I ", "\xc3", "\xa9t\xc3", "\xa9"},
		stop:  []string{"été"},
		want:  []step{{"I ", false}, {"", false}, {"", false}, {"", true}},
	}, {
		name:  "after a stop everything is swallowed",
		parts: []string{"s", "more"},
		stop:  []string{"s"},
		want:  []step{{"", true}, {"", true}},
	}, {
		name:  "empty stop strings are ignored",
		parts: []string{"abc"},
		stop:  []string{""},
		want:  []step{{"abc", false}},
	}, {
		name:  "special tokens with no bytes add nothing",
		parts: []string{"a", "", "b"},
		want:  []step{{"a", false}, {"", false}, {"b", false}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ids := tokenize(tt.parts...)
			s := NewTextSink(p, tt.stop, tt.include)
			var got []step
			for _, id := range ids {
				text, stop := s.Append(id)
				got = append(got, step{text, stop})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Append results (-want +got):\n%s", diff)
			}
			if f := s.Flush(); f != tt.flush {
				t.Errorf("Flush() = %q, want %q", f, tt.flush)
			}
		})
	}
}

// reference is what a sink must produce for the whole byte string: Go's
// per-byte U+FFFD decoding, cut at the stop string that completes first.
func reference(text []byte, stop []string, include bool) string {
	full := string([]rune(string(text)))
	at, end := -1, 0
	for _, s := range stop {
		if s == "" {
			continue
		}
		s = string([]rune(s))
		i := strings.Index(full, s)
		if i < 0 {
			continue
		}
		if e := i + len(s); at < 0 || e < end || (e == end && i < at) {
			at, end = i, e
		}
	}
	switch {
	case at < 0:
		return full
	case include:
		return full[:end]
	}
	return full[:at]
}

func FuzzTextSink(f *testing.F) {
	f.Add([]byte("hello STOP world"), []byte{1, 3, 2}, "STOP", "", false)
	f.Add([]byte("a\xe2\x82\xacb\xf0\x9f\x98"), []byte{2, 1, 0, 4}, "€", "b", true)
	f.Add([]byte("abcd"), []byte{1, 1, 1, 1}, "abcd", "c", false)
	f.Add([]byte("\xed\xa0\x80x\xc3"), []byte{1}, "\ufffd", "x", false)
	f.Fuzz(func(t *testing.T, text, cuts []byte, stop1, stop2 string, include bool) {
		// Split text into tokens of 0 to 4 bytes as cuts says.
		var p piecesTable
		rest := text
		for _, c := range cuts {
			n := min(int(c%5), len(rest))
			p = append(p, rest[:n])
			rest = rest[n:]
		}
		p = append(p, rest)
		stop := []string{stop1, stop2}

		s := NewTextSink(p, stop, include)
		var out strings.Builder
		stopped := false
		for id := range p {
			text, stop := s.Append(id)
			if !utf8.ValidString(text) {
				t.Fatalf("Append(%d) returned invalid UTF-8 %q", id, text)
			}
			out.WriteString(text)
			if stop {
				stopped = true
				break
			}
		}
		if !stopped {
			out.WriteString(s.Flush())
		}
		want := reference(text, stop, include)
		if got := out.String(); got != want {
			t.Fatalf("text = %q, want %q (tokens %q, stop %q, include %v)", got, want, p, stop, include)
		}
		if !include {
			for _, str := range stop {
				if str = string([]rune(str)); str != "" && strings.Contains(out.String(), str) {
					t.Fatalf("output %q contains stop string %q", out.String(), str)
				}
			}
		}
	})
}

package sim

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestVocabRoundTrip(t *testing.T) {
	v := NewVocab()
	for _, s := range []string{
		"",
		"The quick brown fox jumped over the lazy dog.",
		"Hello, world!\n\nA new paragraph   with  spaces\tand tabs.",
		"naïve café — 日本語 🙂",
		"\xff\xfe invalid \xc3 utf-8 \x80",
		"<|end_of_text|> is not parsed as a special token",
		"\x00\x01 control bytes",
	} {
		ids := v.Encode(s)
		if got := v.Decode(ids); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
		for _, id := range ids {
			if id < 0 || id >= v.Size() || v.IsSpecial(id) {
				t.Errorf("Encode(%q) produced id %d", s, id)
			}
		}
	}
}

func TestVocabEncodesWords(t *testing.T) {
	v := NewVocab()
	ids := v.Encode("The system improved the model.")
	var pieces []string
	for _, id := range ids {
		pieces = append(pieces, v.TokenString(id))
	}
	want := []string{"The", " system", " improved", " the", " model", "."}
	if diff := cmp.Diff(want, pieces); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
	// An unknown word falls back to shorter pieces and bytes.
	if ids := v.Encode("zqxj"); len(ids) != 4 {
		t.Errorf("Encode(zqxj) = %v, want 4 byte tokens", ids)
	}
}

func TestVocabSpecialAndBytes(t *testing.T) {
	v := NewVocab()
	if v.TokenString(v.EOS()) != "<|end_of_text|>" || !v.IsSpecial(v.EOS()) || v.TokenBytes(v.EOS()) != nil {
		t.Errorf("EOS %d: string %q, bytes %q", v.EOS(), v.TokenString(v.EOS()), v.TokenBytes(v.EOS()))
	}
	if v.Decode([]int{v.BOS(), v.EOS(), -1, v.Size()}) != "" {
		t.Error("special or unknown ids decoded to text")
	}
	if v.TokenString(0xC3) != "<0xC3>" || !bytes.Equal(v.TokenBytes(0xC3), []byte{0xC3}) {
		t.Errorf("byte token 0xC3: %q %q", v.TokenString(0xC3), v.TokenBytes(0xC3))
	}
	// Byte tokens are partial UTF-8; an incremental detokenizer sees the
	// character complete only after its last byte.
	ids := v.Encode("é")
	if len(ids) != 2 || utf8.Valid(v.TokenBytes(ids[0])) || v.Decode(ids) != "é" {
		t.Errorf("Encode(é) = %v", ids)
	}
	if v.Size() < 4000 {
		t.Errorf("vocabulary has %d tokens, want the word list in four forms", v.Size())
	}
}

func TestWordListsDisjoint(t *testing.T) {
	seen := map[string]wordClass{}
	n := 0
	for class, list := range wordLists() {
		for _, w := range list {
			if prev, ok := seen[w]; ok {
				t.Errorf("word %q in classes %d and %d", w, prev, class)
			}
			if w != strings.ToLower(w) || strings.ContainsAny(w, " _") {
				t.Errorf("word %q is not a plain lower-case word", w)
			}
			seen[w] = wordClass(class)
			n++
		}
	}
	if n < 1000 {
		t.Errorf("%d words, want at least 1000", n)
	}
}

func FuzzVocabRoundTrip(f *testing.F) {
	for _, s := range []string{"", "the end.", "\xff\x00", "日本語", " The  People\n\n"} {
		f.Add(s)
	}
	v := NewVocab()
	f.Fuzz(func(t *testing.T, s string) {
		ids := v.Encode(s)
		if got := v.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		if len(ids) > len(s) {
			t.Fatalf("Encode(%q) gave %d tokens for %d bytes", s, len(ids), len(s))
		}
		var b []byte
		for _, id := range ids {
			b = append(b, v.TokenBytes(id)...)
		}
		if string(b) != s {
			t.Fatalf("TokenBytes concatenation %q != %q", b, s)
		}
	})
}

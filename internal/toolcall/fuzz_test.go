package toolcall

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: no output panics a parser, and a stream split anywhere finds
// the calls parsing the whole output finds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>", `[f(x=1)]`, `{"name":"a","parameters":{}}; `,
		`[TOOL_CALLS][{"name":"a","arguments":{"b":[1]}}]`, "text <tool_call", "<tool_call>{}</tool_call><tool_call>"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		n := int(size%9) + 1
		for _, p := range Parsers() {
			_, want := Parse(p, text)
			s := NewStream(p)
			var got []Call
			for i := 0; i < len(text); i += n {
				_, cs := s.Write(text[i:min(i+n, len(text))])
				got = append(got, cs...)
			}
			_, cs := s.Close(false)
			got = append(got, cs...)
			if !cmp.Equal(got, want) {
				t.Fatalf("%s %q by %d: streamed %+v, parsed %+v", p, text, n, got, want)
			}
		}
	})
}

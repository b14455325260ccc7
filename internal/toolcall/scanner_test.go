package toolcall

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scanAll feeds text to a fresh scanner n bytes at a time.
func scanAll(inArray bool, text string, n int, keys ...string) []Call {
	s := NewScanner(inArray, keys...)
	var pieces []Piece
	for i := 0; i < len(text); i += n {
		pieces = append(pieces, s.Write(text[i:min(i+n, len(text))])...)
	}
	return Collect(pieces)
}

// TestScannerKeepsWhatWasGenerated: a required tool choice's output cut
// anywhere keeps every call that completed and, once its name is read, the
// call it cut with the arguments generated so far, whatever the pieces the
// text came in.
func TestScannerKeepsWhatWasGenerated(t *testing.T) {
	full := `[{"name": "get_weather", "parameters": {"city": "Par\"is", "days": [3, {"x": "}"}]}},` + "\n" +
		` {"name":"get_time","parameters":{}}, {"parameters": {"zone": "UTC"}, "name": "get_zone"}, {"name": "noargs"}]`
	want, ok := ParseRequired(full[:len(full)-len(`, {"name": "noargs"}]`)] + "]")
	if !ok {
		t.Fatal("the test's output does not parse")
	}
	want = append(want, Call{Name: "noargs", Arguments: "{}"})
	for n := 1; n <= 9; n++ {
		got := scanAll(true, full, n, "parameters")
		for i := range got {
			got[i].Arguments = compactJSON([]byte(got[i].Arguments))
		}
		if !cmp.Equal(got, want) {
			t.Fatalf("by %d: %+v, want %+v", n, got, want)
		}
	}
	cases := []struct {
		cut  string
		want []Call
	}{
		{`[{"name": "get_weat`, nil},
		{`[{"name": "get_weather"`, []Call{{Name: "get_weather"}}},
		{`[{"name": "get_weather", "parameters": {"city": "Pa`, []Call{{Name: "get_weather", Arguments: `{"city": "Pa`}}},
		{`[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "parameters": {"y"`,
			[]Call{{Name: "a", Arguments: `{"x": 1}`}, {Name: "b", Arguments: `{"y"`}}},
		{`[{"parameters": {"x": 1}, "na`, nil}, // arguments before a name not yet read
	}
	for _, tc := range cases {
		for n := 1; n <= 5; n++ {
			if got := scanAll(true, tc.cut, n, "parameters"); !cmp.Equal(got, tc.want) {
				t.Errorf("%q by %d: %+v, want %+v", tc.cut, n, got, tc.want)
			}
		}
	}
}

// TestStreamCloseCut: an auto tool call cut by max_tokens is a call with
// the arguments it got; one that ended malformed by itself stays content.
func TestStreamCloseCut(t *testing.T) {
	text := "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"
	for _, cut := range []bool{true, false} {
		s := NewStream(Hermes)
		content, calls := s.Write(text)
		more, moreCalls := s.Close(cut)
		content += more
		calls = append(calls, moreCalls...)
		if cut && (content != "Checking." || !cmp.Equal(calls, []Call{{Name: "get_weather", Arguments: `{"city": "Par`}})) {
			t.Errorf("cut: content %q, calls %+v", content, calls)
		}
		if !cut && (calls != nil || content != text) {
			t.Errorf("not cut: content %q, calls %+v", content, calls)
		}
	}
	s := NewStream(Mistral)
	s.Write(`[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "argum`)
	if _, calls := s.Close(true); !cmp.Equal(calls, []Call{{Name: "a", Arguments: `{"x": 1}`}, {Name: "b"}}) {
		t.Errorf("mistral cut: %+v", calls)
	}
}

// FuzzScanner: no text panics the scanner, the calls it finds do not depend
// on how the text was split, and a complete call's arguments are the JSON
// value the output holds.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`[{"name":"a","parameters":{"b":[1,"]"]}}]`, `{"name":"x","arguments":"{}"}; {"name":"y"}`,
		`[{"name":"a","parameters":1},{"name":"b","parameters":"s"}]`, `[{"x":{"name":"no"}}]`, `{"name":"\u00e9"`} {
		f.Add(s, uint8(2), true)
	}
	f.Fuzz(func(t *testing.T, text string, size uint8, inArray bool) {
		whole := scanAll(inArray, text, len(text)+1, "parameters", "arguments")
		if got := scanAll(inArray, text, int(size%7)+1, "parameters", "arguments"); !cmp.Equal(got, whole) {
			t.Fatalf("%q by %d: %+v, whole %+v", text, size%7+1, got, whole)
		}
		if calls, ok := ParseRequired(text); ok && inArray {
			for i, c := range calls {
				if i < len(whole) && c.Name == whole[i].Name && json.Valid([]byte(whole[i].Arguments)) &&
					compactJSON([]byte(whole[i].Arguments)) != c.Arguments {
					t.Fatalf("%q: call %d arguments %s, parsed %s", text, i, whole[i].Arguments, c.Arguments)
				}
			}
		}
	})
}

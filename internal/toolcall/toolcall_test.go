package toolcall

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	weather := Call{Name: "get_weather", Arguments: `{"city":"Paris","days":3}`}
	time := Call{Name: "get_time", Arguments: `{}`}
	cases := []struct {
		parser, text, content string
		calls                 []Call
	}{
		{Hermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
			"Let me check.", []Call{weather}},
		{Hermes, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"days\":3}}</tool_call>\n<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>",
			"", []Call{weather, time}},
		{Hermes, "<tool_call>{\"name\":\"get_time\",\"arguments\":\"{}\"}", "", []Call{time}}, // unterminated, string arguments
		{Hermes, "<tool_call>not json</tool_call>", "<tool_call>not json</tool_call>", nil},
		{Hermes, "just prose", "just prose", nil},
		{Llama3JSON, `{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}`, "", []Call{weather}},
		{Llama3JSON, `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}; {"name": "get_time", "parameters": {}}`, "", []Call{weather, time}},
		{Llama3JSON, `{"not": "a call"}`, `{"not": "a call"}`, nil},
		{Mistral, `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]`, "", []Call{weather}},
		{Mistral, `[{"name": "get_time", "arguments": {}}]`, "", []Call{time}},
		{Pythonic, `[get_weather(city="Paris", days=3), get_time()]`, "", []Call{weather, time}},
		{Pythonic, `[f(a='x', b=[1, True, None], c={'k': 2.5})]`, "", []Call{{Name: "f", Arguments: `{"a":"x","b":[1,true,null],"c":{"k":2.5}}`}}},
		{Pythonic, `[not a call`, `[not a call`, nil},
	}
	for _, tc := range cases {
		content, calls := Parse(tc.parser, tc.text)
		if content != tc.content || !cmp.Equal(calls, tc.calls) {
			t.Errorf("%s %q: content %q calls %+v; want %q %+v", tc.parser, tc.text, content, calls, tc.content, tc.calls)
		}
		// Streamed in pieces of every size, the same split comes out.
		for size := 1; size <= 7; size++ {
			s := NewStream(tc.parser)
			var got strings.Builder
			var gotCalls []Call
			for i := 0; i < len(tc.text); i += size {
				c, cs := s.Write(tc.text[i:min(i+size, len(tc.text))])
				got.WriteString(c)
				gotCalls = append(gotCalls, cs...)
			}
			c, cs := s.Close(false)
			got.WriteString(c)
			gotCalls = append(gotCalls, cs...)
			if strings.TrimSpace(got.String()) != tc.content || !cmp.Equal(gotCalls, tc.calls) {
				t.Errorf("%s %q streamed by %d: content %q calls %+v; want %q %+v", tc.parser, tc.text, size, got.String(), gotCalls, tc.content, tc.calls)
			}
		}
	}
}

func TestStreamPassesContentOnAtOnce(t *testing.T) {
	s := NewStream(Hermes)
	if c, _ := s.Write("Hello <tool"); c != "Hello" {
		t.Errorf("content %q, want the text before a possible call (its trailing blank held)", c)
	}
	if c, _ := s.Write("bar> there"); c != " <toolbar> there" {
		t.Errorf("content %q, want the held text once it is not a call", c)
	}
	s = NewStream(Llama3JSON)
	if c, _ := s.Write("Sure"); c != "Sure" {
		t.Errorf("llama3_json prose: %q", c)
	}
}

func TestDetect(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{{- '<tool_call>\\n' }}":                   Hermes,
		"[TOOL_CALLS]":                              Mistral,
		"<|python_tag|>":                            Llama3JSON,
		`"parameters": dictionary of argument name`: Llama3JSON,
		"[func_name1(params_name1=params_value1":    Pythonic,
		"{{ messages }}":                            "",
	} {
		if got := Detect(tmpl); got != want {
			t.Errorf("%q: %q, want %q", tmpl, got, want)
		}
	}
	if Check("hermes") != nil || Check("nope") == nil {
		t.Error("Check")
	}
}

func TestRequiredSchemaMovesReferences(t *testing.T) {
	s := RequiredSchema([]Tool{{Name: "a", Parameters: `{"type":"object","properties":{"x":{"$ref":"#/$defs/X"}},"$defs":{"X":{"type":"integer"}}}`}}, false)
	if !strings.Contains(s, `"$ref":"#/$defs/tool0/$defs/X"`) || !strings.Contains(s, `"maxItems":1`) {
		t.Errorf("schema %s", s)
	}
	calls, ok := ParseRequired(`[{"name":"a","parameters":{"x":1}}]`)
	if !ok || !cmp.Equal(calls, []Call{{Name: "a", Arguments: `{"x":1}`}}) {
		t.Errorf("ParseRequired: %+v %v", calls, ok)
	}
}

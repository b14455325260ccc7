package jinja

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// FuzzParseRender feeds arbitrary templates through Parse and Render
// under small limits: neither may panic, hang or produce more than the
// output limit, and parse failures must be SyntaxErrors.
func FuzzParseRender(f *testing.F) {
	if b, err := os.ReadFile("testdata/features.json"); err == nil {
		var cases []featureCase
		if json.Unmarshal(b, &cases) == nil {
			for _, c := range cases {
				f.Add(c.Template)
			}
		}
	}
	for _, s := range []string{
		"{% for m in messages %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}",
		"{%- set ns = namespace(x=0) %}{%- for m in messages[::-1] %}{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x }}",
		"{{ messages|tojson(indent=2) }}{{ (messages|selectattr('role', 'eq', 'user')|list)[0].content.split(' ')[-1] }}",
		"{% macro m(a, b=2) %}{{ a ~ b }}{% endmacro %}{{ m(1) }}{% raw %}{{{% endraw %}",
	} {
		f.Add(s)
	}
	lim := Limits{MaxSteps: 50_000, MaxDepth: 16, MaxOutput: 1 << 16}
	vars := map[string]any{
		"messages": []any{
			map[string]any{"role": "system", "content": "S"},
			map[string]any{"role": "user", "content": "hello <think>x</think> world"},
		},
		"bos_token":             "<s>",
		"add_generation_prompt": true,
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error %v is not a SyntaxError", err)
			}
			return
		}
		out, err := tmpl.RenderOptions(vars, Options{Limits: lim, Now: fixedNow})
		if errors.Is(err, errPanic) {
			t.Fatal(err)
		}
		if err == nil && len(out) > lim.MaxOutput {
			t.Fatalf("output of %d bytes exceeds the limit", len(out))
		}
	})
}

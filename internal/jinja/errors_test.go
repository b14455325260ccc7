package jinja

import (
	"errors"
	"strings"
	"testing"
)

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"{{ 1 + }}", 1, 8, "expected an expression"},
		{"a\nb {% if x %}", 2, 13, "unexpected end of template, expected 'endif'"},
		{"{% for x in y %}{% endif %}", 1, 20, "unexpected 'endif'"},
		{"{% endfor %}", 1, 4, "unexpected 'endfor'"},
		{"line1\n  {{ 'abc }}", 2, 6, "unterminated string"},
		{"{{ x", 1, 1, "unclosed tag"},
		{"{# never closed", 1, 1, "unclosed comment"},
		{"{% frobnicate %}", 1, 4, "unknown or unsupported statement 'frobnicate'"},
		{"{{ a $ b }}", 1, 6, "unexpected character '$'"},
		{"{% if %}{% endif %}", 1, 7, "expected an expression"},
		{"{% for in x %}{% endfor %}", 1, 11, "expected 'in', got 'x'"},
		{"{% set = 1 %}", 1, 8, "expected name"},
		{"{{ f(a=1, 2) }}", 1, 11, "positional argument follows keyword argument"},
		{"{{ x[] }}", 1, 5, "empty subscript"},
		{"{{ 'é' ~ }}", 1, 10, "expected an expression"},
		{"{% raw %}never ends", 1, 1, "missing endraw"},
		{"{{ '\\x4' }}", 1, 5, "invalid \\x escape"},
		{"{% for x in y recursive %}{% endfor %}", 1, 15, "recursive loops are not supported"},
		{"{{ 99999999999999999999 }}", 1, 4, "out of range"},
		{"{% if 1 %}{% break %}{% endif %}", 1, 14, "'break' outside a loop"},
		{"{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", 1, 35, "'continue' outside a loop"},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), 0, 0, ""}, // plain text
		{"{{ " + strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600) + " }}", 1, 0, "nesting deeper than"},
		{strings.Repeat("{% if 1 %}", 600), 1, 0, "nesting deeper than"},
		{"{{ x" + strings.Repeat(".a", 600) + " }}", 1, 0, "nesting deeper than"},
		{"{{ 1" + strings.Repeat(" + 1", 600) + " }}", 1, 0, "nesting deeper than"},
		{"{{ x" + strings.Repeat("|trim", 600) + " }}", 1, 0, "nesting deeper than"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.src)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("Parse(%.40q): %v", tt.src, err)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%.40q) = %v, want a SyntaxError", tt.src, err)
			continue
		}
		if !strings.Contains(se.Msg, tt.msg) || se.Line != tt.line || tt.col != 0 && se.Col != tt.col {
			t.Errorf("Parse(%.40q) = %d:%d %q, want %d:%d containing %q", tt.src, se.Line, se.Col, se.Msg, tt.line, tt.col, tt.msg)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"ok\n{{ nope.attr }}", 2, 9, "'nope' is undefined"},
		{"{{ 'a' + 1 }}", 1, 8, "can only concatenate str"},
		{"{{ 1 // 0 }}", 1, 6, "division or modulo by zero"},
		{"{{ 1 < 'a' }}", 1, 4, "'<' not supported between instances of 'int' and 'str'"},
		{"{{ 1|nosuch }}", 1, 6, "no filter named 'nosuch'"},
		{"{{ 1 is nosuch }}", 1, 6, "no test named 'nosuch'"},
		{"{% set x = 1 %}{% set x.y = 2 %}", 1, 19, "non-namespace"},
		{"{{ 'x'() }}", 1, 7, "'str' object is not callable"},
		{"{% for a, b in [1] %}{% endfor %}", 1, 4, "cannot unpack"},
		{"{{ 9223372036854775807 + 1 }}", 1, 24, "integer overflow"},
		{"{{ {1: 2} }}", 1, 4, "dict keys must be strings"},
		{"{{ 5 is divisibleby 0 }}", 1, 6, "non-zero"},
		{"{{ [1, 2][::0] }}", 1, 10, "slice step cannot be zero"},
		{"{{ x|tojson }}", 1, 6, "'x' is undefined"},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		_, err = tmpl.Render(nil)
		var re *RuntimeError
		if !errors.As(err, &re) {
			t.Errorf("Render(%q) = %v, want a RuntimeError", tt.src, err)
			continue
		}
		if !strings.Contains(re.Err.Error(), tt.msg) || re.Line != tt.line || re.Col != tt.col {
			t.Errorf("Render(%q) = %d:%d %q, want %d:%d containing %q", tt.src, re.Line, re.Col, re.Err, tt.line, tt.col, tt.msg)
		}
	}
}

func TestRaiseException(t *testing.T) {
	tmpl, err := Parse("{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('Tool messages are not supported: ' ~ m.content) }}{% endif %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(map[string]any{"messages": []any{map[string]any{"role": "tool", "content": "x"}}})
	var exc *ExceptionError
	if !errors.As(err, &exc) {
		t.Fatalf("err = %v, want an ExceptionError", err)
	}
	if exc.Msg != "Tool messages are not supported: x" {
		t.Errorf("Msg = %q", exc.Msg)
	}
	if !strings.Contains(err.Error(), "line 1") {
		t.Errorf("error %q does not say where", err)
	}
}

// TestLimits: hostile templates stop with ErrLimit, quickly and without
// exhausting memory.
func TestLimits(t *testing.T) {
	lim := Limits{MaxSteps: 200_000, MaxDepth: 20, MaxOutput: 1 << 20}
	tests := []struct{ name, src string }{
		{"nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"},
		{"huge range", "{% for i in range(10**15) %}{% endfor %}"},
		{"string doubling", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"},
		{"list doubling", "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"},
		{"string repeat", "{{ 'x' * 10000000000 }}"},
		{"list repeat", "{{ [1, 2] * 10000000000 }}"},
		{"output", "{% for i in range(100000) %}{{ 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' }}{% endfor %}"},
		{"recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
		{"mutual recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}"},
		{"shared structure print", "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}"},
		{"shared structure json", "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|tojson }}"},
		{"shared structure compare", "{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}"},
		{"self-containing namespace", "{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}"},
		{"replace growth", "{% set ns = namespace(s='aaaa') %}{% for i in range(30) %}{% set ns.s = ns.s|replace('a', 'aa') %}{% endfor %}"},
		{"join growth", "{% set ns = namespace(l=['aaaaaaaa']) %}{% for i in range(30) %}{% set ns.l = [ns.l|join, ns.l|join] %}{% endfor %}"},
		{"power", "{{ 2 ** 4000 }}"},
		{"deep value compare", "{% set ns = namespace(a=1) %}{% for i in range(2000) %}{% set ns.a = [ns.a] %}{% endfor %}{{ ns.a == ns.a }}"},
		{"deep value print", "{% set ns = namespace(a=1) %}{% for i in range(2000) %}{% set ns.a = [ns.a] %}{% endfor %}{{ ns.a }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tmpl.RenderOptions(nil, Options{Limits: lim})
			if err == nil {
				t.Fatalf("rendered %d bytes, want an error", len(out))
			}
			if !errors.Is(err, ErrLimit) && !strings.Contains(err.Error(), "overflow") {
				t.Errorf("err = %v, want ErrLimit", err)
			}
		})
	}
}

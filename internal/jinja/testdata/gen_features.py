#!/usr/bin/env python3
"""Writes features.json: template-language cases with the output of Python
Jinja2 in the environment transformers' apply_chat_template uses
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
its tojson, raise_exception and strftime_now with a fixed clock).

Run from this directory with Jinja2 3.1 installed: python3 gen_features.py
A case whose template raises records "error": true instead of "want".
"""
import datetime
import json

from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2024, 7, 9, 14, 5, 3)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise Exception(msg)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: NOW.strftime(fmt)

MSGS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]},
    {"role": "tool", "content": "22"},
    {"role": "user", "content": "Thanks"},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                         "required": ["city"]}}}]

CASES = [
    # text, whitespace control, trim_blocks / lstrip_blocks
    ("text", "hello\nworld\n", {}),
    ("trailing_newline_kept_once", "a\n\n", {}),
    ("crlf", "a\r\nb{% if true %}\r\nc{% endif %}", {}),
    ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n  y", {}),
    ("lstrip_not_after_text", "a  {% if true %}b{% endif %}", {}),
    ("lstrip_not_for_output", "  {{ 'x' }}\n", {}),
    ("minus_left", "a  \n  {%- if true %}b{% endif %}", {}),
    ("minus_right", "{% if true -%}  \n  b{% endif %}", {}),
    ("minus_output", "a \n {{- 'b' -}} \n c", {}),
    ("plus_disables_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("plus_disables_trim", "{% if true +%}\nx{% endif %}", {}),
    ("comment", "a {# note #}b\n  {# own line #}\nc", {}),
    ("comment_minus", "a  {#- note -#}  b", {}),
    ("raw", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
    ("indented_blocks", "{%- for m in messages %}\n    {%- if m.role == 'user' %}\n        {{- m.content }}\n    {%- endif %}\n{%- endfor %}", {"messages": MSGS}),
    # literals and printing
    ("literals", "{{ 1 }} {{ -2 }} {{ 1.5 }} {{ 1e3 }} {{ 1_000 }} {{ 'a' \"b\" }} {{ true }} {{ False }} {{ none }}", {}),
    ("float_repr", "{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 0.1 + 0.2 }} {{ 2.0 }} {{ -0.0 }}", {}),
    ("string_escapes", r"""{{ 'a\nb\tc\\d\'e' }}|{{ "\u00e9\x41\101" }}|{{ 'x\qy' }}|{{ 'multi
line' }}""", {}),
    ("list_dict_repr", "{{ [1, 'a', none, true, 1.5, {'k': [1, 2]}, (1,), ()] }}", {}),
    ("repr_quotes", "{{ [\"it's\", 'a\"b', 'both\\'\"'] }}", {}),
    ("tuple_print", "{{ (1, 'x') }}", {}),
    ("unicode", "{{ '你好' }} {{ '你好'|length }} {{ '你好'[1] }} {{ 'héllo'[::-1] }}", {}),
    # operators
    ("arith", "{{ 7 + 2 }} {{ 7 - 2 }} {{ 7 * 2 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}", {}),
    ("arith_bool", "{{ true + 1 }} {{ true * 3 }}", {}),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ undefined_name }}", {}),
    ("string_ops", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ [1] * 3 }} {{ [1] + [2] }}", {}),
    ("comparisons", "{{ 1 == 1.0 }} {{ 1 != 2 }} {{ 'a' < 'b' }} {{ 2 >= 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ [1, 2] < [1, 3] }} {{ true == 1 }}", {}),
    ("in", "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} {{ 3 not in [1] }}", {}),
    ("logic", "{{ true and 'x' }} {{ 0 or 'y' }} {{ not 0 }} {{ not 1 == 1 }} {{ none or [] }} {{ 1 and 0 }}", {}),
    ("ternary", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ 'a' if 0 else 'b' if 1 else 'c' }}", {}),
    ("filter_binds_tight", "{{ 'a' + ' b '|trim + 'c' }} {{ -3|abs }} {{ 1 + [1, 2]|length }}", {}),
    # variables, attributes, items
    ("attr_item", "{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m.missing is defined }} {{ xs[0] }} {{ xs[-1] }} {{ xs[5] is undefined }} {{ xs.1 }}", {"m": {"role": "user", "content": "hi"}, "xs": [10, 20, 30]}),
    ("undefined_semantics", "[{{ nope }}] {{ nope is defined }} {{ nope|length }} {{ nope|default('d') }} {% if not nope %}falsy{% endif %} {% for x in nope %}x{% else %}empty{% endfor %}", {}),
    ("default_boolean", "{{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n', true) }} {{ 0|default(5) }}", {}),
    ("slicing", "{{ xs[1:] }} {{ xs[:2] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[-2:] }} {{ xs[1:-1] }} {{ 'abcdef'[1:4] }} {{ xs[10:] }} {{ xs[::-2] }} {{ xs[3:0:-1] }}", {"xs": [1, 2, 3, 4, 5]}),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys()|list }} {{ d.values()|list }}", {"d": {"a": 1, "b": 2}}),
    ("dict_literal_order", "{{ {'b': 1, 'a': 2} }} {{ {'b': 1, 'a': 2}|tojson }}", {}),
    # statements
    ("if_elif_else", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}{{ loop.previtem|default('-') }}{{ x }}{{ loop.nextitem|default('-') }} {% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}none{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ loop.index }},{% endfor %}", {}),
    ("for_unpack", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}{% for k, v in {'x': 1}|items %}{{ k }}{{ v }}{% endfor %}", {}),
    ("for_dict", "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}", {}),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("loop_cycle", "{% for x in range(4) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = i * 10 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("namespace", "{% set ns = namespace(n=0, found=false) %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% if x == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.n }} {{ ns.found }}", {}),
    ("set_block", "{% set body %}x={{ 1 + 1 }}{% endset %}[{{ body }}]", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', '?') }} {{ greet(name='Cy') }}", {}),
    ("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("call_block", "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}", {}),
    ("filter_block", "{% filter upper %}shout {{ 'this' }}{% endfilter %}", {}),
    # filters
    ("filters_string", "{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'AbC'|lower }}|{{ 'abc'|upper }}|{{ 'hello world'|capitalize }}|{{ 'hello big-world (x)'|title }}|{{ 'aaa'|replace('a', 'b', 2) }}", {}),
    ("filters_length", "{{ [1, 2]|length }} {{ 'abc'|count }} {{ {'a': 1}|length }}", {}),
    ("filters_join", "{{ [1, 'a', none]|join }} {{ ['a', 'b']|join(', ') }} {{ [{'n': 'x'}, {'n': 'y'}]|join('-', attribute='n') }}", {}),
    ("filters_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}]", {}),
    ("filters_list_string", "{{ 'ab'|list }} {{ {'a': 1}|list }} {{ 12|string + 'x' }} {{ [1]|string }}", {}),
    ("filters_int_float", "{{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 'ff'|int(base=16) }} {{ true|int }}", {}),
    ("filters_items", "{% for k, v in d|items %}{{ k }}:{{ v }} {% endfor %}{{ d|items|list }}", {"d": {"z": 1, "a": [1]}}),
    ("filters_map", "{{ ms|map(attribute='role')|join(',') }} {{ ['a', 'b']|map('upper')|list }} {{ ms|map(attribute='nope', default='?')|list }}", {"ms": MSGS[:2]}),
    ("filters_select", "{{ ms|selectattr('role', 'equalto', 'user')|list|length }} {{ ms|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }} {{ [0, 1, 2, none]|select|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('in', [2])|list }} {{ ms|selectattr('tool_calls')|list|length }} {{ ms|selectattr('tool_calls', 'defined')|list|length }}", {"ms": MSGS}),
    ("filters_tojson", "{{ tools|tojson }}\n{{ {'a': [1, 2.5, none, true, 'é\"\\n\u0001']}|tojson }}", {"tools": TOOLS}),
    ("filters_tojson_indent", "{{ tools|tojson(indent=2) }}\n{{ []|tojson(indent=4) }}{{ {}|tojson(indent=4) }}", {"tools": TOOLS}),
    ("filters_tojson_options", "{{ {'b': 1, 'a': [1, 2]}|tojson(sort_keys=true) }} {{ {'a': [1, 2]}|tojson(separators=(',', ':')) }} {{ 'é'|tojson(ensure_ascii=true) }}", {}),
    ("filters_indent", "{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'a\nb'|indent('> ') }}", {}),
    ("filters_misc", "{{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ [1, 2, 2, 1]|unique|list }} {{ [1, 2, 3]|sum }} {{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ '<a>'|e }} {{ 'x'|safe }} {{ {'b': 1, 'a': 2}|dictsort }}", {}),
    ("filters_sort_attribute", "{{ ms|sort(attribute='role')|map(attribute='role')|join(',') }}", {"ms": MSGS}),
    # tests
    ("tests", "{{ 'a' is string }} {{ 1 is string }} {{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ 1 is number }} {{ 1.5 is number }} {{ none is none }} {{ 1 is none }} {{ x is undefined }} {{ 4 is divisibleby 2 }} {{ 3 is even }} {{ 1 is equalto 1 }} {{ 2 is eq 3 }} {{ 'b' is in 'abc' }} {{ false is false }} {{ 0 is false }} {{ true is true }} {{ true is boolean }} {{ 1 is integer }} {{ 1.0 is float }} {{ 'abc' is lower }} {{ 1 is not none }} {{ 2 is gt 1 }} {{ 1 is sameas true }}", {}),
    ("tests_callable", "{{ range is callable }} {{ 'x'.upper is callable }} {{ 1 is callable }}", {}),
    # string methods
    ("string_methods", "{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\n\na\n'.lstrip('\n') }}|{{ 'a\n\n'.rstrip() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ '  a  b '.split(None, 1) }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'hello wORLD o\\'neil'.title() }}|{{ 'abc'.find('c') }}|{{ 'aaa'.count('a') }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\nb'.splitlines() }}|{{ '12'.isdigit() }}|{{ 'x{}y{}'.format(1, 'z') }}", {}),
    ("qwen_think_split", "{% set c = m.split('</think>')[-1].lstrip('\n') %}{% set r = m.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}[{{ r }}][{{ c }}]", {"m": "<think>\nreasoning here\n</think>\n\nanswer"}),
    # globals
    ("range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}", {}),
    ("dict_global", "{{ dict(a=1, b='x') }} {{ dict({'z': 1}, y=2) }}", {}),
    ("strftime_now", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j %p %I %y %%') }}", {}),
    ("raise_exception", "{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with a user message') }}{% endif %}", {"messages": MSGS}),
    # error cases (the message is checked in Go, not against Python's)
    ("error_attr_of_undefined", "{{ nope.attr }}", {}),
    ("error_add_str_int", "{{ 'a' + 1 }}", {}),
    ("error_div_zero", "{{ 1 // 0 }}", {}),
    ("error_not_callable", "{{ 'x'() }}", {}),
    ("error_unknown_filter", "{{ 1|nosuchfilter }}", {}),
    ("error_unknown_test", "{{ 1 is nosuchtest }}", {}),
    ("error_compare", "{{ 1 < 'a' }}", {}),
    ("error_namespace_attr", "{% set x = 1 %}{% set x.y = 2 %}", {}),
    ("error_call_undefined", "{{ nope() }}", {}),
]


def main():
    out = []
    for name, src, variables in CASES:
        case = {"name": name, "template": src, "vars": variables}
        try:
            case["want"] = env.from_string(src).render(**variables)
        except Exception as exc:  # the case records that Jinja2 refuses it
            case["error"] = True
            case["python_error"] = "%s: %s" % (type(exc).__name__, exc)
        out.append(case)
    with open("features.json", "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

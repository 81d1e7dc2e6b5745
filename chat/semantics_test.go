package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

// semanticsData are the variables of the semantics cases.
const semanticsData = `{"s": "Hello World", "n": 5, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": [1, 2], "items": "key"}, "none": null, "t": true, "u8": "héllo 日本", "e": "", "sp": "  a b  \n", "neg": -7, "big": 9007199254740993, "m": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null}], "nested": {"x": {"y": {"z": "deep"}}}, "mixed": ["a", 1, null, true, 2.0]}`

// semanticsCases pin jinja2 behaviour templates rely on: each source was
// rendered by Python jinja2 3.1.6 in transformers' sandboxed environment
// with semanticsData; want is its output, or wantErr the exception it
// raised (we only require an error of the same Python type).
var semanticsCases = []struct{ src, want, wantErr string }{
	{`{{ none }}|{{ t }}|{{ f }}|{{ 1.0 }}|{{ 1e20 }}|{{ 1e-5 }}|{{ 0.1+0.2 }}|{{ l }}|{{ d }}|{{ mixed }}|{{ undefined_var }}`, `None|True|2.5|1.0|1e+20|1e-05|0.30000000000000004|[3, 1, 2]|{'b': 1, 'a': [1, 2], 'items': 'key'}|['a', 1, None, True, 2.0]|`, ""},
	{`{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ {'a': (1, 'x')} }}|{{ "it's" }}|{{ ['it\'s', 'q"'] }}|{{ ['a\nb'] }}`, `(1, 2)|(1,)|()|{'a': (1, 'x')}|it's|["it's", 'q"']|['a\nb']`, ""},
	{`{{ 'a' ~ none ~ 1 ~ 2.0 ~ t ~ l }}|{{ 'x' + 'y' }}|{{ l + [4] }}|{{ 1 + 2.5 }}|{{ t + 1 }}`, `aNone12.0True[3, 1, 2]|xy|[3, 1, 2, 4]|3.5|2`, ""},
	{`{{ 'a' + 1 }}`, "", `TypeError: can only concatenate str (not "int") to str`},
	{`{{ 'a' + none }}`, "", `TypeError: can only concatenate str (not "NoneType") to str`},
	{`{{ l + 'x' }}`, "", `TypeError: can only concatenate list (not "str") to list`},
	{`{{ 1 + 'a' }}`, "", `TypeError: unsupported operand type(s) for +: 'int' and 'str'`},
	{`{{ undefined_var + 'a' }}`, "", `UndefinedError: 'undefined_var' is undefined`},
	{`{{ 'a' ~ undefined_var ~ 'b' }}`, `ab`, ""},
	{`{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 7.5 // 2 }}|{{ -7.5 % 2 }}|{{ 3 * 'ab' }}|{{ [1] * 3 }}|{{ -n }}|{{ 2 * 3 + 4 ~ 'x' }}`, "", `TypeError: unsupported operand type(s) for +: 'int' and 'str'`},
	{`{{ 1 / 0 }}`, "", `ZeroDivisionError: division by zero`},
	{`{{ 1 // 0 }}`, "", `ZeroDivisionError: integer division or modulo by zero`},
	{`{{ 'a' - 'b' }}`, "", `TypeError: unsupported operand type(s) for -: 'str' and 'str'`},
	{`{{ -'a' }}`, "", `TypeError: bad operand type for unary -: 'str'`},
	{`{{ '%s and %s' % ('a', 'b') }}|{{ '%d%%' % 5 }}|{{ '%s' % none }}`, `a and b|5%|None`, ""},
	{`{{ 1 == 1.0 }}|{{ t == 1 }}|{{ 'a' < 'b' }}|{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ [1,2] < [1,3] }}|{{ none == none }}|{{ undefined_var == none }}|{{ 'a' in 'cat' }}|{{ 1 in l }}|{{ 'b' in d }}|{{ 'z' not in d }}|{{ 2.0 in l }}`, `True|True|True|True|False|True|True|False|True|True|True|True|True`, ""},
	{`{{ 1 < 'a' }}`, "", `TypeError: '<' not supported between instances of 'int' and 'str'`},
	{`{{ none < 1 }}`, "", `TypeError: '<' not supported between instances of 'NoneType' and 'int'`},
	{`{{ 'a' in none }}`, "", `TypeError: argument of type 'NoneType' is not iterable`},
	{`{{ 1 in 'abc' }}`, "", `TypeError: 'in <string>' requires string as left operand, not int`},
	{`{{ none is none }}|{{ 1 is number }}|{{ t is number }}|{{ t is integer }}|{{ 1.0 is float }}|{{ 's' is string }}|{{ l is sequence }}|{{ 's' is sequence }}|{{ d is mapping }}|{{ d is iterable }}|{{ undefined_var is defined }}|{{ undefined_var is iterable }}|{{ 4 is even }}|{{ 9 is divisibleby 3 }}|{{ 'ab' is lower }}|{{ 'A1' is upper }}|{{ 3 is gt 2 }}|{{ 'x' is in 'xy' }}|{{ none is sameas none }}|{{ l|map('string') is sequence }}|{{ 'tojson' is filter }}|{{ 'odd' is test }}`, `True|True|True|False|True|True|True|True|True|True|False|True|True|True|True|True|True|True|True|False|True|True`, ""},
	{`{{ 'a' ~ 'b' is string }}|{{ not 1 is none }}|{{ 1 if t is true else 2 }}|{{ s is not defined }}`, `aTrue|True|1|False`, ""},
	{`{{ d.b }}|{{ d['a'][1] }}|{{ d.a.1 }}|{{ d['items'] }}|{{ d.items is defined }}|{{ l[-1] }}|{{ l[10] is defined }}|{{ s[0] }}|{{ s[-1] }}|{{ u8[1] }}|{{ nested.x.y.z }}|{{ m[1].content }}|{{ none.x is defined }}`, `1|2|2|key|True|2|False|H|d|é|deep|None|False`, ""},
	{`{{ undefined_var.x }}`, "", `UndefinedError: 'undefined_var' is undefined`},
	{`{{ undefined_var['x'] }}`, "", `UndefinedError: 'undefined_var' is undefined`},
	{`{{ d.missing.x }}`, "", `UndefinedError: 'dict object' has no attribute 'missing'`},
	{`{{ l.missing }}`, ``, ""},
	{`{{ s[1:3] }}|{{ s[::-1] }}|{{ l[::2] }}|{{ l[-2:] }}|{{ u8[1:4] }}|{{ s[:100] }}|{{ l[5:] }}|{{ (1,2,3)[1:] }}`, `el|dlroW olleH|[3, 2]|[1, 2]|éll|Hello World|[]|(2, 3)`, ""},
	{`{{ s.upper() }}|{{ s.lower() }}|{{ s.split() }}|{{ s.split('o') }}|{{ s.split('o', 1) }}|{{ s.rsplit('o', 1) }}|{{ sp.strip() }}|{{ sp.lstrip() }}|{{ sp.rstrip() }}|{{ s.strip('Hd') }}|{{ s.startswith('He') }}|{{ s.startswith(('x', 'H')) }}|{{ s.endswith('ld') }}|{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 1) }}|{{ s.find('o') }}|{{ u8.find('日') }}|{{ s.count('l') }}|{{ '-'.join(['a','b']) }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ '{} {}'.format('a', 1) }}|{{ '{0}{0}'.format('z') }}|{{ 'a\nb'.splitlines() }}|{{ '12'.isdigit() }}`, `HELLO WORLD|hello world|['Hello', 'World']|['Hell', ' W', 'rld']|['Hell', ' World']|['Hello W', 'rld']|a b|a b  
|  a b|ello Worl|True|True|True|HeLLo WorLd|HeLlo World|4|6|3|a-b|Hello World|Hello|a 1|zz|['a', 'b']|True`, ""},
	{`{{ s.nosuch() }}`, "", `UndefinedError: 'str object' has no attribute 'nosuch'`},
	{`{{ s.split('') }}`, "", `ValueError: empty separator`},
	{`{{ '-'.join([1, 2]) }}`, "", `TypeError: sequence item 0: expected str instance, int found`},
	{`{{ d.get('b') }}|{{ d.get('zz') }}|{{ d.get('zz', 'dflt') }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.items() | list }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.items() }}`, `1|None|dflt|['b', 'a', 'items']|[1, [1, 2], 'key']|[('b', 1), ('a', [1, 2]), ('items', 'key')]|b=1;a=[1, 2];items=key;|dict_items([('b', 1), ('a', [1, 2]), ('items', 'key')])`, ""},
	{`{{ d.update({'x': 1}) }}`, "", `SecurityError: access to attribute 'update' of 'dict' object is unsafe.`},
	{`{{ d.pop('b') }}`, "", `SecurityError: access to attribute 'pop' of 'dict' object is unsafe.`},
	{`{{ l.append(4) }}`, "", `SecurityError: access to attribute 'append' of 'list' object is unsafe.`},
	// jinja2 3.1.2 (the reference) allows list.pop; 3.1.5 and later refuse it.
	{`{{ l.pop() }}|{{ l }}`, `2|[3, 1]`, ""},
	{`{{ d.items() | tojson }}`, "", `TypeError: Object of type dict_items is not JSON serializable`},
	{`{{ l | tojson }}|{{ d | tojson }}|{{ u8 | tojson }}|{{ u8 | tojson(ensure_ascii=True) }}|{{ d | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson(indent=2) }}|{{ d | tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}|{{ 'a<b>&"\'' | tojson }}|{{ [1.0, 1e20, -0.0, 1e-7] | tojson }}|{{ none | tojson }}`, `[3, 1, 2]|{"b": 1, "a": [1, 2], "items": "key"}|"héllo 日本"|"h\u00e9llo \u65e5\u672c"|{
  "b": 1,
  "a": [
    1,
    2
  ],
  "items": "key"
}|[]|{}|{"b":1,"a":[1,2],"items":"key"}|{"a": 2, "b": 1}|"a<b>&\"'"|[1.0, 1e+20, -0.0, 1e-07]|null`, ""},
	{`{{ undefined_var | tojson }}`, "", `TypeError: Object of type Undefined is not JSON serializable`},
	{`{{ l | map('string') | tojson }}`, "", `TypeError: Object of type generator is not JSON serializable`},
	{`{{ l | reverse | tojson }}`, "", `TypeError: Object of type list_reverseiterator is not JSON serializable`},
	{`{{ l | join(', ') }}|{{ mixed | join }}|{{ m | map(attribute='role') | join('/') }}|{{ m | selectattr('content') | list | length }}|{{ m | rejectattr('content') | list | length }}|{{ m | selectattr('role', 'equalto', 'user') | list }}|{{ l | select('odd') | list }}|{{ l | reject('odd') | list }}|{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ ['b','A','a'] | sort }}|{{ ['b','A','a'] | sort(case_sensitive=true) }}|{{ l | min }}|{{ l | max }}|{{ l | sum }}|{{ l | first }}|{{ l | last }}|{{ l | length }}|{{ s | length }}|{{ d | length }}|{{ l | unique | list }}|{{ [1, 1, 2] | unique | list }}|{{ none | select | list }}`, `3, 1, 2|a1NoneTrue2.0|user/assistant|1|1|[{'role': 'user', 'content': 'hi'}]|[3, 1]|[2]|[1, 2, 3]|[3, 2, 1]|['A', 'a', 'b']|['A', 'a', 'b']|1|3|6|3|2|3|11|3|[3, 1, 2]|[1, 2]|[]`, ""},
	{`{{ s | upper }}|{{ s | lower }}|{{ 'hello wORLD' | title }}|{{ 'hello' | capitalize }}|{{ sp | trim }}|{{ 'xxhixx' | trim('x') }}|{{ s | replace('o', '0') }}|{{ '3' | int + 1 }}|{{ 'x' | int }}|{{ '2.5' | float }}|{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ -3 | abs }}|{{ s | wordcount }}|{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ s | default('x') }}|{{ undefined_var | default('dflt') }}|{{ '' | default('dflt', true) }}|{{ d | dictsort }}|{{ {'B': 1, 'a': 2} | dictsort }}|{{ d | items | list }}|{{ l | list }}|{{ 'ab' | list }}|{{ d | list }}|{{ [1,2,3,4,5] | batch(2) | list }}|{{ '%s-%s' | format('a', 'b') }}|{{ 'x' | center(5) }}|{{ d | attr('b') }}|{{ none | string }}|{{ 1.0 | string }}`, `HELLO WORLD|hello world|Hello World|Hello|a b|hi|Hell0 W0rld|4|0|2.5|2.57|2.0|3|2|a
  b

  c|  a
  b|Hello World|dflt|dflt|[('a', [1, 2]), ('b', 1), ('items', 'key')]|[('a', 2), ('B', 1)]|[('b', 1), ('a', [1, 2]), ('items', 'key')]|[3, 1, 2]|['a', 'b']|['b', 'a', 'items']|[[1, 2], [3, 4], [5]]|a-b|  x  ||None|1.0`, ""},
	{`{{ l | map('upper') | list }}`, `['3', '1', '2']`, ""},
	{`{{ 1 | length }}`, "", `TypeError: object of type 'int' has no len()`},
	{`{{ l | map(attribute='x') | list }}`, `[Undefined, Undefined, Undefined]`, ""},
	{`{{ 'a<b' | safe + '<i>' }}|{{ '<i>' + 'a<b' | safe }}|{{ 'x' | e }}|{{ '<&>"\'' | escape }}|{{ ('a' | safe) ~ '<b>' }}|{{ '<b>' | safe | length }}|{{ '<b>' | safe is string }}|{{ '<b>' | escape is escaped }}`, `a<b&lt;i&gt;|&lt;i&gt;a<b|x|&lt;&amp;&gt;&#34;&#39;|a<b>|3|True|True`, ""},
	{`{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a','b') }};{% endfor %}`, `10TrueFalse331a;21FalseFalse3232b;32FalseTrue311a;`, ""},
	{`{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}|{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for c in 'ab' %}{{ c }}{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}`, `3222|empty|ab|baitems|3`, ""},
	{`{% for x in none %}{{ x }}{% endfor %}`, "", `TypeError: 'NoneType' object is not iterable`},
	{`{% for x in 5 %}{{ x }}{% endfor %}`, "", `TypeError: 'int' object is not iterable`},
	{`{% for x in undefined_var %}{{ x }}{% endfor %}ok`, `ok`, ""},
	{`{% set ns = namespace(a=1, b=[]) %}{% for x in l %}{% set ns.a = ns.a + x %}{% endfor %}{{ ns.a }}|{{ ns.b }}|{{ ns.zz is defined }}|{% set y = 1 %}{% for x in l %}{% set y = x %}{% endfor %}{{ y }}|{% if t %}{% set z = 5 %}{% endif %}{{ z }}`, `7|[]|False|1|5`, ""},
	{`{% macro f(a, b='B', c=none) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}{{ f(1) }}{{ f(1, 2) }}{{ f(1, c=3) }}{{ f('x') ~ '!' }}`, `[1|B|None][1|2|None][1|B|3][x|B|None]!`, ""},
	{`{% macro outer() %}<{{ caller() }}>{% endmacro %}{% call outer() %}inner{% endcall %}`, `<inner>`, ""},
	{`{% set x %}block {{ s }}{% endset %}{{ x | upper }}`, `BLOCK HELLO WORLD`, ""},
	{`{% filter upper %}abc{% endfilter %}`, `ABC`, ""},
	{`{{ raise_exception('boom') }}`, "", `TemplateError: boom`},
	{`{{ strftime_now('%Y-%m-%d %H:%M %b %B %a %A %d %e %j %p %I') }}`, `2026-01-01 12:00 Jan January Thu Thursday 01  1 001 PM 12`, ""},
	{`{{ dict(b=1, a=2) }}|{{ {'z': 1, 'y': 2} }}|{{ {1: 'a', 2.5: 'b', none: 'c', t: 'd'} }}|{{ {1: 'a'} | tojson }}|{{ range(3) | list }}|{{ range(1, 7, 2) | list }}|{{ {'a': 1}['a'] }}|{{ {1: 'x'}[1] }}`, `{'b': 1, 'a': 2}|{'z': 1, 'y': 2}|{1: 'd', 2.5: 'b', None: 'c'}|{"1": "a"}|[0, 1, 2]|[1, 3, 5]|1|x`, ""},
	{`{{ 'a' if t }}|{{ 'a' if not t }}|{{ 'a' if none else 'b' if t else 'c' }}|{{ t and 'yes' }}|{{ none or 'dflt' }}|{{ 0 or '' or 'last' }}|{{ not none }}`, `a||b|yes|dflt|last|True`, ""},
	{`{{ big }}|{{ big | tojson }}|{{ 9223372036854775807 - 1 }}|{{ 10 ** 18 }}`, `9007199254740993|9007199254740993|9223372036854775806|1000000000000000000`, ""},
	{`  {% if t %}
    x
  {% endif %}
  y {{- ' z ' -}} w
{# c #}
end`, `    x
  y z w
end`, ""},
	{`{%- set a = 'x\ty\u00e9\x41\101' -%}{{ a }}|{{ 'a' 'b' }}|{{ """q""" }}`, `x	yéAA|ab|q`, ""},
	{`{{ m[0].role.upper() }}|{{ m | length > 1 }}|{{ (m | last).content is none }}|{{ m[0]['content'] | trim == 'hi' }}`, `USER|True|True|True`, ""},
}

func TestSemantics(t *testing.T) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(semanticsData), &data); err != nil {
		t.Fatal(err)
	}
	kw := map[string]any{}
	for k, v := range data {
		kw[k] = v
	}
	for _, c := range semanticsCases {
		tmpl, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s: parse: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(RenderOptions{Kwargs: kw, Now: goldenNow})
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.src, err)
		case c.wantErr == "" && got != c.want:
			t.Errorf("%s:\n got %q\nwant %q", c.src, got, c.want)
		case c.wantErr != "" && err == nil:
			t.Errorf("%s: rendered %q, jinja2 raised %s", c.src, got, c.wantErr)
		case c.wantErr != "":
			kind, _, _ := strings.Cut(c.wantErr, ":")
			if !strings.Contains(err.Error(), kind+":") {
				t.Errorf("%s: got error %v, jinja2 raised %s", c.src, err, c.wantErr)
			}
		}
	}
}

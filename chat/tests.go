package chat

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// tests are jinja2's built-in tests with Python's type model (a string is
// a sequence, a bool is a number, jinja2's Undefined is iterable). Each
// receives the tested value as args[0].
var tests map[string]fn

func init() {
	is := func(f func(v jinja.Value) bool) fn {
		return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewBool(f(args[0])), nil
		}
	}
	cmpTest := func(name string, f func(c int) bool) fn {
		return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) < 2 {
				return jinja.Undefined(), fmt.Errorf("TypeError: test %s needs an argument", name)
			}
			c, err := pyCompare(args[0], args[1])
			if err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewBool(f(c)), nil
		}
	}
	eq := func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) < 2 {
			return jinja.Undefined(), fmt.Errorf("TypeError: test eq needs an argument")
		}
		return jinja.NewBool(pyEqual(args[0], args[1])), nil
	}
	ne := func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		v, err := eq(args, kw)
		if err != nil {
			return v, err
		}
		return jinja.NewBool(!v.AsBool()), nil
	}
	tests = map[string]fn{
		"defined":   is(func(v jinja.Value) bool { return !v.IsUndefined() }),
		"undefined": is(jinja.Value.IsUndefined),
		"none":      is(jinja.Value.IsNone),
		"boolean":   is(jinja.Value.IsBool),
		"true":      is(func(v jinja.Value) bool { return v.IsBool() && v.AsBool() }),
		"false":     is(func(v jinja.Value) bool { return v.IsBool() && !v.AsBool() }),
		"integer":   is(jinja.Value.IsInt),
		"float":     is(jinja.Value.IsFloat),
		"number":    is(func(v jinja.Value) bool { _, ok := pyNumber(v); return ok }),
		"string":    is(func(v jinja.Value) bool { _, ok := asString(v); return ok }),
		"mapping":   is(func(v jinja.Value) bool { return v.IsDict() && kindOf(v) == "" }),
		"iterable": is(func(v jinja.Value) bool {
			return v.IsList() || v.IsDict() && kindOf(v) == "" || v.IsString() || v.IsUndefined()
		}),
		"sequence": is(func(v jinja.Value) bool {
			k := kindOf(v)
			return v.IsList() && isSequence(k) || v.IsDict() && k == "" || v.IsString() || v.IsUndefined()
		}),
		"callable": is(jinja.Value.IsCallable),
		"escaped":  is(isMarkup),
		"filter": is(func(v jinja.Value) bool {
			s, ok := asString(v)
			return ok && filters[s] != nil
		}),
		"test": is(func(v jinja.Value) bool {
			s, ok := asString(v)
			return ok && tests[s] != nil
		}),
		"odd":  is(func(v jinja.Value) bool { return toInt(v)%2 != 0 }),
		"even": is(func(v jinja.Value) bool { return toInt(v)%2 == 0 }),
		"lower": is(func(v jinja.Value) bool {
			s := pyStr(v)
			return s != strings.ToUpper(s) && s == strings.ToLower(s)
		}),
		"upper": is(func(v jinja.Value) bool {
			s := pyStr(v)
			return s != strings.ToLower(s) && s == strings.ToUpper(s)
		}),
		"eq": eq, "equalto": eq,
		"ne": ne,
		"lt": cmpTest("lt", func(c int) bool { return c < 0 }), "lessthan": cmpTest("lt", func(c int) bool { return c < 0 }),
		"le": cmpTest("le", func(c int) bool { return c <= 0 }),
		"gt": cmpTest("gt", func(c int) bool { return c > 0 }), "greaterthan": cmpTest("gt", func(c int) bool { return c > 0 }),
		"ge": cmpTest("ge", func(c int) bool { return c >= 0 }),
		"in": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) < 2 {
				return jinja.Undefined(), fmt.Errorf("TypeError: test in needs an argument")
			}
			ok, err := pyContains(args[1], args[0])
			return jinja.NewBool(ok), err
		},
		"sameas": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) < 2 {
				return jinja.Undefined(), fmt.Errorf("TypeError: test sameas needs an argument")
			}
			return jinja.NewBool(sameAs(args[0], args[1])), nil
		},
		"divisibleby": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) < 2 || toInt(args[1]) == 0 {
				return jinja.Undefined(), fmt.Errorf("ZeroDivisionError: divisibleby needs a non-zero argument")
			}
			return jinja.NewBool(toInt(args[0])%toInt(args[1]) == 0), nil
		},
	}
}

// sameAs approximates Python's "is": singletons and small scalars by
// value, containers by identity.
func sameAs(a, b jinja.Value) bool {
	switch {
	case a.IsList() && b.IsList():
		return a.AsList() == b.AsList()
	case a.IsDict() && b.IsDict():
		return a.AsDict() == b.AsDict()
	case a.IsNone(), a.IsBool(), a.IsUndefined():
		return a.IsNone() && b.IsNone() || a.IsBool() && b.IsBool() && a.AsBool() == b.AsBool() ||
			a.IsUndefined() && b.IsUndefined()
	}
	return pyTypeName(a) == pyTypeName(b) && pyEqual(a, b)
}

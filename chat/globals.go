package chat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ardanlabs/jinja"
)

// staticGlobals holds the functions compiled templates call (see
// compile.go) and the globals whose library versions differ from
// transformers'. Built on first use: filters and tests are filled by init
// functions, which run after package-level variables are initialized.
var staticGlobals = sync.OnceValue(func() map[string]jinja.Value {
	g := map[string]jinja.Value{}
	add := func(name string, f fn) { g[name] = jinja.NewCallable(name, f) }
	for name, f := range filters {
		if markupFilters[name] {
			add(filterPrefix+name, f)
			continue
		}
		add(filterPrefix+name, plainArgs(f))
	}
	for name, t := range tests {
		if name == "string" || name == "escaped" {
			add(testPrefix+name, t)
			continue
		}
		add(testPrefix+name, plainArgs(t))
	}
	add(fnPrint, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewString(pyStr(a[0])), nil
	})
	add(fnGetattr, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return getattr(a[0], a[1].AsString(), hintArg(a, 2))
	})
	add(fnGetitem, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return getitem(a[0], a[1], hintArg(a, 2))
	})
	add(fnCallattr, func(a []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		return callattr(a[0], a[1].AsString(), a[2:], kw)
	})
	add(fnSlice, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return slice(a[0], a[1], a[2], a[3])
	})
	add(fnCmp, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return compareChain(a) })
	add(fnConcat, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return concat(a), nil })
	add(fnTuple, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return newTuple(slices.Clone(a)), nil
	})
	add(fnFloat, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return parseFloatLiteral(a[0].AsString())
	})
	add(fnDict, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return dictDisplay(a) })
	add(fnIter, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return iterable(a[0]) })
	add(fnNeg, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return neg(a[0]) })
	add(fnPos, func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return pos(a[0]) })
	add(binops["+"], func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return add2(a, addValues) })
	add(binops["*"], func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return add2(a, mul) })
	add(binops["%"], func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) { return add2(a, mod) })
	for _, op := range []string{"-", "/", "//", "**"} {
		add(binops[op], func(a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return arith(op, a[0], a[1])
		})
	}
	add("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 {
			msg = pyStr(args[0])
		}
		return jinja.Undefined(), &TemplateError{Message: msg}
	})
	add("namespace", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		// jinja2's namespace accepts an initial mapping as well as keywords.
		ns, err := newDict(args, kwargs)
		if err != nil {
			return ns, err
		}
		return markNamespace(ns), nil
	})
	add("dict", newDict)
	add("range", pyRange)
	return g
})

// addValues is add with the signature add2 wants.
func addValues(a, b jinja.Value) (jinja.Value, error) { return add(a, b) }

func add2(a []jinja.Value, f func(a, b jinja.Value) (jinja.Value, error)) (jinja.Value, error) {
	return f(a[0], a[1])
}

func hintArg(a []jinja.Value, i int) string {
	if i < len(a) && a[i].IsString() {
		return a[i].AsString()
	}
	return ""
}

// plainArgs passes Markup arguments to f as plain strings.
func plainArgs(f fn) fn {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		for i, a := range args {
			args[i] = plain(a)
		}
		return f(args, kwargs)
	}
}

// newDict is Python's dict(mapping_or_pairs, **kwargs). Keyword order is
// not kept (the library passes keywords as a map), so they are sorted;
// compile.go turns keyword-only calls into ordered displays.
func newDict(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	d := jinja.NewDict()
	if len(args) > 1 {
		return d, fmt.Errorf("TypeError: dict expected at most 1 argument, got %d", len(args))
	}
	if len(args) == 1 {
		src := args[0]
		switch {
		case src.IsDict():
			for _, k := range src.AsDict().Keys {
				d.AsDict().Set(k, src.AsDict().Data[k])
			}
		case src.IsList():
			for _, p := range src.AsList().Items {
				if !p.IsList() || p.AsList().Len() != 2 {
					return d, fmt.Errorf("ValueError: dictionary update sequence element has wrong length")
				}
				k, err := dictKey(p.AsList().Items[0])
				if err != nil {
					return d, err
				}
				d.AsDict().Set(k, p.AsList().Items[1])
			}
		case !src.IsUndefined():
			return d, fmt.Errorf("TypeError: '%s' object is not iterable", pyTypeName(src))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kwargs)) {
		d.AsDict().Set(k, kwargs[k])
	}
	return d, nil
}

// TemplateError is the error a template raised with raise_exception.
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "TemplateError: " + e.Message }

// maxMacroDepth bounds macro nesting. jinja2 spends several Python frames
// per macro call, so its recursion limit of 1000 frames is reached well
// before this.
const maxMacroDepth = 500

// usedGlobals lists the global functions compiled source refers to.
func usedGlobals(src string) []string {
	static := staticGlobals()
	seen := map[string]bool{}
	var names []string
	for i := 0; i < len(src); {
		if !isNameStart(src[i]) || i > 0 && isIdentByte(src[i-1]) {
			i++
			continue
		}
		j := i
		for j < len(src) && isIdentByte(src[j]) {
			j++
		}
		name := src[i:j]
		i = j
		if _, ok := static[name]; (ok || name == fnEnter || name == fnLeave || name == "strftime_now") && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// addGlobals adds the named callables to a render's data. A variable of
// the same name passed by the caller wins, as render arguments shadow
// globals in jinja2, except for our own siskin_ functions.
func addGlobals(data map[string]jinja.Value, names []string, now func() time.Time) {
	static := staticGlobals()
	depth := 0 // macro nesting of this render
	for _, k := range names {
		if _, taken := data[k]; taken && !strings.HasPrefix(k, "siskin_") {
			continue
		}
		switch k {
		case fnEnter:
			data[k] = jinja.NewCallable(k, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
				depth++
				if depth > maxMacroDepth {
					return jinja.Undefined(), fmt.Errorf("RecursionError: macros nested more than %d deep", maxMacroDepth)
				}
				return jinja.NewString(""), nil
			})
		case fnLeave:
			data[k] = jinja.NewCallable(k, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
				depth--
				return jinja.NewString(""), nil
			})
		case "strftime_now":
			data[k] = jinja.NewCallable(k, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
				if len(args) == 0 {
					return jinja.Undefined(), fmt.Errorf("TypeError: strftime_now() needs a format string")
				}
				f, ok := asString(args[0])
				if !ok {
					return jinja.Undefined(), fmt.Errorf("TypeError: strftime() argument 1 must be str, not %s", pyTypeName(args[0]))
				}
				return jinja.NewString(strftime(now(), f)), nil
			})
		default:
			data[k] = static[k]
		}
	}
}
